package protocol_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/median-go/median/protocol"
)

// exampleKey stands in for the key from Median's dashboard. In production,
// leave Config.Keys empty and set the MEDIAN_KEY environment variable.
const exampleKey = "mk_example_0123456789abcdefghijklmnopqrstu"

// OrderInput is the typed input of the lookup_order tool; its JSON Schema is
// inferred from the struct.
type OrderInput struct {
	OrderID string `json:"orderId" jsonschema:"description=The order number, e.g. A-1001,minLength=1"`
}

// OrderStatus is what lookup_order returns.
type OrderStatus struct {
	OrderID string `json:"orderId"`
	Status  string `json:"status"`
}

// lookupOrder answers only verified visitors, about their own orders.
func lookupOrder(ctx context.Context, call protocol.ToolCall[OrderInput]) (OrderStatus, error) {
	if _, ok := call.Visitor.ExternalID(); !ok {
		return OrderStatus{}, protocol.NotSignedIn("Ask the customer to sign in to see their orders.")
	}
	return OrderStatus{OrderID: call.Input.OrderID, Status: "shipped"}, nil
}

// A typed tool served on a net/http ServeMux.
func ExampleNew() {
	h, err := protocol.New(protocol.Config{
		Keys:  []string{exampleKey}, // omit to read MEDIAN_KEY
		Tools: []*protocol.Tool{protocol.NewTool("lookup_order", protocol.RiskLow, "Look up the status of one of the visitor's orders.", lookupOrder)},
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/median", h)

	// What Median sends:
	body := `{"tool":"lookup_order","toolCallId":"call_1","input":{"orderId":"A-1001"},` +
		`"context":{"conversationId":"conv_42","risk":"low","visitor":{"verified":true,"externalId":"user_7"}}}`
	sig, _ := protocol.Sign(exampleKey, time.Now(), []byte(body))
	req := httptest.NewRequest(http.MethodPost, "/median", strings.NewReader(body))
	req.Header.Set("median-signature", sig)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	fmt.Println(rec.Code, rec.Body.String())
	// Output: 200 {"result":{"orderId":"A-1001","status":"shipped"}}
}

// NewTool describes a typed tool; New reports every problem of every tool
// at once.
func ExampleNewTool() {
	tool := protocol.NewTool("lookup_order", protocol.RiskLow, "Look up the status of one of the visitor's orders.", lookupOrder)
	fmt.Println(tool.Name(), tool.Risk())

	bad := protocol.NewTool("look up!", protocol.RiskLow, "Spaces are not allowed in names.", lookupOrder)
	_, err := protocol.New(protocol.Config{Keys: []string{exampleKey}, Tools: []*protocol.Tool{tool, bad}})
	fmt.Println(err)
	// Output:
	// lookup_order low
	// median: tool "look up!": name "look up!" must match ^[a-zA-Z0-9_-]{1,64}$
}

// Sign builds the median-signature header, for tests and for clients that
// call a Median endpoint.
func ExampleSign() {
	at := time.UnixMilli(1767225600000)
	body := []byte(`{"op":"diagnostics"}`)
	header, err := protocol.Sign(exampleKey, at, body)
	if err != nil {
		panic(err)
	}
	fmt.Println(header)

	sig, _ := protocol.ParseSignature(header)
	fmt.Println(sig.Timestamp, sig.CheckTime(at.Add(time.Minute), protocol.DefaultTolerance), sig.Verify(body, protocol.MustParseKey(exampleKey)))
	// Output:
	// t=1767225600000,v1=7c5e8af8a415635e0c8beaa449795617796f409de2d76bf463a2ee2cd1f0355f
	// 1767225600000 <nil> <nil>
}

// Checking a signed request outside a Handler, e.g. in a queue worker that
// receives Median's calls forwarded with their header.
func ExampleVerifySignature() {
	key := protocol.MustParseKey(exampleKey)
	at := time.UnixMilli(1767225600000)
	body := []byte(`{"op":"diagnostics"}`)
	header := key.Sign(at, body)

	fmt.Println(protocol.VerifySignature(header, body, at.Add(time.Minute), protocol.DefaultTolerance, key))

	err := protocol.VerifySignature(header, []byte(`{"op":"diagnostics" }`), at, protocol.DefaultTolerance, key)
	fmt.Println(errors.Is(err, protocol.ErrInvalidSignature), protocol.ErrorCode(err))

	err = protocol.VerifySignature(header, body, at.Add(time.Hour), protocol.DefaultTolerance, key)
	fmt.Println(errors.Is(err, protocol.ErrStaleTimestamp), protocol.ErrorCode(err))
	// Output:
	// <nil>
	// true invalid_signature
	// true stale_timestamp
}

// A tool declines without failing: the refusal is answered as a result the
// agent can explain.
func ExampleRefuse() {
	for _, r := range []*protocol.Refusal{
		protocol.Refuse("out_of_stock", "The blue size 9 is sold out."),
		protocol.RefuseUnknown("", "There is no order A-9999."),
		protocol.NotSignedIn("Sign in to see orders."),
	} {
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
	}
	// Output:
	// {"ok":false,"allowed":false,"outcome":"blocked","reason":"out_of_stock","detail":"The blue size 9 is sold out."}
	// {"ok":false,"known":false,"outcome":"unknown","reason":"tool_refused","detail":"There is no order A-9999."}
	// {"ok":false,"allowed":false,"outcome":"blocked","reason":"not_signed_in","detail":"Sign in to see orders."}
}

// Embed Hints in a result to offer a button and a highlight in the widget.
func ExampleHints_SetNavigateTo() {
	type Result struct {
		OrderID string `json:"orderId"`
		protocol.Hints
	}
	r := Result{OrderID: "A-1001"}
	fmt.Println(r.SetNavigateTo("//evil.example/phish"))
	fmt.Println(r.SetNavigateTo("/account/orders/A-1001"))
	fmt.Println(r.SetHighlight("#order-A-1001"))
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
	// Output:
	// medianNavigateTo: must start with a single "/" ("//" would leave your site)
	// <nil>
	// <nil>
	// {"orderId":"A-1001","medianNavigateTo":"/account/orders/A-1001","medianHighlight":"#order-A-1001"}
}

// Middleware: Verify checks the request, your own code answers the call,
// Respond encodes (and stores) the answer.
func ExampleHandler_Verify() {
	h, err := protocol.New(protocol.Config{Keys: []string{exampleKey}})
	if err != nil {
		panic(err)
	}
	middleware := func(w http.ResponseWriter, r *http.Request) {
		req := protocol.Request{Method: r.Method, Signature: r.Header.Get("median-signature"), Body: r.Body, ContentLength: r.ContentLength}
		call, resp, ok := h.Verify(r.Context(), req)
		if !ok {
			resp.WriteTo(w) // a refusal, the manifest, diagnostics or a replayed answer
			return
		}
		var result any
		var err error
		switch call.Tool {
		case "ping":
			result = map[string]string{"pong": call.ConversationID}
		default:
			err = protocol.UnknownTool(call.Tool) // 404 unknown_tool
		}
		h.Respond(r.Context(), call, result, err).WriteTo(w)
	}

	body := `{"tool":"ping","toolCallId":"call_2","input":{},"context":{"conversationId":"conv_9","risk":"low","visitor":{"verified":false}}}`
	sig, _ := protocol.Sign(exampleKey, time.Now(), []byte(body))
	req := httptest.NewRequest(http.MethodPost, "/median", strings.NewReader(body))
	req.Header.Set("median-signature", sig)
	rec := httptest.NewRecorder()
	middleware(rec, req)
	fmt.Println(rec.Code, rec.Body.String())

	unsigned := httptest.NewRequest(http.MethodPost, "/median", strings.NewReader(body))
	rec = httptest.NewRecorder()
	middleware(rec, unsigned)
	fmt.Println(rec.Code)
	// Output:
	// 200 {"result":{"pong":"conv_9"}}
	// 401
}
