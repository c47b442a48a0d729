package adapters_test

import (
	"slices"
	"testing"

	"github.com/cloudwego/hertz/pkg/app/server"
	fiberv2 "github.com/gofiber/fiber/v2"
	fiberv3 "github.com/gofiber/fiber/v3"
	"go.uber.org/goleak"

	"github.com/median-go/median/internal/testonly/adapters"
	"github.com/median-go/median/internal/testonly/adaptertest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, append(adaptertest.FasthttpGoroutines, adaptertest.HertzGoroutines...)...)
}

// TestTable runs the shared adapter table (adaptertest.Run) against the
// core on net/http, whose answers the other adapters must match, and
// against every adapter, the fiber ones also on apps that stream request
// bodies (the core then reads the body itself up to its limit), as
// Hertz's too, and on apps
// that accept PURGE and PROPFIND (fiber.Config.RequestMethods), which
// Mount answers with the contract's 405.
func TestTable(t *testing.T) {
	table := append(append([]adaptertest.Adapter{adapters.NetHTTP}, adapters.All()...), adapters.Lambda()...)
	for _, a := range table {
		t.Run(a.Name, func(t *testing.T) { adaptertest.Run(t, a) })
	}
	for _, tc := range []struct {
		name string
		a    adaptertest.Adapter
	}{
		{"fiber streaming body", adapters.FiberWith(fiberv2.Config{StreamRequestBody: true})},
		{"fiber request methods", adapters.FiberWith(fiberv2.Config{RequestMethods: append(slices.Clone(fiberv2.DefaultMethods), "PURGE", "PROPFIND")})},
		{"fiber v3 streaming body", adapters.FiberV3With(fiberv3.Config{StreamRequestBody: true})},
		{"fiber v3 request methods", adapters.FiberV3With(fiberv3.Config{RequestMethods: append(slices.Clone(fiberv3.DefaultMethods), "PURGE", "PROPFIND")})},
		{"hertz streaming body", adapters.HertzWith(server.WithStreamBody(true))},
	} {
		t.Run(tc.name, func(t *testing.T) { adaptertest.Run(t, tc.a) })
	}
}
