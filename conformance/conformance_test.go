package conformance_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/conformance"
)

func TestRunNetHTTP(t *testing.T) {
	conformance.Run(t, fixtureTarget(t, mux(newHandler(t, testKey, nil))))
}

func TestCheckCoreIsGreen(t *testing.T) {
	rep, err := conformance.Check(t.Context(), fixtureTarget(t, mux(newHandler(t, testKey, nil))), conformance.Options{})
	require.NoError(t, err)
	require.Len(t, rep.Results, len(conformance.Cases()))
	for _, r := range rep.Results {
		assert.Equal(t, conformance.StatusPass, r.Status, "%s", r)
	}
	assert.NoError(t, rep.Err())
}
