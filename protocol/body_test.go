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
