package main

import (
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
	app, berr := newApp(h)
	if berr != nil {
		t.Fatalf("the Iris app did not build: %v", berr)
	}
	return recipetest.ServeHTTP(t, app), err
}

// TestConformance runs the whole suite against the app over the network.
func TestConformance(t *testing.T) {
	recipetest.Run(t, start, recipetest.CatalogSamples())
}

// TestTrapsAvoided checks the recipe against Iris's traps: the manifest on
// GET on both paths is the Handler's (no 307 from Iris's path correction),
// and the endpoint sits outside the auth middleware that still guards the
// app's own /api routes.
func TestTrapsAvoided(t *testing.T) {
	base, err := start(t, recipetest.Key)
	if err != nil {
		t.Fatal(err)
	}
	recipetest.CheckManifest(t, base)
	recipetest.CheckGuarded(t, base)
}
