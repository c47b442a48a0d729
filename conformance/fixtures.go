package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/median-go/median/protocol"
)

// FixtureTools returns the library's own test tools, fresh on every call:
//
//   - echo: returns {"message": input.message}.
//   - strict: a schema with required fields, an enum and a minimum
//     ({"plan": "free"|"pro", "seats": integer >= 1}); returns its input.
//   - fail: returns an error (answered execution_failed).
//   - panic: panics (answered execution_failed).
//   - slow: sleeps input.ms milliseconds (at most 2000) but returns as soon
//     as its context ends.
//   - refuse: refuses not_signed_in unless the visitor is verified.
//   - counter: returns {"run": n}, n counting its runs (for replay checks).
//   - refund: declared high, so it runs only on an approved call at high
//     (the risk floor); returns {"orderId": input.orderId, "refunded": true}
//     and changes nothing.
//
// Adapters' and examples' tests mount them and run the suite with
// [FixtureSamples].
func FixtureTools() []*protocol.Tool {
	var runs atomic.Int64
	type message struct {
		Message string `json:"message"`
	}
	type plan struct {
		Plan  string `json:"plan"`
		Seats int    `json:"seats"`
	}
	type sleep struct {
		Ms int `json:"ms"`
	}
	type none struct{}
	type order struct {
		OrderID string `json:"orderId"`
	}
	type refund struct {
		OrderID  string `json:"orderId"`
		Refunded bool   `json:"refunded"`
	}
	return []*protocol.Tool{
		protocol.NewTool("echo", protocol.RiskLow, "Returns the message it was given (conformance fixture).",
			func(_ context.Context, c protocol.ToolCall[message]) (message, error) { return c.Input, nil }),
		protocol.NewTool("strict", protocol.RiskMedium, "Checks a plan change against a strict schema (conformance fixture).",
			func(_ context.Context, c protocol.ToolCall[plan]) (plan, error) { return c.Input, nil },
			protocol.WithInputSchema(json.RawMessage(`{"type":"object","properties":{"plan":{"type":"string","enum":["free","pro"]},"seats":{"type":"integer","minimum":1}},"required":["plan","seats"],"additionalProperties":false}`))),
		protocol.NewTool("fail", protocol.RiskLow, "Always fails (conformance fixture).",
			func(context.Context, protocol.ToolCall[none]) (none, error) {
				return none{}, errors.New("the order service is unavailable (conformance fixture)")
			}),
		protocol.NewTool("panic", protocol.RiskLow, "Always panics (conformance fixture).",
			func(context.Context, protocol.ToolCall[none]) (none, error) {
				panic("conformance fixture panic")
			}),
		protocol.NewTool("slow", protocol.RiskLow, "Sleeps for ms milliseconds, honouring cancellation (conformance fixture).",
			func(ctx context.Context, c protocol.ToolCall[sleep]) (sleep, error) {
				t := time.NewTimer(time.Duration(c.Input.Ms) * time.Millisecond)
				defer t.Stop()
				select {
				case <-t.C:
					return c.Input, nil
				case <-ctx.Done():
					return sleep{}, fmt.Errorf("slow: %w", ctx.Err())
				}
			},
			protocol.WithInputSchema(json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":2000}},"required":["ms"]}`))),
		protocol.NewTool("refuse", protocol.RiskLow, "Lists orders for a signed-in visitor, refuses others (conformance fixture).",
			func(_ context.Context, c protocol.ToolCall[none]) (any, error) {
				if _, ok := c.Visitor.ExternalID(); !ok {
					return nil, protocol.Refuse("not_signed_in", "Sign in to see your orders.")
				}
				return map[string]any{"orders": []string{}}, nil
			}),
		protocol.NewTool("counter", protocol.RiskLow, "Counts its runs (conformance fixture).",
			func(context.Context, protocol.ToolCall[none]) (map[string]int64, error) {
				return map[string]int64{"run": runs.Add(1)}, nil
			}),
		protocol.NewTool("refund", protocol.RiskHigh, "Refunds an order once a teammate approved it; changes nothing (conformance fixture).",
			func(_ context.Context, c protocol.ToolCall[order]) (refund, error) {
				return refund{OrderID: c.Input.OrderID, Refunded: true}, nil
			},
			protocol.WithInputSchema(json.RawMessage(`{"type":"object","properties":{"orderId":{"type":"string","minLength":1}},"required":["orderId"]}`))),
	}
}

// FixtureSamples returns samples for every tool of [FixtureTools], so a
// run against an endpoint offering them exercises every case.
func FixtureSamples() []ToolSamples {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	return []ToolSamples{
		{
			Tool:  "echo",
			Input: raw(`{"message":"hello"}`),
			Check: func(result json.RawMessage) error {
				var got struct{ Message string }
				if err := json.Unmarshal(result, &got); err != nil || got.Message != "hello" {
					return fmt.Errorf(`want {"message":"hello"}, got %s`, result)
				}
				return nil
			},
			InvalidInputs: []json.RawMessage{raw(`{"message":5}`), raw(`{}`)},
		},
		{
			Tool:    "strict",
			Input:   raw(`{"plan":"pro","seats":3}`),
			Visitor: Visitor{Verified: true, ExternalID: "user_7", Email: "ada@example.com", Name: "Ada"},
			InvalidInputs: []json.RawMessage{
				raw(`{"plan":"gold","seats":3}`),
				raw(`{"plan":"pro","seats":0}`),
				raw(`{"plan":"pro"}`),
				raw(`{"plan":"pro","seats":"three"}`),
			},
		},
		{Tool: "slow", Input: raw(`{"ms":5}`), InvalidInputs: []json.RawMessage{raw(`{"ms":-1}`)}},
		{Tool: "refuse", Expect: ExpectRefusal},
		{Tool: "refuse", Visitor: Visitor{Verified: true, ExternalID: "user_7"}},
		{Tool: "fail", Expect: ExpectFailure},
		{Tool: "panic", Expect: ExpectPanic},
		{Tool: "counter", CountsRuns: true, Risk: "high", ApprovedBy: "A teammate"},
		{
			Tool:          "refund",
			Input:         raw(`{"orderId":"A-1001"}`),
			Check:         func(result json.RawMessage) error { return wantJSON(result, `{"orderId":"A-1001","refunded":true}`) },
			InvalidInputs: []json.RawMessage{raw(`{"orderId":""}`)},
		},
	}
}

// wantJSON reports whether got is the JSON value want.
func wantJSON(got json.RawMessage, want string) error {
	var g, w any
	if json.Unmarshal(got, &g) != nil || json.Unmarshal([]byte(want), &w) != nil || !reflect.DeepEqual(g, w) {
		return fmt.Errorf("want %s, got %s", want, got)
	}
	return nil
}
