package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/median-go/median/recipes/internal/recipetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start serves the recipe around the catalog's endpoint built with key, as
// app.Run does: its router, initialised, on a listener on 127.0.0.1.
func start(t testing.TB, key string) (string, error) {
	h, err := recipetest.CatalogHandler(t, key)
	if h == nil {
		return "", err
	}
	app := newApp(h)
	app.Handlers.Init()
	return recipetest.ServeHTTP(t, app.Handlers), err
}

// TestConformance runs the whole suite against the recipe over the network.
func TestConformance(t *testing.T) {
	recipetest.Run(t, start, recipetest.CatalogSamples())
}

// TestTrapsAvoided checks Beego's traps: both paths reach the Handler,
// and bodies up to its limit and one byte over too (Beego's MaxMemory,
// with CopyRequestBody, answers its own 413 when set at or below it).
func TestTrapsAvoided(t *testing.T) {
	base, err := start(t, recipetest.Key)
	if err != nil {
		t.Fatal(err)
	}
	recipetest.CheckDiagnostics(t, base+"/api/median")
	recipetest.CheckDiagnostics(t, base+"/api/median/")
	recipetest.CheckBodyLimit(t, base+"/api/median")
}
