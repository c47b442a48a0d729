package main

import (
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"
	"go.uber.org/goleak"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/examples/catalog"
	"github.com/median-go/median/examples/catalog/catalogtest"
)

func TestMain(m *testing.M) {
	gin.SetMode(gin.TestMode)
	goleak.VerifyTestMain(m)
}

// TestExample drives the app in memory: the catalog, the ordinary routes
// and the conformance suite (catalogtest.RunAll).
func TestExample(t *testing.T) {
	catalogtest.RunAll(t, func(d *catalog.Demo) func(*http.Request) (*http.Response, error) {
		return conformance.HandlerTarget(newApp(d), catalogtest.MountPath, catalogtest.Key).Do
	})
}
