package conformance_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/protocol"
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

// TestSuiteLeavesTheDeploymentsReadingsAlone: after a full run of the
// suite against a Handler, every request of which was a check's (its
// unsigned, stale and badly signed probes included), the report shows the
// run in its checks section only: no refusal, no tool call, no key use,
// no manifest sync and no stale skew of the deployment's (docs/PROTOCOL.md
// §10, "Checks are not traffic"). A probe whose check token is forged
// counts as the refusal it is.
func TestSuiteLeavesTheDeploymentsReadingsAlone(t *testing.T) {
	h := newHandler(t, testKey, nil)
	target := fixtureTarget(t, mux(h))
	rep, err := conformance.Check(t.Context(), target, conformance.Options{})
	require.NoError(t, err)
	require.NoError(t, rep.Err())

	r := h.Report(t.Context())
	assert.Empty(t, r.Refused, "no refusal outside the checks section")
	for name, tool := range r.Tools {
		assert.Zero(t, tool.Calls, "tool %s", name)
		assert.Zero(t, tool.InvalidInput, "tool %s", name)
		assert.Zero(t, tool.LastFailure.At, "tool %s", name)
	}
	for _, k := range r.Keys {
		assert.Zero(t, k.Verified, "key %s", k.Fingerprint)
	}
	assert.Zero(t, r.Manifest.LastServed)
	assert.Greater(t, r.Checks.Requests, int64(len(rep.Verdicts)), "the run is counted, apart")
	assert.Positive(t, r.Checks.Calls)
	for _, code := range []protocol.Code{protocol.CodeMissingSignature, protocol.CodeMalformedSignature, protocol.CodeStaleTimestamp,
		protocol.CodeInvalidSignature, protocol.CodeInvalidBody, protocol.CodeInvalidInput, protocol.CodeMethodNotAllowed, protocol.CodeUnknownTool} {
		assert.Positive(t, r.Checks.Refused[code], "the suite's %s probes are the checks'", code)
	}

	// A stranger's probe with a forged token is the deployment's refusal.
	req := httptest.NewRequest(http.MethodPost, "/api/median", strings.NewReader(`{}`))
	req.Header.Set("Median-Check", fmt.Sprintf("%d.%064x", time.Now().Add(time.Minute).UnixMilli(), 0))
	h.ServeHTTP(httptest.NewRecorder(), req)
	assert.Equal(t, int64(1), h.Report(t.Context()).Refused[protocol.CodeMissingSignature].Count)
}
