package main

import (
	"net/http"
	"testing"

	"go.uber.org/goleak"

	"github.com/median-go/median/examples/catalog"
	"github.com/median-go/median/examples/catalog/catalogtest"
	"github.com/median-go/median/hertzmedian"
)

// Hertz keeps a process-wide clock goroutine once a server has started.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/cloudwego/hertz/pkg/protocol.UpdateServerDate.func1"))
}

// TestExample drives the app in memory through hertzmedian.Do (Hertz's
// own test helper): the catalog, the ordinary routes and the conformance
// suite (catalogtest.RunAll).
func TestExample(t *testing.T) {
	catalogtest.RunAll(t, func(d *catalog.Demo) func(*http.Request) (*http.Response, error) {
		return hertzmedian.Do(newApp(d).Engine)
	})
}
