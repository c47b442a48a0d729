package lambdamedian_test

import (
	"net/http"
	"testing"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/internal/testonly/fixture"
	"github.com/median-go/median/internal/testonly/lambdatest"
	"github.com/median-go/median/lambdamedian"
)

// testKey is the Median key the conformance runs' endpoints use.
const testKey = "mk_test_0123456789abcdef0123456789abcdef"

// TestConformance runs the whole conformance suite through each kind of
// event, the function invoked in process as that service invokes it
// (lambdatest.Function), key cases included.
func TestConformance(t *testing.T) {
	for _, kind := range lambdatest.Kinds() {
		t.Run(kind.String(), func(t *testing.T) {
			build := func(key string) func(*http.Request) (*http.Response, error) {
				return lambdatest.Function{Kind: kind, Invoke: lambdamedian.New(fixture.Handler(t, key)).Invoke}.Do
			}
			target := conformance.Target{Do: build(testKey), URL: "https://abcdefghij.lambda-url.us-east-1.on.aws/median", Key: testKey, Replay: true, Tools: fixture.Samples()}
			target.BuildWithKey = func(key string) (func(*http.Request) (*http.Response, error), error) { return build(key), nil }
			conformance.Run(t, target)
		})
	}
}
