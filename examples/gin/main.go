// Command gin is the demo shop on gin: an existing app with its own routes,
// and the Median endpoint added to its /api route group with one call.
//
//	MEDIAN_KEY='<your key>' go run ./examples/gin
//
// It answers Median at /api/median and listens on $HOST:$PORT (PORT 8080 by
// default). Without MEDIAN_KEY it listens on 127.0.0.1 and generates a
// development key, printed with a warning; on any other address a missing
// key is answered 500 missing_secret (never fail open).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/gin-gonic/gin"

	"github.com/median-go/median/examples/catalog"
	"github.com/median-go/median/ginmedian"
)

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(logger); err != nil {
		logger.Error("the demo stopped", "error", err)
		os.Exit(1)
	}
}

// run builds the demo, serves it until SIGINT or SIGTERM, and closes it.
func run(logger *slog.Logger) error {
	demo, err := catalog.New(catalog.FromEnv(logger))
	if err != nil {
		return fmt.Errorf("cannot start: %w", err)
	}
	defer demo.Close()

	logger.Info("serving", "addr", demo.Addr, "median", "/api/median", "key", demo.Fingerprint)
	if err := catalog.Serve(context.Background(), demo.Addr, newApp(demo)); err != nil {
		return fmt.Errorf("server stopped: %w", err)
	}
	return nil
}

// newApp builds the shop: its ordinary routes, and Median mounted on the
// /api group beside them.
func newApp(demo *catalog.Demo) *gin.Engine {
	r := gin.New()
	r.Use(gin.Recovery())

	r.GET("/healthz", func(c *gin.Context) {
		c.JSON(http.StatusOK, gin.H{"status": "ok"})
	})

	api := r.Group("/api")
	api.GET("/orders/:id", func(c *gin.Context) {
		id := c.Param("id")
		status, err := demo.Orders.Status(c.Request.Context(), id)
		if err != nil {
			c.JSON(http.StatusNotFound, gin.H{"error": err.Error()})
			return
		}
		c.JSON(http.StatusOK, gin.H{"orderId": id, "status": status})
	})

	// One call: GET (the manifest), POST (the calls) and the contract's 405
	// for every other method, on /api/median and /api/median/, all answered
	// by the core.
	ginmedian.Mount(api, "/median", demo.Handler)
	return r
}
