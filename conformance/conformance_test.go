package conformance_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/conformance"
)

func TestRunNetHTTP(t *testing.T) {
	conformance.Run(t, fixtureTarget(t, mux(newHandler(t, testKey, nil))))
}

// TestCheckCoreIsGreen: against the core with the fixture tools and every
// field of the target given, every case applies and passes (but those
// Target.Skip excludes).
func TestCheckCoreIsGreen(t *testing.T) {
	target := fixtureTarget(t, mux(newHandler(t, testKey, nil)))
	rep, err := conformance.Check(t.Context(), target, conformance.Options{})
	require.NoError(t, err)
	require.Len(t, rep.Verdicts, len(conformance.Cases()))
	for _, r := range rep.Verdicts {
		want := "pass"
		if slices.Contains(target.Skip, r.ID) {
			want = "skip"
		}
		assert.Equal(t, want, r.Status, "%s", r)
	}
	assert.NoError(t, rep.Err())
}
