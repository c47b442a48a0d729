package adapters_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/app/server"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/hertzmedian"
	"github.com/median-go/median/internal/testonly/adapters"
	"github.com/median-go/median/internal/testonly/adaptertest"
	"github.com/median-go/median/internal/testonly/fixture"
)

// testKey is the Median key the conformance runs' endpoints use.
const testKey = "mk_test_0123456789abcdef0123456789abcdef"

// TestConformance runs the whole conformance suite, the table of the
// contract's cases, against the core on a net/http ServeMux (mounted with
// (*protocol.Handler).Mount) and against every adapter, each mounted at
// adaptertest.Path on a group or sub-router beside another route and served
// on a loopback port by its own server (fasthttp for fiber, Hertz's own for
// Hertz, net/http in front of lambdatest's stand-in for each Lambda
// service); and against Hertz in process too, through hertzmedian.Do (Hertz's
// test helper, ut.PerformRequest).
func TestConformance(t *testing.T) {
	for _, a := range append(append([]adaptertest.Adapter{adapters.NetHTTP}, adapters.All()...), adapters.Lambda()...) {
		t.Run(a.Name, func(t *testing.T) {
			serve := func(key string) func(*http.Request) (*http.Response, error) {
				return adaptertest.Start(t, a.Endpoint(fixture.Handler(t, key, a.MaxBodyBytes))).Forward
			}
			target := conformance.Target{Do: serve(testKey), URL: "http://example.test" + adaptertest.Path, Key: testKey, Replay: true, Tools: fixture.Samples(), MaxBodyBytes: a.MaxBodyBytes}
			target.BuildWithKey = func(key string) (func(*http.Request) (*http.Response, error), error) { return serve(key), nil }
			if a.LastHeaderLine != "" {
				target.Skip = []string{"signature/repeated-header", "signature/repeated-header-two-t"}
			}
			conformance.Run(t, target)
		})
	}
}

// TestConformanceHertzInProcess runs the whole suite against a Hertz
// engine through hertzmedian.Do, with no listener: Hertz's own test
// helper, where a request has no connection.
func TestConformanceHertzInProcess(t *testing.T) {
	build := func(key string) func(*http.Request) (*http.Response, error) {
		hz := server.New(server.WithDisablePrintRoute(true))
		hz.GET(adapters.HealthPath, func(_ context.Context, c *app.RequestContext) { c.String(http.StatusOK, "ok") })
		hertzmedian.Mount(hz.Group("/api"), "/median", fixture.Handler(t, key))
		return hertzmedian.Do(hz.Engine)
	}
	target := conformance.Target{Do: build(testKey), URL: "http://example.test" + adaptertest.Path, Key: testKey, Replay: true, Tools: fixture.Samples()}
	target.BuildWithKey = func(key string) (func(*http.Request) (*http.Response, error), error) { return build(key), nil }
	conformance.Run(t, target)
}
