package ratelimit_test

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/ratelimit"
)

// lookup_order may be called 20 times a minute in each conversation; the
// 21st call in a minute is answered with a refusal the agent can relay.
func ExampleNew() {
	limit, err := ratelimit.New(ratelimit.Config{
		Limit: ratelimit.Limit{Calls: 20, Per: time.Minute},
		By:    ratelimit.PerConversation,
	})
	if err != nil {
		panic(err) // a zero or negative rate
	}
	lookup := protocol.NewTool("lookup_order", protocol.RiskLow, "Looks up an order.",
		func(ctx context.Context, c protocol.ToolCall[orderInput]) (string, error) { return "shipped", nil },
		protocol.WithInterceptors(limit)) // or Config.Interceptors, for every tool
	h, err := protocol.New(protocol.Config{Keys: []string{testKey}, Tools: []*protocol.Tool{lookup}})
	if err != nil {
		panic(err)
	}
	key, _ := protocol.ParseKey(testKey)
	var last protocol.Response
	for i := range 21 {
		body := fmt.Appendf(nil, `{"tool":"lookup_order","toolCallId":"call_%d","input":{"orderId":"A1"},"context":{"conversationId":"conv_42","risk":"low","visitor":{"verified":false}}}`, i)
		last = h.Serve(context.Background(), protocol.Request{Method: http.MethodPost, Signature: key.Sign(time.Now(), body), BodyBytes: body})
	}
	fmt.Println(last.Status, string(last.Body))
	// Output:
	// 200 {"result":{"ok":false,"allowed":false,"outcome":"blocked","reason":"rate_limited","detail":"lookup_order was called too often in this conversation, so it was not carried out. Try again in about 3 seconds."}}
}

// lookup_order has a cap of its own, 3 calls a minute in each
// conversation; every other tool has 20. Config.Tools is keyed by the tool
// the Handler runs, so the cap cannot name a tool that does not exist.
func ExampleNew_perTool() {
	lookup := protocol.NewTool("lookup_order", protocol.RiskLow, "Looks up an order.",
		func(ctx context.Context, c protocol.ToolCall[orderInput]) (string, error) { return "shipped", nil })
	track := protocol.NewTool("track_parcel", protocol.RiskLow, "Tracks a parcel.",
		func(ctx context.Context, c protocol.ToolCall[orderInput]) (string, error) { return "in transit", nil })
	limit, err := ratelimit.New(ratelimit.Config{
		Limit: ratelimit.Limit{Calls: 20, Per: time.Minute},
		Tools: map[*protocol.Tool]ratelimit.Limit{lookup: {Calls: 3, Per: time.Minute}},
	})
	if err != nil {
		panic(err) // a nil tool, a tool with problems, a zero or negative rate
	}
	h, err := protocol.New(protocol.Config{Keys: []string{testKey}, Tools: []*protocol.Tool{lookup, track},
		Interceptors: []protocol.Interceptor{limit}})
	if err != nil {
		panic(err)
	}
	key, _ := protocol.ParseKey(testKey)
	var last protocol.Response
	for i := range 4 {
		body := fmt.Appendf(nil, `{"tool":"lookup_order","toolCallId":"call_%d","input":{"orderId":"A1"},"context":{"conversationId":"conv_42","risk":"low","visitor":{"verified":false}}}`, i)
		last = h.Serve(context.Background(), protocol.Request{Method: http.MethodPost, Signature: key.Sign(time.Now(), body), BodyBytes: body})
	}
	fmt.Println(last.Status, string(last.Body))
	// Output:
	// 200 {"result":{"ok":false,"allowed":false,"outcome":"blocked","reason":"rate_limited","detail":"lookup_order was called too often in this conversation, so it was not carried out. Try again in about 20 seconds."}}
}
