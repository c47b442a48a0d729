package main

import (
	"net/http"
	"testing"

	"go.uber.org/goleak"

	"github.com/median-go/median/recipes/internal/recipetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start serves the recipe's app around the catalog's endpoint built with key.
func start(t testing.TB, key string) (string, error) {
	h, err := recipetest.CatalogHandler(t, key)
	if h == nil {
		return "", err
	}
	return recipetest.ServeHTTP(t, newApp(h)), err
}

// TestConformance runs the whole suite against the app over the network.
func TestConformance(t *testing.T) {
	recipetest.Run(t, start, recipetest.CatalogSamples())
}

// TestTrapsAvoided checks the recipe against gorilla/mux's traps: the
// manifest on GET and the trailing-slash path are the Handler's (no
// .Methods("POST"), no StrictSlash 301), and the endpoint sits outside the
// auth middleware that still guards the app's own /api routes.
func TestTrapsAvoided(t *testing.T) {
	base, err := start(t, recipetest.Key)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/api/median", "/api/median/"} {
		status, hdr, body := recipetest.Get(t, base+path)
		if status != http.StatusOK || hdr.Get("Content-Type") != "application/json" {
			t.Errorf("GET %s: got %d %s %s, want the manifest (200 application/json)", path, status, hdr.Get("Content-Type"), body)
		}
	}
	if status, _, body := recipetest.Get(t, base+"/api/orders"); status != http.StatusUnauthorized {
		t.Errorf("GET /api/orders without a token: got %d %s, want the app's 401 (the auth middleware must still guard the app)", status, body)
	}
}
