package main

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/median-go/median/protocol"
	"github.com/median-go/median/recipes/internal/recipetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// serve runs newServer around h on a free port of 127.0.0.1 and returns
// its base URL; the server stops when t ends.
func serve(t testing.TB, h *protocol.Handler) string {
	srv := newServer("127.0.0.1:0", h)
	u, err := srv.Endpoint() // listens
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Start(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Error(err)
		}
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return "http://" + u.Host
}

// start serves the recipe around the catalog's endpoint built with key.
func start(t testing.TB, key string) (string, error) {
	h, err := recipetest.CatalogHandler(t, key)
	if h == nil {
		return "", err
	}
	return serve(t, h), err
}

// TestConformance runs the whole suite against the recipe over the network.
func TestConformance(t *testing.T) {
	recipetest.Run(t, start, recipetest.CatalogSamples())
}

// TestTrapsAvoided checks Kratos's traps: both paths reach the Handler
// (its router's StrictSlash answers a 301 to a route registered with
// Handle), and the tools' deadline is not Kratos's Timeout (1 s by
// default).
func TestTrapsAvoided(t *testing.T) {
	base, err := start(t, recipetest.Key)
	if err != nil {
		t.Fatal(err)
	}
	recipetest.CheckDiagnostics(t, base+"/api/median")
	recipetest.CheckDiagnostics(t, base+"/api/median/")
	recipetest.CheckBodyLimit(t, base+"/api/median")
	recipetest.CheckDeadline(t, serve(t, recipetest.DeadlineHandler(t))+"/api/median", 10*time.Second)
}
