// Command gorillamux is the demo shop on gorilla/mux: an app whose /api
// routes sit behind its own auth middleware, and the Median endpoint
// registered beside them, outside that middleware (docs/MOUNTING.md,
// "gorilla/mux").
//
//	MEDIAN_KEY='<your key>' go run ./gorillamux
//
// It answers Median at /api/median and listens on $HOST:$PORT (PORT 8080 by
// default); without MEDIAN_KEY it listens on 127.0.0.1 with a generated
// development key, as the examples do (examples/catalog).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/gorilla/mux"

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

	logger.Info("serving", "addr", demo.Addr, "median", "/api/median", "key", demo.Fingerprint)
	return catalog.Serve(context.Background(), demo.Addr, newApp(demo.Handler))
}

// newApp builds the app: the Median endpoint h on both of its paths, for
// every method, on the root router, and the /api subrouter whose routes need
// a signed-in user.
func newApp(h *protocol.Handler) *mux.Router {
	r := mux.NewRouter()
	r.Handle("/api/median", h) // every method: no .Methods(...)
	r.Handle("/api/median/", h)

	api := r.PathPrefix("/api").Subrouter() // the app's routes, behind its login check
	api.Use(authMiddleware)
	api.HandleFunc("/orders", listOrders).Methods("GET")
	return r
}

// authMiddleware stands for the app's own login check: it answers 401 in
// plain text to a request without a bearer token, as such checks do.
func authMiddleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			http.Error(w, "sign in first", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// listOrders stands for the app's ordinary routes.
func listOrders(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode([]string{})
}
