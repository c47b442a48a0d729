package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/median-go/median/conformance/agent"
	"github.com/median-go/median/conformance/internal/answerjson"
	"github.com/median-go/median/internal/base/chars"
	"github.com/median-go/median/protocol"
)

// Reply is the answer to one tool call sent by [CallTool] or [Call],
// decoded: exactly one of Result (the tool ran and did not refuse),
// Refusal and Error holds the answer.
type Reply[Out any] struct {
	// Result is the tool's result, decoded into Out, when the answer is
	// {"result": …} and the result is not a refusal. It is Out's zero
	// value otherwise.
	Result Out

	// Refusal is set when the tool declined: the result is a refusal
	// object (docs/PROTOCOL.md §3.1), the risk floor's approval_required
	// (§9) included.
	Refusal *Refusal

	// Error is set when the answer is {"error": …}: a refusal of the
	// request (invalid_input, unknown_tool, a signature code, …) or
	// execution_failed (the tool returned an error or panicked). Its Code
	// is a protocol.Code: compare it with the constants,
	// assert.Equal(t, protocol.CodeInvalidInput, r.Error.Code), not with a
	// plain string, which testify sees as another type.
	Error *protocol.Error

	// Status is the HTTP status, Header the answer's headers and Raw its
	// body as received.
	Status int
	Header http.Header
	Raw    []byte

	// View is what Median's agent gets from the answer (docs/PROTOCOL.md
	// §11): the text it reads (the result's JSON without the widget hints,
	// cut to 4,000 characters, or the error's message), the widget's
	// button and highlight, and what it is told. Assert on it to test what
	// the agent will read:
	//
	//	assert.Equal(t, "/orders/A-1001", r.View.Button)
	//	assert.False(t, r.View.Cut, "the agent would not read all of it")
	View agent.View

	// ToolCallID is the toolCallId the call was sent with. To check what a
	// repeated call gets, send the same sample again with ToolCallID set to
	// it: the body is then the same (docs/PROTOCOL.md §8).
	ToolCallID string
}

// Refusal is a refusal result (docs/PROTOCOL.md §3.1) as the tool sent it:
// a field the tool left out is nil or "" (the contract's default reason is
// "tool_refused").
type Refusal struct {
	OK      *bool  `json:"ok,omitempty"`      // only ever false when sent
	Known   *bool  `json:"known,omitempty"`   // only ever false when sent
	Allowed *bool  `json:"allowed,omitempty"` // only ever false when sent
	Outcome string `json:"outcome,omitempty"` // "blocked" or "unknown"
	Reason  string `json:"reason,omitempty"`  // a short code, such as "not_signed_in"
	Detail  string `json:"detail,omitempty"`  // one line the agent can use
}

// CallTool sends one signed call of a tool to target (a handler, an app or
// a URL: whatever its Do reaches), as call describes it, and returns the
// answer decoded, for a test of one of your own tools with testify's
// require and assert or plain testing:
//
//	r := conformance.CallTool[Order](t, target, conformance.ToolSample{
//		Tool:    "lookup_order",
//		Input:   LookupInput{OrderID: "A-1001"},
//		Visitor: conformance.Visitor{Verified: true, ExternalID: "user_7"},
//	})
//	require.Nil(t, r.Error)
//	require.Nil(t, r.Refusal)
//	assert.Equal(t, "A-1001", r.Result.OrderID)
//
// The call is signed with target.Key at target.Now and sent as Median
// sends an approved call: see [ToolSample] for the defaults of its context.
// The fields of call that tell the suite what to expect (Expect, Check,
// InvalidInputs, SideEffects, CountsRuns) are not used: every answer of the
// contract, errors included, is returned for you to check. CallTool stops
// the test (t.Fatal, at your line) when the call cannot be sent, gets no
// answer, the answer is not the contract's (docs/PROTOCOL.md §3: its
// Content-Type, its shape, a refusal's fields), or its result does not
// decode into Out. [Call] is the same without the testing package.
func CallTool[Out any](t testing.TB, target Target, call ToolSample) Reply[Out] {
	t.Helper()
	r, err := Call[Out](t.Context(), target, call)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Call is [CallTool] without the testing package: it returns an error
// where CallTool stops the test, with the Reply filled as far as the
// answer allowed (Status, Header and Raw when one came back).
func Call[Out any](ctx context.Context, target Target, call ToolSample) (Reply[Out], error) {
	var r Reply[Out]
	failf := func(format string, a ...any) (Reply[Out], error) {
		return r, fmt.Errorf("conformance: call of %s: %s", call.Tool, fmt.Sprintf(format, a...))
	}
	if err := target.validate(); err != nil {
		return r, err
	}
	if call.Tool == "" {
		return r, fmt.Errorf("conformance: call: ToolSample.Tool is empty: name the tool to call")
	}
	if _, err := protocol.ParseKey(target.Key); err != nil {
		return failf("Target.Key is not usable: %v", err)
	}
	raw, err := encodeInput(call.Input)
	if err != nil {
		return failf("%v", err)
	}
	s := newSession(ctx, target, 0)
	body := s.sampleCall(call, raw)
	r.ToolCallID = body.id
	x := s.post(body.bytes())
	if x.err != nil {
		return failf("no answer: %v", x.err)
	}
	r.Status, r.Header, r.Raw = x.status, x.header, x.resp
	r.View = agent.Of(x.status, x.header.Get("Content-Type"), x.resp)
	if x.tooLong {
		return failf("the answer is longer than %d bytes", readLimit)
	}
	a, err := x.answer()
	switch {
	case err != nil:
		return failf("status %d: not the contract's answer: %v", x.status, err)
	case a.IsError():
		r.Error = &protocol.Error{Status: x.status, Code: protocol.Code(a.Code), Message: a.Message}
	case answerjson.IsRefusal(a.Result):
		if err := answerjson.CheckRefusal(a.Result); err != nil {
			return failf("status %d: a refusal whose fields are not the contract's (docs/PROTOCOL.md §3.1): %v", x.status, err)
		}
		r.Refusal = new(Refusal)
		if err := json.Unmarshal(a.Result, r.Refusal); err != nil {
			return failf("a refusal whose fields are not the contract's (docs/PROTOCOL.md §3.1): %v: %s", err, chars.Line(a.Result, 200))
		}
	default:
		if err := json.Unmarshal(a.Result, &r.Result); err != nil {
			return failf("the result does not decode into %T: %v: %s", r.Result, err, chars.Line(a.Result, 200))
		}
	}
	return r, nil
}
