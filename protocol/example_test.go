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
		return OrderStatus{}, protocol.Refuse("not_signed_in", "Ask the customer to sign in to see their orders.")
	}
	return OrderStatus{OrderID: call.Input.OrderID, Status: "shipped"}, nil
}

// signed returns a request signed the way Median signs it.
func signed(method, path, body string) *http.Request {
	key, err := protocol.ParseKey(exampleKey)
	if err != nil {
		panic(err)
	}
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("median-signature", key.Sign(time.Now(), []byte(body)))
	return req
}

// orderCall is what Median sends to run lookup_order.
const orderCall = `{"tool":"lookup_order","toolCallId":"call_1","input":{"orderId":"A-1001"},` +
	`"context":{"conversationId":"conv_42","risk":"low","visitor":{"verified":true,"externalId":"user_7"}}}`

// A typed tool served on a net/http ServeMux.
func ExampleNew() {
	h, err := protocol.New(protocol.Config{
		Keys:  []string{exampleKey}, // omit to read MEDIAN_KEY (and MEDIAN_KEY_PREVIOUS)
		Tools: []*protocol.Tool{protocol.NewTool("lookup_order", protocol.RiskLow, "Look up the status of one of the visitor's orders.", lookupOrder)},
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	h.Mount(mux, "/api/median")

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, signed(http.MethodPost, "/api/median", orderCall))
	fmt.Println(rec.Code, rec.Body.String())
	// Output: 200 {"result":{"orderId":"A-1001","status":"shipped"}}
}

// Mount registers the whole endpoint on a ServeMux: both paths, every
// method. A method pattern ("POST /api/median") would let the mux answer
// GET, the manifest Median syncs its tool list with, by itself.
func ExampleHandler_Mount() {
	h, err := protocol.New(protocol.Config{Keys: []string{exampleKey}})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	h.Mount(mux, "/api/median")
	for _, req := range []*http.Request{
		signed(http.MethodGet, "/api/median", ""),
		signed(http.MethodGet, "/api/median/", ""),
		signed(http.MethodPut, "/api/median", ""),
	} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		fmt.Println(req.Method, req.URL.Path, rec.Code, rec.Header().Get("Allow"), rec.Body.String())
	}
	// Output:
	// GET /api/median 200  {"tools":[]}
	// GET /api/median/ 200  {"tools":[]}
	// PUT /api/median 405 GET, POST {"error":{"code":"method_not_allowed","message":"method PUT is not allowed; Median sends POST (and GET for the manifest)"}}
}

// NewTool describes a typed tool; New reports every problem of every tool
// at once.
func ExampleNewTool() {
	tool := protocol.NewTool("lookup_order", protocol.RiskLow, "Look up the status of one of the visitor's orders.", lookupOrder)
	fmt.Println(tool.Risk())

	bad := protocol.NewTool("look up!", protocol.RiskLow, "Spaces are not allowed in names.", lookupOrder)
	_, err := protocol.New(protocol.Config{Keys: []string{exampleKey}, Tools: []*protocol.Tool{tool, bad}})
	fmt.Println(err)
	// Output:
	// low
	// median: tool "look up!": name "look up!" must match ^[a-zA-Z0-9_-]{1,64}$
}

// Sign builds the median-signature header, for tests and for clients that
// call a Median endpoint.
func ExampleKey_Sign() {
	key, err := protocol.ParseKey(exampleKey)
	if err != nil {
		panic(err)
	}
	fmt.Println(key.Sign(time.UnixMilli(1767225600000), []byte(`{"op":"diagnostics"}`)))
	fmt.Println(key) // never the key or its secret
	// Output:
	// t=1767225600000,v1=7c5e8af8a415635e0c8beaa449795617796f409de2d76bf463a2ee2cd1f0355f
	// median key mk_a37d7601ad81
}

// Checking a signed request outside a Handler, e.g. in a queue worker that
// receives Median's calls forwarded with their header.
func ExampleVerifySignature() {
	key, _ := protocol.ParseKey(exampleKey)
	at := time.UnixMilli(1767225600000)
	body := []byte(`{"op":"diagnostics"}`)
	header := key.Sign(at, body)

	fmt.Println(protocol.VerifySignature(header, body, at.Add(time.Minute), 5*time.Minute, key))

	err := protocol.VerifySignature(header, []byte(`{"op":"diagnostics" }`), at, 5*time.Minute, key)
	fmt.Println(errors.Is(err, protocol.CodeInvalidSignature))

	err = protocol.VerifySignature(header, body, at.Add(time.Hour), 5*time.Minute, key)
	fmt.Println(errors.Is(err, protocol.CodeStaleTimestamp))
	// Output:
	// <nil>
	// true
	// true
}

// A tool declines without failing: the refusal is answered as a result the
// agent can explain.
func ExampleRefuse() {
	tool := protocol.NewTool("cancel_order", protocol.RiskLow, "Cancel one of the visitor's orders.", func(ctx context.Context, call protocol.ToolCall[OrderInput]) (any, error) {
		if call.Input.OrderID == "A-9999" {
			return &protocol.Refusal{Unknown: true, Reason: "no_such_order", Detail: "There is no order A-9999."}, nil
		}
		return nil, protocol.Refuse("already_shipped", "The order has shipped; offer a return instead.")
	})
	h, _ := protocol.New(protocol.Config{Keys: []string{exampleKey}, Tools: []*protocol.Tool{tool}})
	for i, id := range []string{"A-1001", "A-9999"} {
		body := fmt.Sprintf(`{"tool":"cancel_order","toolCallId":"call_%d","input":{"orderId":%q},"context":{"conversationId":"c","risk":"low","visitor":{"verified":false}}}`, i, id)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, signed(http.MethodPost, "/", body))
		fmt.Println(rec.Body.String())
	}
	// Output:
	// {"result":{"ok":false,"allowed":false,"outcome":"blocked","reason":"already_shipped","detail":"The order has shipped; offer a return instead."}}
	// {"result":{"ok":false,"known":false,"outcome":"unknown","reason":"no_such_order","detail":"There is no order A-9999."}}
}

// Embed Hints in a result to offer a button and a highlight in the widget.
func ExampleHints() {
	type Result struct {
		OrderID string `json:"orderId"`
		protocol.Hints
	}
	r := Result{OrderID: "A-1001", Hints: protocol.Hints{NavigateTo: "/account/orders/A-1001", Highlight: "#order-A-1001"}}
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
	// Output:
	// {"orderId":"A-1001","medianNavigateTo":"/account/orders/A-1001","medianHighlight":"#order-A-1001"}
}

// Middleware: the Handler verifies, your own handler answers the call with
// Respond (which keeps the answer for replays).
func ExampleHandler_Middleware() {
	// The app answers ping itself, but declares it: the manifest lists it,
	// and a call of a tool not declared is answered 404 unknown_tool
	// before the app runs.
	ping := protocol.DeclareTool[struct{}]("ping", protocol.RiskLow, "Answers pong.")
	h, err := protocol.New(protocol.Config{Keys: []string{exampleKey}, Tools: []*protocol.Tool{ping}})
	if err != nil {
		panic(err)
	}
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call, _ := protocol.CallFrom(r.Context())
		switch call.Tool {
		case "ping":
			protocol.Respond(w, r, map[string]string{"pong": call.ConversationID}, nil)
		default:
			protocol.Respond(w, r, nil, protocol.CodeUnknownTool) // 404 unknown_tool
		}
	})
	mux := http.NewServeMux()
	h.Mount(mux, "/api/median", app) // h.Middleware(app) on both paths

	body := `{"tool":"ping","toolCallId":"call_2","input":{},"context":{"conversationId":"conv_9","risk":"low","visitor":{"verified":false}}}`
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, signed(http.MethodPost, "/api/median/", body))
	fmt.Println(rec.Code, rec.Body.String())

	rec = httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/median", strings.NewReader(body)))
	fmt.Println(rec.Code)
	// Output:
	// 200 {"result":{"pong":"conv_9"}}
	// 401
}

// Declare a tool your own handler answers: the manifest lists it, and its
// input is checked against the schema inferred from OrderInput before the
// handler runs.
func ExampleDeclareTool() {
	lookup := protocol.DeclareTool[OrderInput]("lookup_order", protocol.RiskLow, "Look up the status of one of the visitor's orders.")
	h, err := protocol.New(protocol.Config{Keys: []string{exampleKey}, Tools: []*protocol.Tool{lookup}})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	h.Mount(mux, "/api/median", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call, _ := protocol.CallFrom(r.Context())
		var in OrderInput
		if err := call.BindInput(&in); err != nil {
			protocol.Respond(w, r, nil, err)
			return
		}
		protocol.Respond(w, r, OrderStatus{OrderID: in.OrderID, Status: "shipped"}, nil)
	}))

	empty := strings.NewReplacer(`"A-1001"`, `""`, "call_1", "call_2").Replace(orderCall)
	for _, body := range []string{orderCall, empty} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, signed(http.MethodPost, "/api/median", body))
		fmt.Println(rec.Code, rec.Body.String())
	}
	// Output:
	// 200 {"result":{"orderId":"A-1001","status":"shipped"}}
	// 400 {"error":{"code":"invalid_input","message":"orderId: must be at least 1 character long"}}
}

// Interceptors run before every tool: here an audit line and a rule that
// only verified visitors may use high-risk tools.
func ExampleInterceptor() {
	audit := func(ctx context.Context, call *protocol.Call, tool *protocol.Tool) error {
		fmt.Println("audit:", call.Tool, call.ToolCallID, call.ApprovedBy)
		return nil
	}
	verifiedForHighRisk := func(ctx context.Context, call *protocol.Call, tool *protocol.Tool) error {
		if _, ok := call.Visitor.ExternalID(); !ok && tool != nil && tool.Risk() == protocol.RiskHigh {
			return protocol.Refuse("not_signed_in", "Ask the customer to sign in first.")
		}
		return nil
	}
	cancel := protocol.NewTool("cancel_order", protocol.RiskHigh, "Cancel an order.", func(ctx context.Context, call protocol.ToolCall[OrderInput]) (string, error) {
		return "cancelled", nil
	})
	h, _ := protocol.New(protocol.Config{
		Keys:         []string{exampleKey},
		Tools:        []*protocol.Tool{cancel},
		Interceptors: []protocol.Interceptor{audit, verifiedForHighRisk},
	})
	body := `{"tool":"cancel_order","toolCallId":"call_3","input":{"orderId":"A-1"},"context":{"conversationId":"c","risk":"high","approvedBy":"Ada","visitor":{"verified":false}}}`
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, signed(http.MethodPost, "/", body))
	fmt.Println(rec.Body.String())
	// Output:
	// audit: cancel_order call_3 Ada
	// {"result":{"ok":false,"allowed":false,"outcome":"blocked","reason":"not_signed_in","detail":"Ask the customer to sign in first."}}
}

// FitResult keeps a long list within what the agent reads, as valid JSON
// that says how much was left out.
func ExampleFitResult() {
	type Order struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	var orders []Order
	for i := range 100 {
		orders = append(orders, Order{ID: fmt.Sprintf("A-%04d", i), Status: "shipped"})
	}
	out, err := protocol.FitResult(map[string]any{"orders": orders}, 120)
	fmt.Println(string(out), err)
	// Output:
	// {"orders":[{"id":"A-0000","status":"shipped"},{"id":"A-0001","status":"shipped"}],"omitted":98} <nil>
}

// The diagnostics report read from code: here for a health check that
// also says whether the replay store answers. Median gets the same report,
// cut to 2,000 characters, when it asks.
func ExampleHandler_Report() {
	h, err := protocol.New(protocol.Config{
		Keys:  []string{exampleKey},
		Tools: []*protocol.Tool{protocol.NewTool("lookup_order", protocol.RiskLow, "Looks up an order.", lookupOrder)},
		// What only the app knows becomes the report's "app" entry.
		Diagnostics: func(ctx context.Context) (any, error) { return map[string]int{"openTickets": 3}, nil },
	})
	if err != nil {
		panic(err)
	}
	r := h.Report(context.Background())
	fmt.Println("store:", r.Store.Kind, *r.Store.Reachable)
	fmt.Println("keys:", len(r.Keys), r.Keys[0].Fingerprint == mustKey(exampleKey).Fingerprint())
	fmt.Println("tools:", r.Manifest.Tools, len(r.Manifest.SHA256))
	fmt.Println("app:", string(r.App))
	// Output:
	// store: memory true
	// keys: 1 true
	// tools: 1 64
	// app: {"openTickets":3}
}

// A key is shown by its fingerprint, never itself: in logs, in the
// diagnostics report, on an admin page.
func ExampleKey_Fingerprint() {
	k, err := protocol.ParseKey(exampleKey)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(k.Fingerprint()), k.Fingerprint()[:3], k.String() == "median key "+k.Fingerprint())
	// Output: 15 mk_ true
}

func mustKey(key string) protocol.Key {
	k, err := protocol.ParseKey(key)
	if err != nil {
		panic(err)
	}
	return k
}

// downStore is a replay store that cannot be reached.
type downStore struct{}

func (downStore) Claim(context.Context, string, string, time.Duration) (protocol.ClaimStatus, []byte, error) {
	return 0, nil, errors.New("dial tcp 10.0.0.5:6379: connection refused")
}

func (downStore) Save(context.Context, string, string, []byte, time.Duration) (int, error) {
	return 0, errors.New("dial tcp 10.0.0.5:6379: connection refused")
}

func (downStore) Renew(context.Context, string, string, time.Duration) error {
	return errors.New("dial tcp 10.0.0.5:6379: connection refused")
}

// A lookup changes nothing: declared read-only, it still answers while the
// replay store is down (its answer is then not kept), where a tool that
// changes things is refused.
func ExampleReadOnly() {
	type orderID struct {
		OrderID string `json:"orderId"`
	}
	lookup := protocol.NewTool("lookup_order", protocol.RiskLow, "Look up one of the visitor's orders.",
		func(ctx context.Context, call protocol.ToolCall[orderID]) (string, error) {
			return "processing", nil
		}, protocol.ReadOnly())
	cancel := protocol.NewTool("cancel_order", protocol.RiskLow, "Cancel one of the visitor's orders.",
		func(ctx context.Context, call protocol.ToolCall[orderID]) (string, error) {
			return "cancelled", nil
		})
	h, err := protocol.New(protocol.Config{Keys: []string{exampleKey}, Tools: []*protocol.Tool{lookup, cancel}, Store: downStore{}})
	if err != nil {
		panic(err)
	}
	for _, tool := range []string{"lookup_order", "cancel_order"} {
		body := strings.Replace(orderCall, "lookup_order", tool, 1)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, signed(http.MethodPost, "/api/median", body))
		fmt.Println(tool, rec.Body.String())
	}
	// Output:
	// lookup_order {"result":"processing"}
	// cancel_order {"error":{"code":"execution_failed","message":"the server could not record this call in its replay store, so the tool was not run and nothing was changed"}}
}
