package protocol

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// riskCall returns a ToolCall body at risk, with approvedBy when not empty.
func riskCall(tool, id string, risk Risk, approvedBy string) string {
	approved := ""
	if approvedBy != "" {
		approved = fmt.Sprintf(`,"approvedBy":%q`, approvedBy)
	}
	return fmt.Sprintf(`{"tool":%q,"toolCallId":%q,"input":{},"context":{"conversationId":"c","risk":%q,"visitor":{"verified":true,"externalId":"u"}%s}}`, tool, id, risk, approved)
}

// riskTool is a tool declared at risk that counts its runs.
func riskTool(name string, risk Risk, runs *int64Counter) *Tool {
	return NewTool(name, risk, "Test tool.", func(ctx context.Context, c ToolCall[noInput]) (string, error) {
		runs.add()
		return "ran", nil
	})
}

// TestRiskFloor: PROTOCOL.md §9.
func TestRiskFloor(t *testing.T) {
	runs := &int64Counter{}
	obs := &observed{}
	tools := []*Tool{riskTool("low_t", RiskLow, runs), riskTool("medium_t", RiskMedium, runs), riskTool("reviewed_t", RiskReviewed, runs), riskTool("high_t", RiskHigh, runs)}
	h, logs := newHandler(t, Config{Tools: tools, Observer: obs.add})
	tests := []struct {
		tool     string
		risk     Risk
		approved string
		refused  bool
	}{
		{"high_t", RiskLow, "A teammate", true},
		{"high_t", RiskMedium, "A teammate", true},
		{"high_t", RiskReviewed, "The reviewer", true},
		{"high_t", RiskHigh, "", true},
		{"high_t", RiskHigh, "Ada", false},
		{"reviewed_t", RiskMedium, "The reviewer", true},
		{"reviewed_t", RiskReviewed, "", true},
		{"reviewed_t", RiskReviewed, "The reviewer", false},
		{"reviewed_t", RiskHigh, "Ada", false},
		{"medium_t", RiskLow, "", true},
		{"medium_t", RiskMedium, "", false},
		{"medium_t", RiskHigh, "Ada", false}, // a call at a higher risk than declared runs
		{"low_t", RiskLow, "", false},
	}
	for i, tt := range tests {
		name := fmt.Sprintf("%s at %s approved=%q", tt.tool, tt.risk, tt.approved)
		t.Run(name, func(t *testing.T) {
			before := runs.get()
			resp := h.Serve(context.Background(), post(riskCall(tt.tool, fmt.Sprintf("rf_%d", i), tt.risk, tt.approved)))
			res := requireResult(t, resp)
			if !tt.refused {
				assert.Equal(t, `"ran"`, string(res))
				assert.Equal(t, before+1, runs.get())
				return
			}
			assert.Equal(t, before, runs.get(), "a call under the floor is not run")
			var r map[string]any
			require.NoError(t, jsonUnmarshal(res, &r))
			assert.Equal(t, false, r["ok"])
			assert.Equal(t, false, r["allowed"])
			assert.Equal(t, "blocked", r["outcome"])
			assert.Equal(t, "approval_required", r["reason"])
			assert.NotEmpty(t, r["detail"])
			assert.Equal(t, "approval_required", obs.last(t).Refusal, "the observer sees the refusal's reason")
			warns := logs.find(t, "risk floor")
			require.NotEmpty(t, warns)
			last := warns[len(warns)-1]
			assert.Equal(t, "WARN", last["level"])
			assert.Equal(t, tt.tool, last["tool"])
			assert.Equal(t, string(tools[riskIndex(tt.tool)].risk), last["declared"])
			assert.Equal(t, string(tt.risk), last["received"])
		})
	}
}

// riskIndex maps the test tools to their index.
func riskIndex(name string) int {
	return map[string]int{"low_t": 0, "medium_t": 1, "reviewed_t": 2, "high_t": 3}[name]
}

// TestRiskFloorWarnOnly: the operator's switch keeps the warning, runs the
// tool.
func TestRiskFloorWarnOnly(t *testing.T) {
	runs := &int64Counter{}
	h, logs := newHandler(t, Config{Tools: []*Tool{riskTool("high_t", RiskHigh, runs)}, RiskFloorWarnOnly: true})
	res := requireResult(t, h.Serve(context.Background(), post(riskCall("high_t", "wo_1", RiskLow, ""))))
	assert.Equal(t, `"ran"`, string(res))
	assert.EqualValues(t, 1, runs.get())
	warns := logs.find(t, "risk floor")
	require.Len(t, warns, 1)
	assert.Equal(t, false, warns[0]["enforced"])
}

// TestRiskFloorBeforeTheReplayStore: a refused call leaves its toolCallId
// free, so the approved call with the same id still runs.
func TestRiskFloorBeforeTheReplayStore(t *testing.T) {
	runs := &int64Counter{}
	h, _ := newHandler(t, Config{Tools: []*Tool{riskTool("high_t", RiskHigh, runs)}})
	requireResult(t, h.Serve(context.Background(), post(riskCall("high_t", "same_id", RiskHigh, ""))))
	assert.Zero(t, runs.get())
	// Same id, another body (approved): not a 409, the floor kept nothing.
	res := requireResult(t, h.Serve(context.Background(), post(riskCall("high_t", "same_id", RiskHigh, "Ada"))))
	assert.Equal(t, `"ran"`, string(res))
}

// TestRiskFloorInMiddlewareMode: a registered tool's floor applies behind
// Verify too; a tool not in Config.Tools never reaches the app.
func TestRiskFloorInMiddlewareMode(t *testing.T) {
	runs := &int64Counter{}
	h, _ := newHandler(t, Config{Tools: []*Tool{riskTool("high_t", RiskHigh, runs)}})
	_, resp, ok := h.Verify(context.Background(), post(riskCall("high_t", "mw_1", RiskLow, "")))
	require.False(t, ok)
	assert.Contains(t, string(requireResult(t, resp)), "approval_required")
	_, resp, ok = h.Verify(context.Background(), post(riskCall("elsewhere", "mw_2", RiskLow, "")))
	assert.False(t, ok)
	requireError(t, resp, http.StatusNotFound, CodeUnknownTool)
}

// TestInterceptors: global ones first, then the tool's; nil goes on, a
// Refusal refuses, an error fails, a panic fails; whatever they answer is
// kept for replays, so a repeat does not run them again.
func TestInterceptors(t *testing.T) {
	var order []string
	record := func(name string, ret error) Interceptor {
		return func(ctx context.Context, call *Call, tool *Tool) error {
			order = append(order, name+":"+call.Tool)
			if tool != nil && tool.Risk() != RiskLow {
				return errors.New("wrong tool")
			}
			return ret
		}
	}
	runs := &int64Counter{}
	run := func(ctx context.Context, c ToolCall[noInput]) (string, error) { runs.add(); return "ran", nil }
	tools := []*Tool{
		NewTool("plain", RiskLow, "Plain.", run, WithInterceptors(record("own", nil))),
		NewTool("refused", RiskLow, "Refused.", run, WithInterceptors(record("own", Refuse("not_allowed", "No.")))),
		NewTool("failed", RiskLow, "Failed.", run, WithInterceptors(record("own", errors.New("quota service down")))),
		NewTool("panics", RiskLow, "Panics.", run, WithInterceptors(func(context.Context, *Call, *Tool) error { panic("interceptor bug") })),
	}
	h, logs := newHandler(t, Config{Tools: tools, Interceptors: []Interceptor{record("global1", nil), record("global2", nil)}})
	ctx := context.Background()

	assert.Equal(t, `"ran"`, string(requireResult(t, h.Serve(ctx, post(toolCall("plain", "i1", `{}`))))))
	assert.Equal(t, []string{"global1:plain", "global2:plain", "own:plain"}, order)

	order = nil
	refused := h.Serve(ctx, post(toolCall("refused", "i2", `{}`)))
	assert.Contains(t, string(requireResult(t, refused)), `"reason":"not_allowed"`)
	again := h.Serve(ctx, post(toolCall("refused", "i2", `{}`)))
	assert.Equal(t, string(refused.Body), string(again.Body))
	assert.Equal(t, []string{"global1:refused", "global2:refused", "own:refused"}, order, "a replay does not run interceptors again")

	ref := requireHidden(t, requireError(t, h.Serve(ctx, post(toolCall("failed", "i3", `{}`))), http.StatusOK, CodeExecutionFailed), "failed")
	assert.Equal(t, "quota service down", requireLoggedUnder(t, logs, ref)["error"])
	assert.Equal(t, "tool panics failed unexpectedly", requireError(t, h.Serve(ctx, post(toolCall("panics", "i4", `{}`))), http.StatusOK, CodeExecutionFailed))
	assert.NotEmpty(t, logs.find(t, "an interceptor panicked"))
	assert.EqualValues(t, 1, runs.get(), "only the plain call ran its tool")

	// Middleware mode: the interceptors run behind Verify too, and never
	// see a tool that is not registered: its call is answered 404 first.
	order = nil
	_, _, ok := h.Verify(ctx, post(toolCall("plain", "i5", `{}`)))
	assert.True(t, ok)
	assert.Equal(t, []string{"global1:plain", "global2:plain", "own:plain"}, order)
	order = nil
	_, resp, ok := h.Verify(ctx, post(toolCall("elsewhere", "i6", `{}`)))
	assert.False(t, ok)
	requireError(t, resp, http.StatusNotFound, CodeUnknownTool)
	assert.Empty(t, order, "no interceptor runs for a tool that is not registered")

	_, err := New(Config{Keys: []string{testKey}, Interceptors: []Interceptor{nil}, Logger: discardLogger()})
	assert.ErrorContains(t, err, "interceptor 0 is nil")
}

// TestResultBudget: WithResultBudget trims a long list; a result that
// cannot fit fails saying why.
func TestResultBudget(t *testing.T) {
	long := make([]map[string]string, 200)
	for i := range long {
		long[i] = map[string]string{"id": fmt.Sprintf("A-%04d", i)}
	}
	lister := NewTool("list", RiskLow, "Lists.", func(ctx context.Context, c ToolCall[noInput]) (any, error) {
		return map[string]any{"orders": long}, nil
	}, WithResultBudget(0))
	blob := NewTool("blob", RiskLow, "One long string.", func(ctx context.Context, c ToolCall[noInput]) (any, error) {
		return strings.Repeat("x", 5000), nil
	}, WithResultBudget(0))
	h, logs := newHandler(t, Config{Tools: []*Tool{lister, blob}})
	res := requireResult(t, h.Serve(context.Background(), post(toolCall("list", "b1", `{}`))))
	assert.LessOrEqual(t, len([]rune(string(res))), maxResultChars)
	var out struct {
		Orders  []map[string]string `json:"orders"`
		Omitted int                 `json:"omitted"`
	}
	require.NoError(t, jsonUnmarshal(res, &out))
	assert.Equal(t, 200, len(out.Orders)+out.Omitted)
	assert.Equal(t, "A-0000", out.Orders[0]["id"])
	assert.Empty(t, logs.find(t, "longer than the agent reads"), "a trimmed result fits")

	msg := requireError(t, h.Serve(context.Background(), post(toolCall("blob", "b2", `{}`))), http.StatusOK, CodeExecutionFailed)
	assert.Contains(t, msg, "blob")
}
