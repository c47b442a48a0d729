package conformance_test

import (
	"context"
	"encoding/json"
	"net/http"
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
				return viewOrder{}, errFailed
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
