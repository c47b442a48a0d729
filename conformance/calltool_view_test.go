package conformance_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/conformance/agent"
	"github.com/median-go/median/protocol"
)

// viewOrder is a result with widget hints, and a long note when asked.
type viewOrder struct {
	OrderID string `json:"orderId"`
	Note    string `json:"note,omitempty"`
	protocol.Hints
}

func viewTools() []*protocol.Tool {
	return []*protocol.Tool{
		protocol.NewTool("lookup", protocol.RiskLow, "Looks up an order (test).",
			func(ctx context.Context, call protocol.ToolCall[struct {
				OrderID string `json:"orderId" jsonschema:"minLength=1"`
				Long    bool   `json:"long,omitempty"`
			}]) (viewOrder, error) {
				o := viewOrder{OrderID: call.Input.OrderID, Hints: protocol.Hints{NavigateTo: "/orders/" + call.Input.OrderID, Highlight: "#status"}}
				if call.Input.Long {
					o.Note = strings.Repeat("é", 5000)
				}
				return o, nil
			}),
		protocol.NewTool("broken", protocol.RiskLow, "Fails (test).",
			func(ctx context.Context, call protocol.ToolCall[struct{}]) (viewOrder, error) {
				return viewOrder{}, &protocol.AgentError{Message: errFailed.Error(), Err: errFailed} // meant for the agent, which reads its message
			}),
	}
}

type failedError struct{}

func (failedError) Error() string { return "the order service is down" }

var errFailed = failedError{}

// TestReplyCarriesTheAgentsView: an app's test asserts on what the agent
// will read, the button and what it is told.
func TestReplyCarriesTheAgentsView(t *testing.T) {
	h := newHandler(t, testKey, func(c *protocol.Config) { c.Tools = viewTools() })
	target := conformance.HandlerTarget(mux(h), mountPath, testKey)

	r := conformance.CallTool[viewOrder](t, target, conformance.ToolSample{Tool: "lookup", Input: map[string]any{"orderId": "A-1"}})
	require.Nil(t, r.Error)
	assert.Equal(t, agent.ToldResult, r.View.Told)
	assert.Equal(t, "/orders/A-1", r.View.Button)
	assert.Equal(t, "#status", r.View.Highlight)
	assert.JSONEq(t, `{"orderId":"A-1"}`, r.View.Text, "the hints leave what the agent reads")
	assert.False(t, r.View.Cut)

	r = conformance.CallTool[viewOrder](t, target, conformance.ToolSample{Tool: "lookup", Input: map[string]any{"orderId": "A-1", "long": true}})
	assert.True(t, r.View.Cut)
	assert.Equal(t, 4000, utf8.RuneCountInString(r.View.Text))
	assert.Greater(t, r.View.Chars, 5000)

	r = conformance.CallTool[viewOrder](t, target, conformance.ToolSample{Tool: "lookup", Input: json.RawMessage(`{"orderId":""}`)})
	assert.Equal(t, agent.ToldFixInput, r.View.Told)
	assert.Contains(t, r.View.Text, "orderId")

	r = conformance.CallTool[viewOrder](t, target, conformance.ToolSample{Tool: "broken"})
	assert.Equal(t, agent.ToldDoNotRetry, r.View.Told)
	assert.Equal(t, "the order service is down", r.View.Text)

	r = conformance.CallTool[viewOrder](t, target, conformance.ToolSample{Tool: "no_such_tool"})
	assert.Equal(t, agent.ToldNotAnswering, r.View.Told)
	assert.Empty(t, r.View.Text, "the agent reads nothing of a 404")
}

// TestReplyViewOutsideTheContract: Call returns the view with its error
// when the answer is not the contract's.
func TestReplyViewOutsideTheContract(t *testing.T) {
	odd := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok"))
	})
	target := conformance.HandlerTarget(odd, mountPath, testKey)
	r, err := conformance.Call[viewOrder](t.Context(), target, conformance.ToolSample{Tool: "lookup"})
	require.Error(t, err)
	assert.Equal(t, agent.ToldOutside, r.View.Told)
	assert.Contains(t, r.View.Problem, "text/plain")
}

// TestSuiteAndViewReadAnswersAlike: an answer that breaks docs/PROTOCOL.md
// §3 is caught by the suite's case, by CallTool and by the agent's view,
// each with the same words, since all three read it with one parser.
func TestSuiteAndViewReadAnswersAlike(t *testing.T) {
	const failed = `{"error":{"code":"execution_failed","message":"the order service is down"}}`
	tests := []struct {
		name   string
		sample conformance.ToolSample
		caseID string // the suite's case that sends the sample
		marker string // the answers to break contain it
		body   string // the broken body, "" to keep it
		ctype  string // the broken Content-Type, "" to keep it
		says   string
		told   agent.Told // what the view makes of the broken answer
	}{
		{"a result as text/plain", conformance.ToolSample{Tool: "echo", Input: map[string]string{"message": "hi"}}, "execution/result", `"result"`,
			"", "text/plain", `Content-Type is "text/plain", not application/json`, agent.ToldOutside},
		{"execution_failed as text/plain", conformance.ToolSample{Tool: "fail"}, "execution/failed", `"execution_failed"`,
			"", "text/plain; charset=utf-8", `Content-Type is "text/plain; charset=utf-8", not application/json`, agent.ToldOutside},
		{"an extra error key", conformance.ToolSample{Tool: "fail"}, "execution/failed", `"execution_failed"`,
			`{"error":{"code":"execution_failed","message":"down","retry":false}}`, "", `"error" must have exactly code and message; it has "code", "message", "retry"`, agent.ToldOutside},
		{"no message", conformance.ToolSample{Tool: "fail"}, "execution/failed", `"execution_failed"`,
			`{"error":{"code":"execution_failed"}}`, "", `"error" must have exactly code and message; it has "code"`, agent.ToldOutside},
		{"a null message", conformance.ToolSample{Tool: "fail"}, "execution/failed", `"execution_failed"`,
			`{"error":{"code":"execution_failed","message":null}}`, "", `"error.message" must be a string, got null`, agent.ToldOutside},
		{"an empty code", conformance.ToolSample{Tool: "fail"}, "execution/failed", `"execution_failed"`,
			`{"error":{"code":"","message":"down"}}`, "", `"error.code" must be a non-empty string, got ""`, agent.ToldOutside},
		{"result and error", conformance.ToolSample{Tool: "fail"}, "execution/failed", `"execution_failed"`,
			`{"result":{},"error":{"code":"execution_failed","message":"down"}}`, "", `exactly one key, "result" or "error"; it has "error", "result"`, agent.ToldOutside},
		{"error twice", conformance.ToolSample{Tool: "fail"}, "execution/failed", `"execution_failed"`,
			failed[:len(failed)-1] + `,"error":{"code":"execution_failed","message":"again"}}`, "", `it has "error", "error"`, agent.ToldOutside},
		{"invalid_input with an extra key", conformance.ToolSample{Tool: "echo", Input: json.RawMessage(`{"message":5}`)}, "input/invalid", `"invalid_input"`,
			`{"error":{"code":"invalid_input","message":"message: must be a string","field":"message"}}`, "", `it has "code", "field", "message"`, agent.ToldNotAnswering},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := rewrite(newHandler(t, testKey, nil), func(_ *http.Request, _ []byte, rec *httptest.ResponseRecorder) {
				if !strings.Contains(rec.Body.String(), tt.marker) {
					return
				}
				if tt.body != "" {
					rec.Body.Reset()
					rec.Body.WriteString(tt.body)
				}
				if tt.ctype != "" {
					rec.Header().Set("Content-Type", tt.ctype)
				}
			})
			target := fixtureTarget(t, mux(h))
			rep, err := conformance.Check(t.Context(), target, conformance.Options{Run: "^" + tt.caseID + "$"})
			require.NoError(t, err)
			require.Len(t, rep.Verdicts, 1)
			assert.Equal(t, "fail", rep.Verdicts[0].Status, "the suite: %s", rep.Verdicts[0])
			assert.Contains(t, rep.Verdicts[0].Message, tt.says, "the suite")

			r, err := conformance.Call[any](t.Context(), target, tt.sample)
			require.Error(t, err, "CallTool")
			assert.Contains(t, err.Error(), tt.says, "CallTool")
			assert.Equal(t, tt.told, r.View.Told, "the view (problem %q)", r.View.Problem)
			if tt.told == agent.ToldOutside {
				assert.Contains(t, r.View.Problem, tt.says, "the view")
			}
		})
	}
}

// TestMalformedRefusalIsCaughtEverywhere: a refusal whose fields break
// docs/PROTOCOL.md §3.1 fails the suite's refusal case and CallTool, and
// the view notes it while the agent still reads it.
func TestMalformedRefusalIsCaughtEverywhere(t *testing.T) {
	const says = `a refusal's outcome is "blocked" or "unknown", got "denied"`
	h := rewrite(newHandler(t, testKey, nil), func(_ *http.Request, _ []byte, rec *httptest.ResponseRecorder) {
		if strings.Contains(rec.Body.String(), `"reason":"not_signed_in"`) {
			rec.Body.Reset()
			rec.Body.WriteString(`{"result":{"ok":false,"outcome":"denied","reason":"not_signed_in"}}`)
		}
	})
	target := fixtureTarget(t, mux(h))
	rep, err := conformance.Check(t.Context(), target, conformance.Options{Run: "^execution/refusal$"})
	require.NoError(t, err)
	assert.Contains(t, rep.Verdicts[0].Message, says, "the suite: %s", rep.Verdicts[0])

	r, err := conformance.Call[any](t.Context(), target, conformance.ToolSample{Tool: "refuse"})
	require.Error(t, err, "CallTool")
	assert.Contains(t, err.Error(), says, "CallTool")
	assert.Nil(t, r.Refusal)
	assert.Equal(t, agent.ToldResult, r.View.Told, "the agent reads a result all the same")
	assert.True(t, r.View.Refusal)
	require.Len(t, r.View.Notes, 1)
	assert.Contains(t, r.View.Notes[0], says, "the view")
}
