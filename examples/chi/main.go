// Command chi is the demo shop on chi: a router with its own middleware
// (request ids, panic recovery), and the Median endpoint mounted inside its
// /api sub-router.
//
//	MEDIAN_KEY='<your key>' go run ./examples/chi
//
// It answers Median at /api/median and listens on $HOST:$PORT (PORT 8080 by
// default). Without MEDIAN_KEY it listens on 127.0.0.1 and generates a
// development key, printed with a warning; on any other address a missing
// key is answered 500 missing_secret (never fail open).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/median-go/median/chimedian"
	"github.com/median-go/median/examples/catalog"
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

// newApp builds the shop: a chi router with its middleware and ordinary
// routes, and Median mounted in the /api sub-router beside them.
func newApp(demo *catalog.Demo) chi.Router {
	r := chi.NewRouter()
	r.Use(middleware.RequestID, middleware.Recoverer)

	r.Get("/healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})

	r.Route("/api", func(r chi.Router) {
		r.Get("/orders/{id}", func(w http.ResponseWriter, r *http.Request) {
			id := chi.URLParam(r, "id")
			status, err := demo.Orders.Status(r.Context(), id)
			if err != nil {
				writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
				return
			}
			writeJSON(w, http.StatusOK, map[string]string{"orderId": id, "status": status})
		})

		// GET, POST and the contract's 405 for every other method, all
		// answered by the core, behind the router's own middleware.
		chimedian.Mount(r, "/median", demo.Handler)
	})
	return r
}

// writeJSON writes v as the JSON answer of an ordinary route.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
