package hertzmedian_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/app/server"

	"github.com/median-go/median/hertzmedian"
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

// newServer is a Hertz server as an app builds it (server.Default also
// adds recovery), quiet about its routes. Served with hz.Spin().
func newServer() *server.Hertz {
	return server.New(server.WithHostPorts("127.0.0.1:8080"), server.WithDisablePrintRoute(true))
}

const lookupCall = `{"tool":"lookup_order","toolCallId":"call_1","input":{"orderId":"A-1001"},
	"context":{"conversationId":"conv_1","risk":"low","visitor":{"verified":true,"externalId":"user_7"}}}`

// Mount serves the endpoint on a group; the Handler's tools answer.
func ExampleMount() {
	hz := newServer()
	hertzmedian.Mount(hz.Group("/api"), "/median", newHandler())

	fmt.Println(send(hz, "/api/median", lookupCall))
	fmt.Println(send(hz, "/api/median/", strings.Replace(lookupCall, "call_1", "call_2", 1)))
	// Output:
	// 200 {"result":{"orderId":"A-1001","status":"shipped"}}
	// 200 {"result":{"orderId":"A-1001","status":"shipped"}}
}

// Mount with a handler: the middleware verifies every request and answers
// all but verified tool calls, which your handler answers with Respond.
func ExampleMount_handler() {
	hz := newServer()
	hertzmedian.Mount(hz.Group("/api"), "/median", newHandler(), func(ctx context.Context, c *app.RequestContext) {
		call, _ := hertzmedian.CallFrom(ctx)
		if call.Tool != "lookup_order" {
			hertzmedian.Respond(ctx, c, nil, protocol.CodeUnknownTool)
			return
		}
		var in OrderIn
		if err := call.BindInput(&in); err != nil {
			hertzmedian.Respond(ctx, c, nil, err) // answered 400 invalid_input
			return
		}
		hertzmedian.Respond(ctx, c, Order{OrderID: in.OrderID, Status: "in transit"}, nil)
	})

	fmt.Println(send(hz, "/api/median", lookupCall))
	// Output: 200 {"result":{"orderId":"A-1001","status":"in transit"}}
}

// New is the handler Mount registers. What earlier middleware stores with
// c.Set reaches the tool's ctx.
func ExampleNew() {
	whoami := protocol.NewTool("request_id", protocol.RiskLow, "Tells the request's id.",
		func(ctx context.Context, _ protocol.ToolCall[struct{}]) (string, error) {
			id, _ := ctx.Value("request_id").(string)
			return id, nil
		})
	h, err := protocol.New(protocol.Config{Keys: []string{exampleKey}, Tools: []*protocol.Tool{whoami}})
	if err != nil {
		log.Fatal(err)
	}
	hz := newServer()
	hz.Use(func(ctx context.Context, c *app.RequestContext) {
		c.Set("request_id", c.Request.Header.Get("X-Request-Id"))
		c.Next(ctx)
	})
	hz.Any("/median", hertzmedian.New(h)) // Mount also registers "/median/"

	fmt.Println(send(hz, "/median", `{"tool":"request_id","toolCallId":"call_3","input":{},
		"context":{"conversationId":"conv_1","risk":"low","visitor":{"verified":false}}}`))
	// Output: 200 {"result":"req-42"}
}

// Middleware in a chain of your own: it answers the manifest, refusals
// and the 405 itself, and aborts the chain.
func ExampleMiddleware() {
	hz := newServer()
	hz.Any("/median", hertzmedian.Middleware(newHandler()), func(ctx context.Context, c *app.RequestContext) {
		hertzmedian.Respond(ctx, c, "reached the handler", nil)
	})

	fmt.Println(send(hz, "/median", lookupCall))
	req := httptest.NewRequest(http.MethodPost, "/median", strings.NewReader(lookupCall)) // unsigned
	res, err := hertzmedian.Do(hz.Engine)(req)
	if err != nil {
		log.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Println(res.StatusCode, strings.Contains(string(body), `"code":"missing_signature"`))
	// Output:
	// 200 {"result":"reached the handler"}
	// 401 true
}

// CallFrom gives the handler behind the middleware the verified call, on
// the ctx Hertz passes it.
func ExampleCallFrom() {
	hz := newServer()
	hertzmedian.Mount(hz, "/median", newHandler(), func(ctx context.Context, c *app.RequestContext) {
		call, _ := hertzmedian.CallFrom(ctx)
		hertzmedian.Respond(ctx, c, map[string]string{"tool": call.Tool, "conversation": call.ConversationID}, nil)
	})

	fmt.Println(send(hz, "/median", lookupCall))
	// Output: 200 {"result":{"conversation":"conv_1","tool":"lookup_order"}}
}

// Mount with a chain: an authorization handler, then the dispatcher. The
// first handler that answers ends the chain; refuse the contract's way,
// with Respond and protocol.Refuse. Authorize on the visitor's ExternalID,
// which is set only when Median verified it.
func ExampleMount_chain() {
	authorize := func(ctx context.Context, c *app.RequestContext) {
		call, _ := hertzmedian.CallFrom(ctx)
		if _, ok := call.Visitor.ExternalID(); !ok {
			hertzmedian.Respond(ctx, c, nil, protocol.Refuse("not_signed_in", "Ask the customer to sign in first."))
		}
	}
	dispatch := func(ctx context.Context, c *app.RequestContext) {
		call, _ := hertzmedian.CallFrom(ctx)
		id, _ := call.Visitor.ExternalID()
		var in OrderIn
		if err := call.BindInput(&in); err != nil {
			hertzmedian.Respond(ctx, c, nil, err)
			return
		}
		hertzmedian.Respond(ctx, c, map[string]string{"customer": id, "order": in.OrderID}, nil)
	}
	hz := newServer()
	hertzmedian.Mount(hz, "/median", newHandler(), authorize, dispatch)

	fmt.Println(send(hz, "/median", `{"tool":"lookup_order","toolCallId":"call_4","input":{"orderId":"A-1001"},
		"context":{"conversationId":"conv_1","risk":"low","visitor":{"verified":false,"email":"ada@example.com"}}}`))
	fmt.Println(send(hz, "/median", `{"tool":"lookup_order","toolCallId":"call_5","input":{"orderId":"A-1001"},
		"context":{"conversationId":"conv_1","risk":"low","visitor":{"verified":true,"externalId":"user_7"}}}`))
	// Output:
	// 200 {"result":{"ok":false,"allowed":false,"outcome":"blocked","reason":"not_signed_in","detail":"Ask the customer to sign in first."}}
	// 200 {"result":{"customer":"user_7","order":"A-1001"}}
}

// Respond answers the call: an error made for the agent
// (protocol.AgentErrorf) is execution_failed with its message, which the
// agent reads; any other error's text goes only to the log.
func ExampleRespond() {
	hz := newServer()
	hertzmedian.Mount(hz, "/median", newHandler(), func(ctx context.Context, c *app.RequestContext) {
		hertzmedian.Respond(ctx, c, nil, protocol.AgentErrorf("The order service is down; try again in a few minutes."))
	})

	fmt.Println(send(hz, "/median", lookupCall))
	// Output: 200 {"error":{"code":"execution_failed","message":"The order service is down; try again in a few minutes."}}
}

// Do runs a Hertz engine in memory for tests, through Hertz's own test
// helper: here it sends a signed call, and it is what
// conformance.Target.Do takes.
func ExampleDo() {
	hz := newServer()
	hertzmedian.Mount(hz, "/api/median", newHandler())
	do := hertzmedian.Do(hz.Engine) // in tests: conformance.Target{Do: do, URL: "http://example.test/api/median", Key: key, Replay: true}

	key, err := protocol.ParseKey(exampleKey)
	if err != nil {
		log.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/api/median", strings.NewReader(lookupCall))
	req.Header.Set("Median-Signature", key.Sign(time.Now(), []byte(lookupCall)))
	res, err := do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Println(res.StatusCode, res.Header.Get("Content-Type"), string(body))
	// Output: 200 application/json {"result":{"orderId":"A-1001","status":"shipped"}}
}

// send POSTs body to path as Median would, signed now, with an
// X-Request-Id, through hz in memory, and returns the answer's status and
// body.
func send(hz *server.Hertz, path, body string) string {
	key, err := protocol.ParseKey(exampleKey)
	if err != nil {
		log.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Median-Signature", key.Sign(time.Now(), []byte(body)))
	req.Header.Set("X-Request-Id", "req-42")
	res, err := hertzmedian.Do(hz.Engine)(req)
	if err != nil {
		log.Fatal(err)
	}
	defer res.Body.Close()
	answer, err := io.ReadAll(res.Body)
	if err != nil {
		log.Fatal(err)
	}
	return fmt.Sprint(res.StatusCode, " ", string(answer))
}
