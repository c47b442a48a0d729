// Command beego serves the demo catalog's Median endpoint on Beego v2: the
// recipe of docs/MOUNTING.md#beego, built and run against the whole
// conformance suite by its test.
//
//	MEDIAN_KEY='<your key>' go run ./beego
//
// It answers Median at /api/median and listens on $HOST:$PORT (PORT 8080 by
// default), with the key handling of examples/gin.
package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/beego/beego/v2/server/web"

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

// run builds the demo's Handler and serves it on Beego.
func run(logger *slog.Logger) error {
	demo, err := catalog.New(catalog.FromEnv(logger))
	if err != nil {
		return fmt.Errorf("cannot start: %w", err)
	}
	defer demo.Close()

	logger.Info("serving", "addr", demo.Addr, "median", "/api/median", "key", demo.Fingerprint)
	newApp(demo.Handler).Run(demo.Addr)
	return nil
}

// newApp builds the Beego app with h answering /api/median.
func newApp(h *protocol.Handler) *web.HttpServer {
	app := web.NewHttpSever()
	app.Handler("/api/median", h) // every method; /api/median/ too
	return app
}
