package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

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
	// execution_failed (the tool returned an error or panicked).
	Error *ErrorAnswer

	// Status is the HTTP status, Header the answer's headers and Raw its
	// body as received.
	Status int
	Header http.Header
	Raw    []byte

	// ToolCallID is the toolCallId the call was sent with: call it again
	// with WithToolCallID to check what a repeated call gets.
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

// ErrorAnswer is the error of an {"error": {"code": …, "message": …}}
// answer (docs/PROTOCOL.md §3, §7). Code is a protocol.Code: compare it
// with the constants, assert.Equal(t, protocol.CodeInvalidInput,
// r.Error.Code), not with a plain string, which testify sees as another
// type.
type ErrorAnswer struct {
	Code    protocol.Code `json:"code"`    // the error code, such as protocol.CodeInvalidInput
	Message string        `json:"message"` // the endpoint's explanation, for a person
}

// CallOption sets a field of the call [CallTool] and [Call] send.
type CallOption func(*callConfig)

type callConfig struct {
	visitor        Visitor
	risk           *string
	approvedBy     *string
	toolCallID     string
	conversationID string
}

// WithVisitor sends the call for v; the default is an anonymous,
// unverified visitor. Tools authorize on v.ExternalID, sent only when
// v.Verified is true.
func WithVisitor(v Visitor) CallOption { return func(c *callConfig) { c.visitor = v } }

// WithRisk sends the call at risk ("low", "medium", "reviewed", "high";
// anything else is sent as is, to test a refusal). The default is the risk
// the endpoint's manifest declares for the tool (a signed GET before the
// call), or "low" when the manifest does not list it.
func WithRisk(risk string) CallOption { return func(c *callConfig) { c.risk = &risk } }

// WithApprovedBy sends approvedBy name; an empty name sends none. The
// default is "A teammate" (what Median sends when no name is on record)
// when the risk sent is reviewed or high, and none otherwise: the call
// Median sends once it was approved.
func WithApprovedBy(name string) CallOption { return func(c *callConfig) { c.approvedBy = &name } }

// WithToolCallID sends the call with toolCallId id instead of a fresh
// "call_" id, for example to repeat a call (docs/PROTOCOL.md §8).
func WithToolCallID(id string) CallOption { return func(c *callConfig) { c.toolCallID = id } }

// WithConversationID sends the call in conversation id instead of a fresh
// one.
func WithConversationID(id string) CallOption { return func(c *callConfig) { c.conversationID = id } }

// CallTool sends one signed call of tool with input to target (a handler,
// an app or a URL: whatever its Do reaches) and returns the answer
// decoded, for a test of one of your own tools with testify's require and
// assert or plain testing:
//
//	r := conformance.CallTool[Order](t, target, "lookup_order", LookupInput{OrderID: "A-1001"},
//		conformance.WithVisitor(conformance.Visitor{Verified: true, ExternalID: "user_7"}))
//	require.Nil(t, r.Error)
//	require.Nil(t, r.Refusal)
//	assert.Equal(t, "A-1001", r.Result.OrderID)
//
// input is encoded with encoding/json (a json.RawMessage or []byte is sent
// as is, nil as {}). The call is signed with target.Key at target.Now and
// sent as Median sends an approved call: see [WithRisk] and
// [WithApprovedBy] for the defaults. CallTool stops the test (t.Fatal, at
// your line) when the call cannot be sent, gets no answer, the answer is
// not the contract's JSON or its result does not decode into Out; every
// answer of the contract, errors included, is returned for you to check.
// [Call] is the same without the testing package.
func CallTool[Out any](t testing.TB, target Target, tool string, input any, opts ...CallOption) Reply[Out] {
	t.Helper()
	r, err := Call[Out](t.Context(), target, tool, input, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Call is [CallTool] without the testing package: it returns an error
// where CallTool stops the test, with the Reply filled as far as the
// answer allowed (Status, Header and Raw when one came back).
func Call[Out any](ctx context.Context, target Target, tool string, input any, opts ...CallOption) (Reply[Out], error) {
	var r Reply[Out]
	failf := func(format string, a ...any) (Reply[Out], error) {
		return r, fmt.Errorf("conformance: call of %s: %s", tool, fmt.Sprintf(format, a...))
	}
	if err := target.validate(); err != nil {
		return r, err
	}
	if _, err := protocol.ParseKey(target.Key); err != nil {
		return failf("Target.Key is not usable: %v", err)
	}
	raw, err := encodeInput(input)
	if err != nil {
		return failf("%v", err)
	}
	var cfg callConfig
	for _, o := range opts {
		o(&cfg)
	}
	s := newSession(ctx, target, 0)
	risk := s.declaredRiskOf(tool, cfg.risk)
	r.ToolCallID = cfg.toolCallID
	if r.ToolCallID == "" {
		r.ToolCallID = newID("call_", 16)
	}
	conv := cfg.conversationID
	if conv == "" {
		conv = newID("conv_", 8)
	}
	approvedBy := ""
	switch {
	case cfg.approvedBy != nil:
		approvedBy = *cfg.approvedBy
	case needsApproval(risk):
		approvedBy = approvedByDefault
	}
	body, err := json.Marshal(map[string]any{
		"tool":       tool,
		"toolCallId": r.ToolCallID,
		"input":      raw,
		"context":    callContext(conv, risk, approvedBy, cfg.visitor),
	})
	if err != nil {
		return failf("encoding the call: %v", err)
	}
	x := s.post(body)
	if x.err != nil {
		return failf("no answer: %v", x.err)
	}
	r.Status, r.Header, r.Raw = x.status, x.header, x.resp
	if x.tooLong {
		return failf("the answer is longer than %d bytes", readLimit)
	}
	a, err := parseAnswer(x.resp)
	switch {
	case err != nil:
		return failf("status %d: not the contract's answer: %v", x.status, err)
	case a.isError():
		r.Error = &ErrorAnswer{Code: protocol.Code(a.code), Message: a.message}
	case isRefusal(a.result):
		r.Refusal = new(Refusal)
		if err := json.Unmarshal(a.result, r.Refusal); err != nil {
			return failf("a refusal whose fields are not the contract's (§3.1): %v: %s", err, snippet(a.result, 200))
		}
	default:
		if err := json.Unmarshal(a.result, &r.Result); err != nil {
			return failf("the result does not decode into %T: %v: %s", r.Result, err, snippet(a.result, 200))
		}
	}
	return r, nil
}

// declaredRiskOf returns *risk when set, else the tool's declared risk.
func (s *session) declaredRiskOf(tool string, risk *string) string {
	if risk != nil {
		return *risk
	}
	return s.declaredRisk(tool)
}

// encodeInput returns input as JSON: raw bytes as they are, nil as {}.
func encodeInput(input any) (json.RawMessage, error) {
	var raw []byte
	switch v := input.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		raw = v
	case []byte:
		raw = v
	default:
		b, err := json.Marshal(input)
		if err != nil {
			return nil, fmt.Errorf("encoding the input: %w", err)
		}
		return b, nil
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("the input is not valid JSON: %s", snippet(raw, 80))
	}
	return raw, nil
}
