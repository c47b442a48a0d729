// Command iris is the demo shop on Iris v12: an app with a party behind its
// auth middleware, and the Median endpoint registered on the application
// itself, its trailing-slash path served without Iris's redirect
// (docs/MOUNTING.md, "Iris").
//
//	MEDIAN_KEY='<your key>' go run ./iris
//
// It answers Median at /api/median and listens on $HOST:$PORT (PORT 8080 by
// default); without MEDIAN_KEY it listens on 127.0.0.1 with a generated
// development key, as the examples do (examples/catalog).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/kataras/iris/v12"

	"github.com/median-go/median/examples/catalog"
	"github.com/median-go/median/protocol"
)

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(logger); err != nil {
		logger.Error("the recipe stopped", "error", err)
		os.Exit(1)
	}
}

// run builds the endpoint, serves the app until SIGINT or SIGTERM, and
// closes it.
func run(logger *slog.Logger) error {
	demo, err := catalog.New(catalog.FromEnv(logger))
	if err != nil {
		return fmt.Errorf("cannot start: %w", err)
	}
	defer demo.Close()

	app, err := newApp(demo.Handler)
	if err != nil {
		return err
	}
	logger.Info("serving", "addr", demo.Addr, "median", "/api/median", "key", demo.Fingerprint)
	return catalog.Serve(context.Background(), demo.Addr, app)
}

// newApp builds the app, ready to serve: the Median endpoint h for every
// method on both of its paths, on the application (outside the /api party's
// auth middleware).
func newApp(h *protocol.Handler) (*iris.Application, error) {
	app := iris.New()
	app.Configure(iris.WithoutPathCorrectionRedirection) // /api/median/ served as /api/median, no 301/307
	app.Any("/api/median", iris.FromStd(h))              // one route: Iris folds the trailing slash

	api := app.Party("/api", authMiddleware) // the app's routes, behind its login check
	api.Get("/orders", listOrders)
	return app, app.Build()
}

// authMiddleware stands for the app's own login check: it answers 401 in
// plain text to a request without a bearer token, as such checks do.
func authMiddleware(ctx iris.Context) {
	if ctx.GetHeader("Authorization") == "" {
		ctx.StopWithText(iris.StatusUnauthorized, "sign in first")
		return
	}
	ctx.Next()
}

// listOrders stands for the app's ordinary routes.
func listOrders(ctx iris.Context) {
	_ = ctx.JSON([]string{})
}
