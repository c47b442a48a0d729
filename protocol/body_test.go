package protocol

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fullCall is a ToolCall with every field, as PROTOCOL.md §2 shows it.
const fullCall = `{
  "tool": "lookup_order",
  "toolCallId": "call_0123456789abcdef0123456789abcdef",
  "input": {"orderId": "A-1001"},
  "context": {
    "conversationId": "conv_42",
    "risk": "reviewed",
    "visitor": {"verified": true, "externalId": "user_7", "email": "a@b.c", "name": "Ada"},
    "approvedBy": "The reviewer"
  }
}`

// mutate decodes fullCall, applies f and re-encodes it.
func mutate(t *testing.T, f func(m map[string]any)) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(fullCall), &m))
	f(m)
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return string(b)
}

func ctxOf(m map[string]any) map[string]any     { return m["context"].(map[string]any) }
func visitorOf(m map[string]any) map[string]any { return ctxOf(m)["visitor"].(map[string]any) }

func TestDecodeBodyToolCall(t *testing.T) {
	op, call, err := decodeBody([]byte(fullCall))
	require.NoError(t, err)
	assert.Empty(t, op)
	require.NotNil(t, call)
	assert.Equal(t, "lookup_order", call.Tool)
	assert.Equal(t, "call_0123456789abcdef0123456789abcdef", call.ToolCallID)
	assert.Equal(t, "conv_42", call.ConversationID)
	assert.Equal(t, RiskReviewed, call.Risk)
	assert.Equal(t, "The reviewer", call.ApprovedBy)
	assert.JSONEq(t, `{"orderId": "A-1001"}`, string(call.RawInput))
	assert.Equal(t, `{"orderId": "A-1001"}`, string(call.RawInput), "input kept byte for byte")
	assert.True(t, call.Visitor.Verified)
	id, ok := call.Visitor.ExternalID()
	assert.True(t, ok)
	assert.Equal(t, "user_7", id)
	assert.Equal(t, "a@b.c", call.Visitor.UnverifiedEmail)
	assert.Equal(t, "Ada", call.Visitor.UnverifiedName)
}

func TestDecodeBodyOptionalAndOpaque(t *testing.T) {
	for _, id := range []string{"call_0123456789abcdef0123456789abcdef", "apr_9f8e7d", "test_6ba7b810-9dad-11d1-80b4-00c04fd430c8", "anything at all ✓"} {
		body := mutate(t, func(m map[string]any) {
			m["toolCallId"] = id
			delete(ctxOf(m), "approvedBy")
			v := visitorOf(m)
			delete(v, "externalId")
			delete(v, "email")
			delete(v, "name")
			v["verified"] = false
		})
		_, call, err := decodeBody([]byte(body))
		require.NoError(t, err, id)
		assert.Equal(t, id, call.ToolCallID, "toolCallId is opaque")
		assert.Empty(t, call.ApprovedBy)
		_, ok := call.Visitor.ExternalID()
		assert.False(t, ok)
	}
	for _, risk := range []Risk{RiskLow, RiskMedium, RiskReviewed, RiskHigh} {
		_, call, err := decodeBody([]byte(mutate(t, func(m map[string]any) { ctxOf(m)["risk"] = string(risk) })))
		require.NoError(t, err)
		assert.Equal(t, risk, call.Risk)
	}
}

func TestDecodeBodyUnknownFieldsIgnored(t *testing.T) {
	body := mutate(t, func(m map[string]any) {
		m["traceId"] = "abc"
		m["future"] = map[string]any{"x": []any{1, 2}}
		ctxOf(m)["locale"] = "fr"
		visitorOf(m)["plan"] = "pro"
	})
	_, call, err := decodeBody([]byte(body))
	require.NoError(t, err)
	assert.Equal(t, "lookup_order", call.Tool)
}

// TestVisitorExternalIDOnlyWhenVerified: an externalId sent with
// verified=false is never exposed.
func TestVisitorExternalIDOnlyWhenVerified(t *testing.T) {
	body := mutate(t, func(m map[string]any) { visitorOf(m)["verified"] = false })
	_, call, err := decodeBody([]byte(body))
	require.NoError(t, err)
	id, ok := call.Visitor.ExternalID()
	assert.False(t, ok)
	assert.Empty(t, id)
	assert.Empty(t, call.Visitor.externalID, "not even kept")

	v := NewVisitor(false, "user_7", "e", "n")
	_, ok = v.ExternalID()
	assert.False(t, ok)
	v = NewVisitor(true, "user_7", "e", "n")
	id, ok = v.ExternalID()
	assert.True(t, ok)
	assert.Equal(t, "user_7", id)
	assert.Equal(t, "e", v.UnverifiedEmail)
	assert.Equal(t, "n", v.UnverifiedName)
	// Verified but no id: nothing to authorize on.
	_, ok = NewVisitor(true, "", "", "").ExternalID()
	assert.False(t, ok)
	// A Visitor built by hand with Verified flipped cannot invent an id.
	_, ok = Visitor{Verified: true}.ExternalID()
	assert.False(t, ok)
}

func TestDecodeBodyInvalid(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		field string // the message must name it
	}{
		{"not JSON", `tool=x`, "not valid JSON"},
		{"empty", ``, "not valid JSON"},
		{"truncated", `{"tool":"x"`, "not valid JSON"},
		{"trailing garbage", fullCall + `x`, "not valid JSON"},
		{"two objects", fullCall + fullCall, "not valid JSON"},
		{"array", `[1,2]`, "object"},
		{"string", `"hello"`, "object"},
		{"number", `42`, "object"},
		{"empty object", `{}`, "tool"},
		{"null", `null`, "tool"},
	}
	for _, field := range []struct{ path, name string }{
		{"", "tool"}, {"", "toolCallId"}, {"", "input"}, {"", "context"},
		{"context", "conversationId"}, {"context", "risk"}, {"context", "visitor"}, {"visitor", "verified"},
	} {
		full := field.name
		if field.path == "context" {
			full = "context." + field.name
		} else if field.path == "visitor" {
			full = "context.visitor." + field.name
		}
		get := func(m map[string]any) map[string]any {
			switch field.path {
			case "context":
				return ctxOf(m)
			case "visitor":
				return visitorOf(m)
			}
			return m
		}
		tests = append(tests,
			struct{ name, body, field string }{full + " missing", mutate(t, func(m map[string]any) { delete(get(m), field.name) }), full},
			struct{ name, body, field string }{full + " null", mutate(t, func(m map[string]any) { get(m)[field.name] = nil }), full},
			struct{ name, body, field string }{full + " wrong type (array)", mutate(t, func(m map[string]any) { get(m)[field.name] = []any{1} }), full},
		)
		wrong := any(7.0)
		if field.name == "verified" {
			wrong = "yes"
		}
		tests = append(tests, struct{ name, body, field string }{full + " wrong type (scalar)", mutate(t, func(m map[string]any) { get(m)[field.name] = wrong }), full})
	}
	tests = append(tests,
		struct{ name, body, field string }{"empty tool", mutate(t, func(m map[string]any) { m["tool"] = "" }), "tool"},
		struct{ name, body, field string }{"empty toolCallId", mutate(t, func(m map[string]any) { m["toolCallId"] = "" }), "toolCallId"},
		struct{ name, body, field string }{"input string", mutate(t, func(m map[string]any) { m["input"] = "{}" }), "input"},
		struct{ name, body, field string }{"risk unknown", mutate(t, func(m map[string]any) { ctxOf(m)["risk"] = "critical" }), "context.risk"},
		struct{ name, body, field string }{"risk upper case", mutate(t, func(m map[string]any) { ctxOf(m)["risk"] = "LOW" }), "context.risk"},
		struct{ name, body, field string }{"risk empty", mutate(t, func(m map[string]any) { ctxOf(m)["risk"] = "" }), "context.risk"},
		struct{ name, body, field string }{"approvedBy number", mutate(t, func(m map[string]any) { ctxOf(m)["approvedBy"] = 1 }), "context.approvedBy"},
		struct{ name, body, field string }{"externalId number", mutate(t, func(m map[string]any) { visitorOf(m)["externalId"] = 1 }), "context.visitor.externalId"},
		struct{ name, body, field string }{"email object", mutate(t, func(m map[string]any) { visitorOf(m)["email"] = map[string]any{} }), "context.visitor.email"},
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op, call, err := decodeBody([]byte(tt.body))
			require.Error(t, err)
			assert.Empty(t, op)
			assert.Nil(t, call)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, CodeInvalidBody, e.Code)
			assert.Equal(t, http.StatusBadRequest, e.Status)
			assert.Contains(t, e.Message, tt.field)
		})
	}
}

func TestDecodeBodyOps(t *testing.T) {
	op, call, err := decodeBody([]byte(`{"op":"diagnostics"}`))
	require.NoError(t, err)
	assert.Equal(t, opDiagnostics, op)
	assert.Nil(t, call)

	op, _, err = decodeBody([]byte(`{"op":"diagnostics","extra":1}`))
	require.NoError(t, err)
	assert.Equal(t, opDiagnostics, op)

	for _, body := range []string{
		`{"op":"reindex"}`, `{"op":"Diagnostics"}`, `{"op":""}`, `{"op":1}`, `{"op":true}`,
		`{"op":null}`, `{"op":["diagnostics"]}`, `{"op":{"name":"diagnostics"}}`,
		`{"op":"reindex","tool":"echo","toolCallId":"c","input":{},"context":{}}`,
	} {
		t.Run(body, func(t *testing.T) {
			_, _, err := decodeBody([]byte(body))
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, CodeUnknownOp, e.Code)
			assert.Equal(t, http.StatusBadRequest, e.Status)
			assert.Contains(t, e.Message, "op")
		})
	}
}

// TestBodyErrorsThroughServe checks a sample of the invalid_body and
// unknown_op rows through Serve and ServeHTTP.
func TestBodyErrorsThroughServe(t *testing.T) {
	h, _ := newHandler(t, Config{Tools: []*Tool{echoTool(nil)}})
	for body, code := range map[string]Code{
		`nope`:                         CodeInvalidBody,
		`[]`:                           CodeInvalidBody,
		`{"tool":"echo"}`:              CodeInvalidBody,
		`{"op":"reindex"}`:             CodeUnknownOp,
		`{"op":7}`:                     CodeUnknownOp,
		toolCall("missing", "c", `{}`): CodeUnknownTool,
		toolCall("echo", "c", `[1]`):   CodeInvalidBody,
		toolCall("echo", "c", `{}`):    CodeInvalidInput,
		strings.Replace(fullCall, "reviewed", "urgent", 1): CodeInvalidBody,
	} {
		requireError(t, h.Serve(context.Background(), post(body)), code.status(), code)
		requireError(t, serveHTTP(h, http.MethodPost, post(body).Signature, body), code.status(), code)
	}
}

// TestDecodeBodyNamesGivenTwice: a name given twice in the body is refused
// naming it; inside the input it is left to the schema check, which
// answers invalid_input after the tool lookup.
func TestDecodeBodyNamesGivenTwice(t *testing.T) {
	valid := `"toolCallId":"x","context":{"conversationId":"c","risk":"low","visitor":{"verified":true}}`
	for body, field := range map[string]string{
		`{"tool":"t","tool":"u","input":{},` + valid + `}`:                                                                                            "tool: given twice",
		`{"tool":"t","input":{},"input":{},` + valid + `}`:                                                                                            "input: given twice",
		`{"tool":"t","input":{"a":1,"a":2},"input":{},` + valid + `}`:                                                                                 "input: given twice",
		`{"tool":"t","input":{},"input":{"a":1,"a":2},` + valid + `}`:                                                                                 "input: given twice",
		`{"tool":"t","input":{"a":1,"a":2},` + valid + `,"toolCallId":"y"}`:                                                                           "toolCallId: given twice",
		`{"tool":"t","input":{"a":1,"a":2},"toolCallId":"x","context":{"conversationId":"c","risk":"low","risk":"high","visitor":{"verified":true}}}`: "context.risk: given twice",
		`{"tool":"t","input":{},"toolCallId":"x","context":{"conversationId":"c","risk":"low","visitor":{"verified":true,"verified":false}}}`:         "context.visitor.verified: given twice",
	} {
		_, call, err := decodeBody([]byte(body))
		require.Nil(t, call, body)
		require.Equal(t, CodeInvalidBody, errorCode(err), body)
		assert.Contains(t, err.Error(), field, body)
	}
	body := `{"tool":"t","input":{"q":{"n":-5},"q":{}},` + valid + `}`
	_, call, err := decodeBody([]byte(body))
	require.NoError(t, err)
	assert.Equal(t, `{"q":{"n":-5},"q":{}}`, string(call.RawInput))
	assert.Equal(t, "t", call.Tool)
}

// TestDecodeBodyNamesExactly: names match exactly; a name in another case
// is an unknown field, ignored (encoding/json took "TOOL" for "tool").
func TestDecodeBodyNamesExactly(t *testing.T) {
	_, _, err := decodeBody([]byte(strings.Replace(fullCall, `"tool"`, `"TOOL"`, 1)))
	require.Equal(t, CodeInvalidBody, errorCode(err))
	assert.Contains(t, err.Error(), "tool: required")
	_, call, err := decodeBody([]byte(strings.Replace(fullCall, `"email"`, `"Email"`, 1)))
	require.NoError(t, err)
	assert.Empty(t, call.Visitor.UnverifiedEmail)
}

// TestDecodeBodyRefusesInvalidUTF8: JSON text is UTF-8 (RFC 8259, section 8.1);
// encoding/json replaced bad bytes, so the tool saw other text than was
// signed.
func TestDecodeBodyRefusesInvalidUTF8(t *testing.T) {
	for _, body := range []string{
		strings.Replace(fullCall, "Ada", "Ad\xff", 1),
		strings.Replace(fullCall, "A-1001", "A-\xc3\x28", 1),
		strings.Replace(fullCall, "A-1001", `A-\ud800`, 1),
	} {
		_, call, err := decodeBody([]byte(body))
		require.Nil(t, call)
		require.Equal(t, CodeInvalidBody, errorCode(err))
		assert.Contains(t, err.Error(), "not valid JSON")
	}
}

// TestDecodeBodyDepth: a body nested past the decoder's limit (10,000) is
// refused, wherever the nesting is.
func TestDecodeBodyDepth(t *testing.T) {
	deep := strings.Repeat("[", 9999) + strings.Repeat("]", 9999)
	body := `{"tool":"t","toolCallId":"x","input":{"a":` + deep + `},"context":{"conversationId":"c","risk":"low","visitor":{"verified":true}}}`
	_, _, err := decodeBody([]byte(body))
	require.Error(t, err)
	assert.Equal(t, CodeInvalidBody, errorCode(err))
}

// TestDecodeBodyInputIsCapped: the input is the body's own bytes, and
// appending to it never writes into the body.
func TestDecodeBodyInputIsCapped(t *testing.T) {
	body := []byte(fullCall)
	_, call, err := decodeBody(body)
	require.NoError(t, err)
	assert.Same(t, &body[strings.Index(fullCall, `{"orderId"`)], &call.RawInput[0], "no copy")
	_ = append(call.RawInput, "XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"...)
	assert.Equal(t, fullCall, string(call.Body))
}

// TestDecodeBodyMessages: what invalid_body says, for a sample.
func TestDecodeBodyMessages(t *testing.T) {
	for body, want := range map[string]string{
		`[1]`:        "the body must be a JSON object, got array",
		`{"tool":7}`: "tool: expected string, got number",
		`{"tool":"t","toolCallId":"x","input":[],"context":{}}`:                  "input: expected object, got array",
		strings.Replace(fullCall, `"verified": true`, `"verified": "yes"`, 1):    "context.visitor.verified: expected boolean, got string",
		`{"tool":"t","toolCallId":"x","input":{},"context":"x"}`:                 "context: expected object, got string",
		`{"tool":"t","toolCallId":"x","input":{},"context":{"visitor":[]}}`:      "context.visitor: expected object, got array",
		`{"tool":"t","toolCallId":"x","input":{},"context":{"approvedBy":true}}`: "context.approvedBy: expected string, got boolean",
		`{"tool":"t","tool":"u"}`:   "tool: given twice; each key may appear once",
		`{"tool":"t"} x`:            "the body is not valid JSON: invalid character 'x' after top-level value at byte 13",
		`{"tool":"t"`:               "the body is not valid JSON: unexpected EOF at byte 11",
		`{"input":{"a":1,"a":2},x}`: "the body is not valid JSON: invalid character 'x' at start of value at byte 23", // after a name given twice in the input: the place in the body as sent
	} {
		_, _, err := decodeBody([]byte(body))
		assert.EqualError(t, err, "invalid_body: "+want, body)
	}
	// A missing field is "required", not "empty" or of another type.
	long := strings.Repeat("r", 39) + "st"
	for _, c := range []struct {
		change func(m map[string]any)
		want   string
	}{
		{func(m map[string]any) { delete(m, "tool") }, "tool: required (a string naming the tool)"},
		{func(m map[string]any) { delete(m, "toolCallId") }, "toolCallId: required (a string)"},
		{func(m map[string]any) { delete(m, "input") }, "input: required (an object)"},
		{func(m map[string]any) { m["input"] = nil }, "input: required (an object)"},
		{func(m map[string]any) { delete(m, "context") }, "context: required (an object)"},
		{func(m map[string]any) { delete(ctxOf(m), "conversationId") }, "context.conversationId: required (a string)"},
		{func(m map[string]any) { delete(ctxOf(m), "risk") }, "context.risk: required (one of low, medium, reviewed, high)"},
		{func(m map[string]any) { ctxOf(m)["risk"] = long }, `context.risk: "` + long[:40] + `…" is not one of low, medium, reviewed, high`},
		{func(m map[string]any) { delete(ctxOf(m), "visitor") }, "context.visitor: required (an object)"},
		{func(m map[string]any) { delete(visitorOf(m), "verified") }, "context.visitor.verified: required (a boolean)"},
	} {
		body := mutate(t, c.change)
		_, _, err := decodeBody([]byte(body))
		assert.EqualError(t, err, "invalid_body: "+c.want, body)
	}
}
