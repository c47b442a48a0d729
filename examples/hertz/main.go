// Command hertz is the demo shop on CloudWeGo Hertz: its own routes, and
// the Median endpoint mounted on its /api group, with the server's
// timeouts and body limit set as Hertz options.
//
//	MEDIAN_KEY='<your key>' go run ./examples/hertz
//
// It answers Median at /api/median and listens on $HOST:$PORT (PORT 8080 by
// default). Without MEDIAN_KEY it listens on 127.0.0.1 and generates a
// development key, printed with a warning; on any other address a missing
// key is answered 500 missing_secret (never fail open).
package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/app/middlewares/server/recovery"
	"github.com/cloudwego/hertz/pkg/app/server"
	"github.com/cloudwego/hertz/pkg/common/config"
	"github.com/cloudwego/hertz/pkg/common/utils"

	"github.com/median-go/median/examples/catalog"
	"github.com/median-go/median/hertzmedian"
)

// bodyLimit is Hertz's own body limit (its default). It must stay above the
// core's limit (Config.MaxBodyBytes, 1 MiB by default): Hertz reads the
// whole body first and answers a larger one with its own plain-text 413.
const bodyLimit = 4 << 20

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	demo, err := catalog.New(catalog.FromEnv(logger))
	if err != nil {
		logger.Error("cannot start", "error", err)
		os.Exit(1)
	}
	defer demo.Close()

	hz := newApp(demo, server.WithHostPorts(demo.Addr))
	logger.Info("serving", "addr", demo.Addr, "median", "/api/median", "key", demo.Fingerprint)
	if err := catalog.Run(context.Background(), hz.Run, hz.Shutdown); err != nil {
		logger.Error("server stopped", "error", err)
		os.Exit(1)
	}
}

// newApp builds the shop on a Hertz server with timeouts and a body limit
// (and opts): its ordinary routes, and Median mounted on the /api group
// beside them.
func newApp(demo *catalog.Demo, opts ...config.Option) *server.Hertz {
	hz := server.New(append([]config.Option{
		server.WithReadTimeout(catalog.ReadTimeout),
		server.WithWriteTimeout(catalog.WriteTimeout),
		server.WithIdleTimeout(catalog.IdleTimeout),
		server.WithMaxRequestBodySize(bodyLimit),
		server.WithExitWaitTime(catalog.ShutdownTimeout),
		server.WithDisablePrintRoute(true),
	}, opts...)...)
	hz.Use(recovery.Recovery())

	hz.GET("/healthz", func(_ context.Context, c *app.RequestContext) {
		c.JSON(http.StatusOK, utils.H{"status": "ok"})
	})

	api := hz.Group("/api")
	api.GET("/orders/:id", func(ctx context.Context, c *app.RequestContext) {
		id := c.Param("id")
		status, err := demo.Orders.Status(ctx, id)
		if err != nil {
			c.JSON(http.StatusNotFound, utils.H{"error": err.Error()})
			return
		}
		c.JSON(http.StatusOK, utils.H{"orderId": id, "status": status})
	})

	// GET, POST and the contract's 405 for every other method, on
	// /api/median and /api/median/, all answered by the core.
	hertzmedian.Mount(api, "/median", demo.Handler)
	return hz
}
