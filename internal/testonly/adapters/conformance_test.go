package adapters_test

import (
	"net/http"
	"testing"

	"github.com/median-go/median/conformance"
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
// on a loopback port by its own server (fasthttp for fiber).
func TestConformance(t *testing.T) {
	for _, a := range append([]adaptertest.Adapter{adapters.NetHTTP}, adapters.All()...) {
		t.Run(a.Name, func(t *testing.T) {
			serve := func(key string) func(*http.Request) (*http.Response, error) {
				return adaptertest.Start(t, a.Endpoint(fixture.Handler(t, key))).Forward
			}
			target := conformance.Target{Do: serve(testKey), URL: "http://example.test" + adaptertest.Path, Key: testKey, Replay: true, Tools: fixture.Samples()}
			target.BuildWithKey = func(key string) (func(*http.Request) (*http.Response, error), error) { return serve(key), nil }
			conformance.Run(t, target)
		})
	}
}
