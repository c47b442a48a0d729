package conformance_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/conformance/agent"
	"github.com/median-go/median/protocol"
)

// lookupInput and order are the input and the result of your tool.
type lookupInput struct {
	OrderID string `json:"orderId"`
}

type order struct {
	OrderID string `json:"orderId"`
	Status  string `json:"status"`
}

// newOrdersApp is your app's constructor: a router with the Median endpoint
// mounted at /api/median (with and without the trailing slash).
func newOrdersApp(key string) (http.Handler, error) {
	lookup := protocol.NewTool("lookup_order", protocol.RiskLow, "Looks up one of the visitor's orders.",
		func(_ context.Context, c protocol.ToolCall[lookupInput]) (order, error) {
			if _, ok := c.Visitor.ExternalID(); !ok {
				return order{}, protocol.Refuse("not_signed_in", "Sign in to see orders.")
			}
			return order{OrderID: c.Input.OrderID, Status: "shipped"}, nil
		})
	h, err := protocol.New(protocol.Config{Keys: []string{key}, Tools: []*protocol.Tool{lookup}})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/api/median", h)
	mux.Handle("/api/median/{$}", h)
	return mux, nil
}

// testLookupOrder is the test you write in your app's median_test.go (as
// TestLookupOrder): one signed call per behaviour of your tool, its answer
// decoded into your own result type.
func testLookupOrder(t *testing.T) {
	const key = "mk_test_0123456789abcdef0123456789abcdef"
	app, err := newOrdersApp(key)
	require.NoError(t, err)
	target := conformance.HandlerTarget(app, "/api/median", key)
	signedIn := conformance.Visitor{Verified: true, ExternalID: "user_7"}

	r := conformance.CallTool[order](t, target, conformance.ToolSample{Tool: "lookup_order", Input: lookupInput{OrderID: "A-1001"}, Visitor: signedIn})
	require.Nil(t, r.Error)
	require.Nil(t, r.Refusal)
	assert.Equal(t, order{OrderID: "A-1001", Status: "shipped"}, r.Result)
	assert.JSONEq(t, `{"orderId":"A-1001","status":"shipped"}`, r.View.Text, "what the agent reads")
	assert.False(t, r.View.Cut, "the agent reads all of it")

	r = conformance.CallTool[order](t, target, conformance.ToolSample{Tool: "lookup_order", Input: lookupInput{OrderID: "A-1001"}}) // not signed in
	require.NotNil(t, r.Refusal)
	assert.Equal(t, "not_signed_in", r.Refusal.Reason)

	r = conformance.CallTool[order](t, target, conformance.ToolSample{Tool: "lookup_order", Input: map[string]any{"orderId": 1001}, Visitor: signedIn})
	require.NotNil(t, r.Error)
	assert.Equal(t, protocol.CodeInvalidInput, r.Error.Code)
	assert.Contains(t, r.Error.Message, "orderId")
	assert.Equal(t, agent.ToldFixInput, r.View.Told, "the agent is told to fix its input")
}

// CallTool tests one of your own tools through your app, the way Median
// calls it: see testLookupOrder above, which this package's tests run.
func ExampleCallTool() {
	// In your app's median_test.go:
	//
	//	func TestLookupOrder(t *testing.T) { ... } // the body of testLookupOrder
}
