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
	"github.com/go-chi/chi/v5/middleware"

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
		return Order{}, protocol.Refuse("not_signed_in", "Ask the customer to sign in first.")
	}
	return Order{OrderID: call.Input.OrderID, Status: "shipped"}, nil
}

// newHandler builds the Handler of the examples, with one tool.
func newHandler() *protocol.Handler {
	h, err := protocol.New(protocol.Config{
		Keys:  []string{exampleKey},
		Tools: []*protocol.Tool{protocol.NewTool("lookup_order", protocol.RiskLow, "Looks up one of the customer's orders.", lookupOrder)},
	})
	if err != nil {
		log.Fatal(err)
	}
	return h
}

const lookupCall = `{"tool":"lookup_order","toolCallId":"call_1","input":{"orderId":"A-1001"},
	"context":{"conversationId":"conv_1","risk":"low","visitor":{"verified":true,"externalId":"user_7"}}}`

// Mount serves the endpoint on a group; the Handler's tools answer.
func ExampleMount() {
	r := chi.NewRouter()
	r.Route("/api", func(r chi.Router) {
		chimedian.Mount(r, "/median", newHandler())
	})

	fmt.Println(send(r, "/api/median", lookupCall))
	fmt.Println(send(r, "/api/median/", strings.Replace(lookupCall, "call_1", "call_2", 1)))
	// Output:
	// 200 {"result":{"orderId":"A-1001","status":"shipped"}}
	// 200 {"result":{"orderId":"A-1001","status":"shipped"}}
}

// Mount with a handler: the middleware verifies every request and answers
// all but verified tool calls, which your handler answers with Respond.
func ExampleMount_handler() {
	r := chi.NewRouter()
	r.Route("/api", func(r chi.Router) {
		chimedian.Mount(r, "/median", newHandler(), http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			call, _ := chimedian.CallFrom(req)
			if call.Tool != "lookup_order" {
				chimedian.Respond(w, req, nil, protocol.CodeUnknownTool)
				return
			}
			var in OrderIn
			if err := call.BindInput(&in); err != nil {
				chimedian.Respond(w, req, nil, err) // answered 400 invalid_input
				return
			}
			chimedian.Respond(w, req, Order{OrderID: in.OrderID, Status: "in transit"}, nil)
		}))
	})

	fmt.Println(send(r, "/api/median", lookupCall))
	// Output: 200 {"result":{"orderId":"A-1001","status":"in transit"}}
}

// New is the handler Mount registers: the Handler itself. What chi's
// middleware puts on the request's context reaches the tool's ctx.
func ExampleNew() {
	whoami := protocol.NewTool("request_id", protocol.RiskLow, "Tells the request's id.",
		func(ctx context.Context, _ protocol.ToolCall[struct{}]) (string, error) {
			return middleware.GetReqID(ctx), nil
		})
	h, err := protocol.New(protocol.Config{Keys: []string{exampleKey}, Tools: []*protocol.Tool{whoami}})
	if err != nil {
		log.Fatal(err)
	}
	r := chi.NewRouter()
	r.Use(middleware.RequestID)
	r.Handle("/median", chimedian.New(h)) // Mount also registers "/median/"

	fmt.Println(send(r, "/median", `{"tool":"request_id","toolCallId":"call_3","input":{},
		"context":{"conversationId":"conv_1","risk":"low","visitor":{"verified":false}}}`))
	// Output: 200 {"result":"req-42"}
}

// Middleware with chi's With: it answers the manifest, refusals and the
// 405 itself, and the handler does not run.
func ExampleMiddleware() {
	r := chi.NewRouter()
	r.With(chimedian.Middleware(newHandler())).Handle("/median", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		chimedian.Respond(w, req, "reached the handler", nil)
	}))

	fmt.Println(send(r, "/median", lookupCall))
	req := httptest.NewRequest(http.MethodPost, "/median", strings.NewReader(lookupCall)) // unsigned
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	fmt.Println(w.Code, strings.Contains(w.Body.String(), `"code":"missing_signature"`))
	// Output:
	// 200 {"result":"reached the handler"}
	// 401 true
}

// CallFrom gives the handler behind the middleware the verified call.
func ExampleCallFrom() {
	r := chi.NewRouter()
	chimedian.Mount(r, "/median", newHandler(), http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		call, _ := chimedian.CallFrom(req)
		chimedian.Respond(w, req, map[string]string{"tool": call.Tool, "conversation": call.ConversationID}, nil)
	}))

	fmt.Println(send(r, "/median", lookupCall))
	// Output: 200 {"result":{"conversation":"conv_1","tool":"lookup_order"}}
}

// Mount with a chain: an authorization handler, then the dispatcher. The
// first handler that answers ends the chain; refuse the contract's way,
// with Respond and protocol.Refuse. Authorize on the visitor's ExternalID,
// which is set only when Median verified it.
func ExampleMount_chain() {
	authorize := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		call, _ := chimedian.CallFrom(req)
		if _, ok := call.Visitor.ExternalID(); !ok {
			chimedian.Respond(w, req, nil, protocol.Refuse("not_signed_in", "Ask the customer to sign in first."))
		}
	})
	dispatch := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		call, _ := chimedian.CallFrom(req)
		id, _ := call.Visitor.ExternalID()
		var in OrderIn
		if err := call.BindInput(&in); err != nil {
			chimedian.Respond(w, req, nil, err)
			return
		}
		chimedian.Respond(w, req, map[string]string{"customer": id, "order": in.OrderID}, nil)
	})
	r := chi.NewRouter()
	chimedian.Mount(r, "/median", newHandler(), authorize, dispatch)

	fmt.Println(send(r, "/median", `{"tool":"lookup_order","toolCallId":"call_4","input":{"orderId":"A-1001"},
		"context":{"conversationId":"conv_1","risk":"low","visitor":{"verified":false,"email":"ada@example.com"}}}`))
	fmt.Println(send(r, "/median", `{"tool":"lookup_order","toolCallId":"call_5","input":{"orderId":"A-1001"},
		"context":{"conversationId":"conv_1","risk":"low","visitor":{"verified":true,"externalId":"user_7"}}}`))
	// Output:
	// 200 {"result":{"ok":false,"allowed":false,"outcome":"blocked","reason":"not_signed_in","detail":"Ask the customer to sign in first."}}
	// 200 {"result":{"customer":"user_7","order":"A-1001"}}
}

// Respond answers the call: an error is execution_failed. The agent reads
// the message of an error meant for it (a protocol.AgentError); of any
// other error only the tool's name and a reference to the log line that
// holds it.
func ExampleRespond() {
	r := chi.NewRouter()
	chimedian.Mount(r, "/median", newHandler(), http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		chimedian.Respond(w, req, nil, protocol.AgentErrorf("The order service is down; try again in a few minutes."))
	}))

	fmt.Println(send(r, "/median", lookupCall))
	// Output: 200 {"error":{"code":"execution_failed","message":"The order service is down; try again in a few minutes."}}
}

// send POSTs body to path as Median would, signed now, with an
// X-Request-Id, and returns the answer's status and body.
func send(h http.Handler, path, body string) string {
	key, err := protocol.ParseKey(exampleKey)
	if err != nil {
		log.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Median-Signature", key.Sign(time.Now(), []byte(body)))
	req.Header.Set("X-Request-Id", "req-42")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return fmt.Sprint(w.Code, " ", w.Body.String())
}
