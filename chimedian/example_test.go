package chimedian_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/median-go/median/chimedian"
	"github.com/median-go/median/protocol"
)

// exampleKey stands for MEDIAN_KEY. In production leave Config.Keys empty
// and set the environment variable instead.
const exampleKey = "example-key-do-not-use-0123456789abcdef"

type OrderIn struct {
	OrderID string `json:"orderId" jsonschema:"description=The order's id, like A-1001"`
}

type Order struct {
	OrderID string `json:"orderId"`
	Status  string `json:"status"`
}

func lookupOrder(_ context.Context, call protocol.ToolCall[OrderIn]) (Order, error) {
	if _, ok := call.Visitor.ExternalID(); !ok {
		return Order{}, protocol.NotSignedIn("Ask the customer to sign in first.")
	}
	return Order{OrderID: call.Input.OrderID, Status: "shipped"}, nil
}

// Mount serves the endpoint; the Handler runs the registered tools.
func ExampleMount() {
	h, err := protocol.New(protocol.Config{
		Keys:  []string{exampleKey},
		Tools: []*protocol.Tool{protocol.NewTool("lookup_order", protocol.RiskLow, "Looks up one of the customer's orders.", lookupOrder)},
	})
	if err != nil {
		log.Fatal(err)
	}
	r := chi.NewRouter()
	r.Route("/api", func(r chi.Router) {
		chimedian.Mount(r, "/median", h)
	})

	fmt.Println(send(r, "/api/median", `{"tool":"lookup_order","toolCallId":"call_1","input":{"orderId":"A-1001"},
		"context":{"conversationId":"conv_1","risk":"low","visitor":{"verified":true,"externalId":"user_7"}}}`))
	// Output: 200 {"result":{"orderId":"A-1001","status":"shipped"}}
}

// Middleware verifies the request; your handler answers the call.
func ExampleMiddleware() {
	h, err := protocol.New(protocol.Config{Keys: []string{exampleKey}})
	if err != nil {
		log.Fatal(err)
	}
	r := chi.NewRouter()
	r.With(chimedian.Middleware(h)).Handle("/median", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		call, _ := chimedian.CallFrom(req)
		if call.Tool != "lookup_order" {
			chimedian.Respond(w, req, nil, protocol.UnknownTool(call.Tool))
			return
		}
		var in OrderIn
		if err := call.BindInput(&in); err != nil {
			chimedian.Respond(w, req, nil, err) // answered 400 invalid_input
			return
		}
		chimedian.Respond(w, req, Order{OrderID: in.OrderID, Status: "in transit"}, nil)
	}))

	fmt.Println(send(r, "/median", `{"tool":"lookup_order","toolCallId":"call_2","input":{"orderId":"B-2002"},
		"context":{"conversationId":"conv_1","risk":"low","visitor":{"verified":false}}}`))
	// Output: 200 {"result":{"orderId":"B-2002","status":"in transit"}}
}

// VisitorFrom gives the handler behind the middleware the visitor:
// authorize on its ExternalID, which is set only when Median verified it.
func ExampleVisitorFrom() {
	h, err := protocol.New(protocol.Config{Keys: []string{exampleKey}})
	if err != nil {
		log.Fatal(err)
	}
	r := chi.NewRouter()
	r.With(chimedian.Middleware(h)).Post("/median", func(w http.ResponseWriter, req *http.Request) {
		visitor, _ := chimedian.VisitorFrom(req)
		id, ok := visitor.ExternalID()
		if !ok {
			chimedian.Respond(w, req, nil, protocol.NotSignedIn("Ask the customer to sign in first."))
			return
		}
		chimedian.Respond(w, req, map[string]string{"customer": id}, nil)
	})

	fmt.Println(send(r, "/median", `{"tool":"whoami","toolCallId":"call_3","input":{},
		"context":{"conversationId":"conv_1","risk":"low","visitor":{"verified":false,"email":"ada@example.com"}}}`))
	fmt.Println(send(r, "/median", `{"tool":"whoami","toolCallId":"call_4","input":{},
		"context":{"conversationId":"conv_1","risk":"low","visitor":{"verified":true,"externalId":"user_7"}}}`))
	// Output:
	// 200 {"result":{"ok":false,"allowed":false,"outcome":"blocked","reason":"not_signed_in","detail":"Ask the customer to sign in first."}}
	// 200 {"result":{"customer":"user_7"}}
}

// send POSTs body to path as Median would, signed now, and returns the
// answer's status and body.
func send(h http.Handler, path, body string) string {
	sig, err := protocol.Sign(exampleKey, time.Now(), []byte(body))
	if err != nil {
		log.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Header.Set(protocol.SignatureHeader, sig)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return fmt.Sprint(w.Code, " ", w.Body.String())
}
