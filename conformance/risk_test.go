package conformance_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/internal/testonly/fixture"
	"github.com/median-go/median/protocol"
)

// riskResults runs the risk-floor cases against h with samples.
func riskResults(t *testing.T, h *protocol.Handler, samples []conformance.ToolSample, allowSideEffects bool) map[string]conformance.Verdict {
	t.Helper()
	target := conformance.HandlerTarget(mux(h), mountPath, testKey)
	target.Tools = samples
	target.AllowSideEffects = allowSideEffects
	rep, err := conformance.Check(t.Context(), target, conformance.Options{Run: "^risk/"})
	require.NoError(t, err)
	out := map[string]conformance.Verdict{}
	for _, r := range rep.Verdicts {
		out[r.ID] = r
	}
	require.Len(t, out, 4)
	return out
}

// onlyTools returns the fixture tools named.
func onlyTools(names ...string) []*protocol.Tool {
	var out []*protocol.Tool
	for i, tool := range fixture.Tools() {
		for _, n := range names {
			if fixtureNames[i] == n {
				out = append(out, tool)
			}
		}
	}
	return out
}

func TestRiskCasesApplyOnlyWhereAToolIsDeclaredAboveLow(t *testing.T) {
	// Only low tools: the floor has nothing to refuse or let through.
	h := newHandler(t, testKey, func(c *protocol.Config) { c.Tools = onlyTools("echo") })
	got := riskResults(t, h, []conformance.ToolSample{{Tool: "echo", Input: []byte(`{"message":"hi"}`)}}, false)
	for _, id := range []string{"risk/below-declared", "risk/unapproved", "risk/approved-runs"} {
		assert.Equal(t, "not_applicable", got[id].Status, "%s", got[id])
		assert.Contains(t, got[id].Message, "no tool is declared", id)
	}
	assert.Equal(t, "pass", got["risk/higher-runs"].Status, "%s", got["risk/higher-runs"])

	// A medium tool, none reviewed or high: no call needs approvedBy.
	h = newHandler(t, testKey, func(c *protocol.Config) { c.Tools = onlyTools("echo", "strict") })
	got = riskResults(t, h, nil, false)
	assert.Equal(t, "not_applicable", got["risk/unapproved"].Status)
	assert.Contains(t, got["risk/unapproved"].Message, "no tool is declared reviewed or high")
	// A tool above low but no sample of it: skipped, saying what to give.
	for _, id := range []string{"risk/below-declared", "risk/approved-runs"} {
		assert.Equal(t, "skip", got[id].Status, id)
		assert.Contains(t, got[id].Message, "for a tool declared above low (the manifest has strict)", id)
	}
	assert.Contains(t, got["risk/below-declared"].Message, "harmless should it run")
	assert.NotContains(t, got["risk/approved-runs"].Message, "harmless", "that case runs the tool")

	// Only high tools: none can be called above its risk.
	h = newHandler(t, testKey, func(c *protocol.Config) { c.Tools = onlyTools("refund") })
	got = riskResults(t, h, nil, false)
	assert.Equal(t, "not_applicable", got["risk/higher-runs"].Status)
	assert.Equal(t, "skip", got["risk/unapproved"].Status)
}

func TestRiskCasesKeepSideEffectsHeld(t *testing.T) {
	h := newHandler(t, testKey, nil)
	samples := []conformance.ToolSample{{Tool: "refund", Input: []byte(`{"orderId":"A-1"}`), SideEffects: true}}
	got := riskResults(t, h, samples, false)
	for _, id := range []string{"risk/below-declared", "risk/unapproved", "risk/approved-runs"} {
		assert.Equal(t, "skip", got[id].Status, id)
		assert.Contains(t, got[id].Message, "AllowSideEffects", id)
	}
	got = riskResults(t, h, samples, true)
	assert.Equal(t, "pass", got["risk/approved-runs"].Status, "%s", got["risk/approved-runs"])
}

func TestPanicCaseIsNotApplicableWithoutAPanickingTool(t *testing.T) {
	target := conformance.HandlerTarget(mux(newHandler(t, testKey, nil)), mountPath, testKey)
	rep, err := conformance.Check(t.Context(), target, conformance.Options{Run: "^execution/panic$"})
	require.NoError(t, err)
	assert.Equal(t, "not_applicable", rep.Verdicts[0].Status)
	assert.Contains(t, rep.Verdicts[0].Message, "needs a tool that panics")

	target.Tools = []conformance.ToolSample{{Tool: "panic", Expect: "panic", SideEffects: true}}
	rep, err = conformance.Check(t.Context(), target, conformance.Options{Run: "^execution/panic$"})
	require.NoError(t, err)
	assert.Equal(t, "skip", rep.Verdicts[0].Status, "a held sample asks for AllowSideEffects")
}
