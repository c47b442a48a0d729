// Command kratos serves the demo catalog's Median endpoint on a Kratos HTTP
// server: the recipe of docs/MOUNTING.md#kratos, built and run against the
// whole conformance suite by its test.
//
//	MEDIAN_KEY='<your key>' go run ./kratos
//
// It answers Median at /api/median and listens on $HOST:$PORT (PORT 8080 by
// default), with the key handling of examples/gin.
package main

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/go-kratos/kratos/v2"
	khttp "github.com/go-kratos/kratos/v2/transport/http"

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

// run builds the demo's Handler and serves it on Kratos until SIGINT or
// SIGTERM.
func run(logger *slog.Logger) error {
	demo, err := catalog.New(catalog.FromEnv(logger))
	if err != nil {
		return fmt.Errorf("cannot start: %w", err)
	}
	defer demo.Close()

	logger.Info("serving", "addr", demo.Addr, "median", "/api/median", "key", demo.Fingerprint)
	app := kratos.New(kratos.Name("shop"), kratos.Server(newServer(demo.Addr, demo.Handler)))
	return app.Run()
}

// newServer builds the Kratos HTTP server listening on addr, with h
// answering /api/median.
func newServer(addr string, h *protocol.Handler) *khttp.Server {
	srv := khttp.NewServer(
		khttp.Address(addr),
		khttp.Timeout(30*time.Second), // above every tool's timeout (1 s by default)
	)
	srv.HandlePrefix("/api/median", h) // every method, both paths, no redirect
	return srv
}
