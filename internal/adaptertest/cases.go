package adaptertest

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/protocol"
)

// Case is one request and the answer the contract gives it.
type Case struct {
	Name    string
	Request Request
	Want    Want
}

// Want is the answer a case expects.
type Want struct {
	Status  int
	Code    protocol.Code // the error code; "" when the answer is a result
	Message string        // a substring of the error message; "" not checked
	Result  any           // the result, compared as JSON; nil not checked
	Tools   []string      // for the GET manifest: the tool names it lists
	Allow   string        // the Allow header; "" must be absent
	NoBody  bool          // HEAD: no body reaches the client
}

// EndpointCases is the table every adapter's Mount must answer as the
// contract says. Each call returns fresh cases; every tool call has its own
// toolCallId, so the cases can share one handler.
func EndpointCases() []Case {
	k := MustKey(Key)
	other := MustKey(OtherKey)
	echo := ToolCall(ToolEcho, "call_echo", `{"text":"hi"}`)
	within := Now.Add(-Tolerance)
	tooOld := Now.Add(-Tolerance - time.Millisecond)
	tooNew := Now.Add(Tolerance + time.Millisecond)
	// A rotation header: a v0 entry (ignored), a v1 under a key the server
	// does not hold, then a v1 under Key.
	rotBody := ToolCall(ToolEcho, "call_rot", `{"text":"rot"}`)
	rotated := other.Sign(Now, rotBody) + ", v0=00, " + strings.SplitN(k.Sign(Now, rotBody), ",", 2)[1]
	large := Padded(ToolCall(ToolEcho, "call_max", `{"text":"max"}`), MaxBodyBytes)
	over := Padded(ToolCall(ToolEcho, "call_over", `{"text":"over"}`), MaxBodyBytes+1)
	result := func(v any) Want { return Want{Status: http.StatusOK, Result: v} }
	refused := func(status int, code protocol.Code) Want { return Want{Status: status, Code: code} }
	notAllowed := Want{Status: http.StatusMethodNotAllowed, Code: protocol.CodeMethodNotAllowed, Allow: AllowHeader}

	return []Case{
		{"tool call runs the tool", Signed(http.MethodPost, echo), result(EchoOut{Text: "hi", Visitor: "user_7"})},
		{"query string is ignored", withQuery(Signed(http.MethodPost, ToolCall(ToolEcho, "call_q", `{"text":"q"}`)), "a=1"), result(EchoOut{Text: "q", Visitor: "user_7"})},
		{"unknown fields are ignored", Signed(http.MethodPost, []byte(`{"tool":"echo","toolCallId":"call_x","input":{"text":"x"},"context":{"conversationId":"c","risk":"high","visitor":{"verified":false},"new":true},"later":[1]}`)), result(EchoOut{Text: "x"})},
		{"tool error is execution_failed", Signed(http.MethodPost, ToolCall(ToolFail, "call_fail", `{}`)), Want{Status: http.StatusOK, Code: protocol.CodeExecutionFailed, Message: ErrFail.Error()}},
		{"refusal is a result", Signed(http.MethodPost, ToolCall(ToolRefuse, "call_refuse", `{}`)), result(Refusal)},
		{"panic is execution_failed", Signed(http.MethodPost, ToolCall(ToolPanic, "call_panic", `{}`)), Want{Status: http.StatusOK, Code: protocol.CodeExecutionFailed, Message: "failed unexpectedly"}},
		{"diagnostics", Signed(http.MethodPost, []byte(`{"op":"diagnostics"}`)), result(Diagnostics)},
		{"GET lists the tools", Signed(http.MethodGet, nil), Want{Status: http.StatusOK, Tools: AllTools}},

		{"PUT is not allowed", Signed(http.MethodPut, echo), notAllowed},
		{"PATCH is not allowed", Signed(http.MethodPatch, echo), notAllowed},
		{"DELETE is not allowed", Unsigned(http.MethodDelete, nil), notAllowed},
		{"OPTIONS is not allowed", Unsigned(http.MethodOptions, nil), notAllowed},
		{"HEAD is not allowed", Unsigned(http.MethodHead, nil), Want{Status: http.StatusMethodNotAllowed, Allow: AllowHeader, NoBody: true}},

		{"no signature header", Unsigned(http.MethodPost, echo), refused(http.StatusUnauthorized, protocol.CodeMissingSignature)},
		{"empty signature header", WithHeader(http.MethodPost, echo, ""), refused(http.StatusUnauthorized, protocol.CodeMissingSignature)},
		{"unsigned GET", Unsigned(http.MethodGet, nil), refused(http.StatusUnauthorized, protocol.CodeMissingSignature)},
		{"malformed signature", WithHeader(http.MethodPost, echo, "t=soon,v1=abc"), refused(http.StatusUnauthorized, protocol.CodeMalformedSignature)},
		{"signature in seconds is stale", WithHeader(http.MethodPost, echo, secondsHeader(k, echo)), refused(http.StatusUnauthorized, protocol.CodeStaleTimestamp)},
		{"timestamp too old", SignedAt(http.MethodPost, echo, tooOld), refused(http.StatusUnauthorized, protocol.CodeStaleTimestamp)},
		{"timestamp from the future", SignedAt(http.MethodPost, echo, tooNew), refused(http.StatusUnauthorized, protocol.CodeStaleTimestamp)},
		{"timestamp exactly at the tolerance", SignedAt(http.MethodPost, ToolCall(ToolEcho, "call_edge", `{"text":"edge"}`), within), result(EchoOut{Text: "edge", Visitor: "user_7"})},
		{"signed with another key", WithHeader(http.MethodPost, echo, other.Sign(Now, echo)), refused(http.StatusUnauthorized, protocol.CodeInvalidSignature)},
		{"body changed after signing", WithHeader(http.MethodPost, ToolCall(ToolEcho, "call_echo", `{"text":"ho"}`), k.Sign(Now, echo)), refused(http.StatusUnauthorized, protocol.CodeInvalidSignature)},
		{"one of several v1 matches", WithHeader(http.MethodPost, rotBody, rotated), result(EchoOut{Text: "rot", Visitor: "user_7"})},

		{"body at the limit", Signed(http.MethodPost, large), result(EchoOut{Text: "max", Visitor: "user_7"})},
		{"body over the limit", Signed(http.MethodPost, over), refused(http.StatusRequestEntityTooLarge, protocol.CodeInvalidBody)},
		{"chunked body over the limit", chunked(Signed(http.MethodPost, over)), refused(http.StatusRequestEntityTooLarge, protocol.CodeInvalidBody)},
		{"chunked body", chunked(Signed(http.MethodPost, ToolCall(ToolEcho, "call_chunked", `{"text":"chunked"}`))), result(EchoOut{Text: "chunked", Visitor: "user_7"})},
		{"body is not JSON", Signed(http.MethodPost, []byte(`tool=echo`)), refused(http.StatusBadRequest, protocol.CodeInvalidBody)},
		{"body is an array", Signed(http.MethodPost, []byte(`[]`)), refused(http.StatusBadRequest, protocol.CodeInvalidBody)},
		{"body misses toolCallId", Signed(http.MethodPost, []byte(`{"tool":"echo","input":{},"context":{}}`)), Want{Status: http.StatusBadRequest, Code: protocol.CodeInvalidBody, Message: "toolCallId"}},
		{"unknown op", Signed(http.MethodPost, []byte(`{"op":"restart"}`)), refused(http.StatusBadRequest, protocol.CodeUnknownOp)},
		{"unknown tool", Signed(http.MethodPost, ToolCall("nope", "call_nope", `{}`)), refused(http.StatusNotFound, protocol.CodeUnknownTool)},
		{"input does not fit the schema", Signed(http.MethodPost, ToolCall(ToolEcho, "call_bad", `{"text":7}`)), Want{Status: http.StatusBadRequest, Code: protocol.CodeInvalidInput, Message: "text"}},

		// Mount registers Path+"/" too: no trailing-slash redirect and no
		// framework 404 page answers there.
		{"trailing slash: POST runs the tool", slash(Signed(http.MethodPost, ToolCall(ToolEcho, "call_slash_post", `{"text":"s"}`))), result(EchoOut{Text: "s", Visitor: "user_7"})},
		{"trailing slash: GET lists the tools", slash(Signed(http.MethodGet, nil)), Want{Status: http.StatusOK, Tools: AllTools}},
		{"trailing slash: unsigned GET", slash(Unsigned(http.MethodGet, nil)), refused(http.StatusUnauthorized, protocol.CodeMissingSignature)},
		{"trailing slash: PUT is not allowed", slash(Signed(http.MethodPut, echo)), notAllowed},
	}
}

// MiddlewareCases is the table every adapter's Middleware must answer: a
// verified tool call reaches the handler behind it (Calls is how often the
// kit's Answer ran), everything else is answered by the middleware.
func MiddlewareCases() []MiddlewareCase {
	ok := func(v any) Want { return Want{Status: http.StatusOK, Result: v} }
	notAllowed := Want{Status: http.StatusMethodNotAllowed, Code: protocol.CodeMethodNotAllowed, Allow: AllowHeader}
	// Bodies a JSON re-encoding would change: spacing, key order, escapes,
	// a number beyond float64.
	signedBody := []byte(`{ "toolCallId" : "mw_body", "tool":"custom_body", "input": {"n": 12345678901234567890, "s":"\u00e9"},
	  "context": {"conversationId":"c","risk":"low","visitor":{"verified":false}} }`)
	chunkedBody := Padded(ToolCall(ToolCustomBody, "mw_body_chunked", `{"pad":"`+strings.Repeat("x", 1000)+`"}`), 2000)
	return []MiddlewareCase{
		{Case{"registered tool reaches the handler", Signed(http.MethodPost, ToolCall(ToolEcho, "mw_echo", `{"text":"hi"}`)), ok(Handled{Tool: ToolEcho, Input: json.RawMessage(`{"text":"hi"}`), Visitor: "user_7"})}, 1},
		{Case{"unregistered tool reaches the handler", Signed(http.MethodPost, ToolCall(ToolCustom, "mw_custom", `{"n":12345678901234567890}`)), ok(Handled{Tool: ToolCustom, Input: json.RawMessage(`{"n":12345678901234567890}`), Visitor: "user_7"})}, 1},
		{Case{"handler error is execution_failed", Signed(http.MethodPost, ToolCall(ToolCustomFail, "mw_fail", `{}`)), Want{Status: http.StatusOK, Code: protocol.CodeExecutionFailed, Message: ErrFail.Error()}}, 1},
		{Case{"handler refusal is a result", Signed(http.MethodPost, ToolCall(ToolCustomRefuse, "mw_refuse", `{}`)), ok(Refusal)}, 1},
		{Case{"handler reads the signed body", Signed(http.MethodPost, signedBody), ok(BodySeen{Body: string(signedBody)})}, 1},
		{Case{"handler reads a chunked signed body", chunked(Signed(http.MethodPost, chunkedBody)), ok(BodySeen{Body: string(chunkedBody)})}, 1},
		{Case{"tool the handler does not know is unknown_tool", Signed(http.MethodPost, ToolCall("not_known_here", "mw_unknown", `{}`)), Want{Status: http.StatusNotFound, Code: protocol.CodeUnknownTool, Message: "not_known_here"}}, 1},
		{Case{"invalid input never reaches the handler", Signed(http.MethodPost, ToolCall(ToolEcho, "mw_bad", `{"text":false}`)), Want{Status: http.StatusBadRequest, Code: protocol.CodeInvalidInput}}, 0},
		{Case{"unsigned call never reaches the handler", Unsigned(http.MethodPost, ToolCall(ToolCustom, "mw_unsigned", `{}`)), Want{Status: http.StatusUnauthorized, Code: protocol.CodeMissingSignature}}, 0},
		{Case{"GET manifest is answered by the middleware", Signed(http.MethodGet, nil), Want{Status: http.StatusOK, Tools: AllTools}}, 0},
		{Case{"diagnostics are answered by the middleware", Signed(http.MethodPost, []byte(`{"op":"diagnostics"}`)), ok(Diagnostics)}, 0},
		{Case{"handler panic is execution_failed", Signed(http.MethodPost, ToolCall(ToolCustomPanic, "mw_panic", `{}`)), Want{Status: http.StatusOK, Code: protocol.CodeExecutionFailed, Message: "failed unexpectedly"}}, 1},
		{Case{"PUT is answered by the middleware", Signed(http.MethodPut, nil), notAllowed}, 0},
		{Case{"DELETE is answered by the middleware", Unsigned(http.MethodDelete, nil), notAllowed}, 0},
		{Case{"OPTIONS is answered by the middleware", Unsigned(http.MethodOptions, nil), notAllowed}, 0},
		{Case{"HEAD is answered by the middleware", Unsigned(http.MethodHead, nil), Want{Status: http.StatusMethodNotAllowed, Allow: AllowHeader, NoBody: true}}, 0},

		// Mount registers Path+"/" in middleware mode too.
		{Case{"trailing slash: call reaches the handler", slash(Signed(http.MethodPost, ToolCall(ToolCustom, "mw_slash", `{}`))), ok(Handled{Tool: ToolCustom, Input: json.RawMessage(`{}`), Visitor: "user_7"})}, 1},
		{Case{"trailing slash: GET manifest", slash(Signed(http.MethodGet, nil)), Want{Status: http.StatusOK, Tools: AllTools}}, 0},
		{Case{"trailing slash: PUT is not allowed", slash(Signed(http.MethodPut, nil)), notAllowed}, 0},
		{Case{"trailing slash: unsigned call", slash(Unsigned(http.MethodPost, ToolCall(ToolCustom, "mw_slash_unsigned", `{}`))), Want{Status: http.StatusUnauthorized, Code: protocol.CodeMissingSignature}}, 0},
	}
}

// MiddlewareCase is a Case for an adapter's Middleware, with how often the
// handler behind it must run.
type MiddlewareCase struct {
	Case
	Calls int
}

// Tool names the kit's middleware handler answers itself.
const (
	ToolCustom       = "custom"        // answered with Handled
	ToolCustomFail   = "custom_fail"   // answered with ErrFail
	ToolCustomRefuse = "custom_refuse" // answered with Refusal
	ToolCustomBody   = "custom_body"   // answered with BodySeen
	ToolCustomSilent = "custom_silent" // not answered through Respond (ErrNoAnswer)
	ToolCustomPanic  = "custom_panic"  // the handler panics
)

// AllTools are the tools the kit's handlers list in their manifest.
var AllTools = []string{ToolEcho, ToolFail, ToolPanic, ToolRefuse, ToolValue}

// ErrNoAnswer tells the kit's framework handlers to answer 204 on their own,
// without the adapter's Respond, as a handler that forgets Respond does.
var ErrNoAnswer = errors.New("answer without Respond")

// BodySeen is the result the kit's middleware handler answers for
// ToolCustomBody: the body it read after the middleware.
type BodySeen struct {
	Body string `json:"body"`
}

// Handled is the result the kit's middleware handler answers.
type Handled struct {
	Tool    string          `json:"tool"`
	Input   json.RawMessage `json:"input"`
	Visitor string          `json:"visitor"`
}

// Check asserts that got is the answer want describes.
func Check(t testing.TB, want Want, got Reply) {
	t.Helper()
	assert.Equal(t, want.Status, got.Status, "status (body %s)", got.Body)
	assert.Equal(t, ContentType, got.ContentType, "Content-Type")
	assert.Equal(t, want.Allow, got.Allow, "Allow header")
	if want.NoBody {
		assert.Empty(t, got.Body, "a HEAD answer has no body")
		return
	}
	if want.Tools != nil {
		var manifest struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		require.NoError(t, json.Unmarshal(got.Body, &manifest), "manifest %s", got.Body)
		names := make([]string, 0, len(manifest.Tools))
		for _, tool := range manifest.Tools {
			names = append(names, tool.Name)
		}
		assert.ElementsMatch(t, want.Tools, names, "tools in the manifest %s", got.Body)
		return
	}
	var answer struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    protocol.Code `json:"code"`
			Message string        `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(got.Body, &answer), "the answer is not JSON: %s", got.Body)
	if want.Code != "" {
		require.NotNil(t, answer.Error, "want error %s, got %s", want.Code, got.Body)
		assert.Equal(t, want.Code, answer.Error.Code, "error code (body %s)", got.Body)
		assert.NotEmpty(t, answer.Error.Message, "error message")
		assert.Contains(t, answer.Error.Message, want.Message, "error message")
		assert.Nil(t, answer.Result, "an error answer has no result")
		return
	}
	require.Nil(t, answer.Error, "want a result, got %s", got.Body)
	require.NotNil(t, answer.Result, "want a result, got %s", got.Body)
	if want.Result != nil {
		wantJSON, err := json.Marshal(want.Result)
		require.NoError(t, err)
		assert.JSONEq(t, string(wantJSON), string(answer.Result), "result")
	}
}

func withQuery(r Request, q string) Request { r.Query = q; return r }

func chunked(r Request) Request { r.Chunked = true; return r }

func slash(r Request) Request { r.Path = Path + "/"; return r }

// secondsHeader signs body the right way but sends t in seconds, the
// mistake other webhook libraries' users make: Now in seconds read as
// milliseconds is decades stale.
func secondsHeader(k protocol.Key, body []byte) string {
	return k.Sign(time.UnixMilli(Now.Unix()), body)
}
