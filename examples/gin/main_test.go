package main

import (
	"io"
	"log/slog"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/examples/catalog"
	"github.com/median-go/median/examples/catalog/catalogtest"
)

func TestMain(m *testing.M) {
	gin.SetMode(gin.TestMode)
	goleak.VerifyTestMain(m)
}

func TestCatalog(t *testing.T) {
	target := conformance.HandlerTarget(newApp(catalogtest.NewDemo(t)), catalogtest.MountPath, catalogtest.Key)
	catalogtest.Run(t, target)
}

func TestOrdinaryRoutes(t *testing.T) {
	catalogtest.RunRoutes(t, conformance.HandlerDo(newApp(catalogtest.NewDemo(t))), "http://example.test")
}

func TestConformance(t *testing.T) {
	target := conformance.HandlerTarget(newApp(catalogtest.NewDemo(t)), catalogtest.MountPath, catalogtest.Key)
	target.Tools = catalogtest.Samples()
	target.BuildWithKey = func(key string) (conformance.DoFunc, error) {
		demo, err := catalog.New(catalog.Options{Key: key, NoDevKey: true, Logger: slog.New(slog.DiscardHandler), Warnings: io.Discard})
		require.NoError(t, err)
		return conformance.HandlerDo(newApp(demo)), nil
	}
	conformance.Run(t, target)
}
