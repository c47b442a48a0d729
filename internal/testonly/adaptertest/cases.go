package adaptertest

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"regexp"
	"strconv"
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
	App     any           // the diagnostics report's app entry, compared as JSON; nil not checked
	Tools   []string      // for the GET manifest: the tool names it lists
	Allow   string        // the Allow header; "" must be absent
	NoBody  bool          // HEAD: no body reaches the client
}

// EndpointCases are the requests to an adapter's Mount that the
// conformance suite does not send, with the answers the contract gives
// them. They ask how the adapter routes: a query string, OPTIONS and HEAD
// (conformance sends PUT, DELETE and PATCH), chunked bodies within the
// limit and a body exactly at it (conformance sends only bodies over it),
// and the trailing-slash path for more than a signed POST. Every other
// contract case is conformance's: internal/testonly/adapters runs the whole suite
// against every adapter. Each call returns fresh cases; every tool call has
// its own toolCallId, so the cases can share one handler.
func EndpointCases() []Case {
	echo := ToolCall(ToolEcho, "call_echo", `{"text":"hi"}`)
	large := Padded(ToolCall(ToolEcho, "call_max", `{"text":"max"}`), MaxBodyBytes)
	result := func(v any) Want { return Want{Status: http.StatusOK, Result: v} }
	notAllowed := Want{Status: http.StatusMethodNotAllowed, Code: protocol.CodeMethodNotAllowed, Allow: AllowHeader}

	return []Case{
		{"query string is ignored", withQuery(Signed(http.MethodPost, ToolCall(ToolEcho, "call_q", `{"text":"q"}`)), "a=1"), result(EchoOut{Text: "q", Visitor: "user_7"})},
		{"OPTIONS is not allowed", Unsigned(http.MethodOptions, nil), notAllowed},
		{"HEAD is not allowed", Unsigned(http.MethodHead, nil), Want{Status: http.StatusMethodNotAllowed, Allow: AllowHeader, NoBody: true}},
		{"body at the limit", Signed(http.MethodPost, large), result(EchoOut{Text: "max", Visitor: "user_7"})},
		{"chunked body", chunked(Signed(http.MethodPost, ToolCall(ToolEcho, "call_chunked", `{"text":"chunked"}`))), result(EchoOut{Text: "chunked", Visitor: "user_7"})},

		// A median-signature header sent as several lines is joined with ","
		// and checked whole (PROTOCOL.md §1.1, a repeated header).
		{"repeated signature header: t and v1 on lines of their own", Split(Signed(http.MethodPost, ToolCall(ToolEcho, "call_split", `{"text":"split"}`))), result(EchoOut{Text: "split", Visitor: "user_7"})},
		{"repeated signature header: a v1 of another key, then the right one", splitOtherFirst(http.MethodPost, ToolCall(ToolEcho, "call_split_two", `{"text":"two"}`)), result(EchoOut{Text: "two", Visitor: "user_7"})},
		{"repeated signature header: the manifest GET", Split(Signed(http.MethodGet, nil)), Want{Status: http.StatusOK, Tools: AllTools}},
		{"repeated signature header: two t is malformed", twoT(ToolCall(ToolEcho, "call_split_t", `{"text":"t"}`)), Want{Status: http.StatusUnauthorized, Code: protocol.CodeMalformedSignature}},
		{"repeated signature header: stale", Split(SignedAt(http.MethodPost, echo, Now.Add(-6*time.Minute))), Want{Status: http.StatusUnauthorized, Code: protocol.CodeStaleTimestamp}},
		{"repeated signature header: no v1 matches", Split(WithHeader(http.MethodPost, echo, MustKey(OtherKey).Sign(Now, echo))), Want{Status: http.StatusUnauthorized, Code: protocol.CodeInvalidSignature}},

		// Mount registers Path+"/" for every method: no trailing-slash
		// redirect and no framework 404 page answers there.
		{"trailing slash: GET lists the tools", slash(Signed(http.MethodGet, nil)), Want{Status: http.StatusOK, Tools: AllTools}},
		{"trailing slash: unsigned GET", slash(Unsigned(http.MethodGet, nil)), Want{Status: http.StatusUnauthorized, Code: protocol.CodeMissingSignature}},
		{"trailing slash: PUT is not allowed", slash(Signed(http.MethodPut, echo)), notAllowed},
		{"trailing slash: HEAD is not allowed", slash(Unsigned(http.MethodHead, nil)), Want{Status: http.StatusMethodNotAllowed, Allow: AllowHeader, NoBody: true}},
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
		{Case{"tool the Handler does not run reaches the handler", Signed(http.MethodPost, ToolCall(ToolCustom, "mw_custom", `{"n":12345678901234567890}`)), ok(Handled{Tool: ToolCustom, Input: json.RawMessage(`{"n":12345678901234567890}`), Visitor: "user_7"})}, 1},
		{Case{"handler error is execution_failed", Signed(http.MethodPost, ToolCall(ToolCustomFail, "mw_fail", `{}`)), Want{Status: http.StatusOK, Code: protocol.CodeExecutionFailed, Message: ErrFail.Error()}}, 1},
		{Case{"handler refusal is a result", Signed(http.MethodPost, ToolCall(ToolCustomRefuse, "mw_refuse", `{}`)), ok(Refusal)}, 1},
		{Case{"handler reads the signed body", Signed(http.MethodPost, signedBody), ok(BodySeen{Body: string(signedBody)})}, 1},
		{Case{"handler reads a chunked signed body", chunked(Signed(http.MethodPost, chunkedBody)), ok(BodySeen{Body: string(chunkedBody)})}, 1},
		// Only the call is signed: the handler gets no query string (Median
		// sends none), and the headers as they arrived, which it must not
		// trust (see "Authenticated: the call only" in the protocol package).
		{Case{"handler sees no query string, and the headers as sent", unsignedParts(Signed(http.MethodPost, ToolCall(ToolCustomRequest, "mw_request", `{}`))), ok(RequestSeen{Target: Path, User: "admin"})}, 1},
		{Case{"trailing slash: handler sees no query string", slash(unsignedParts(Signed(http.MethodPost, ToolCall(ToolCustomRequest, "mw_request_slash", `{}`)))), ok(RequestSeen{Target: Path + "/", User: "admin"})}, 1},
		{Case{"tool not in Config.Tools never reaches the handler", Signed(http.MethodPost, ToolCall("not_known_here", "mw_unknown", `{}`)), Want{Status: http.StatusNotFound, Code: protocol.CodeUnknownTool, Message: "not_known_here"}}, 0},
		{Case{"tool the handler does not know is unknown_tool", Signed(http.MethodPost, ToolCall(ToolCustomUnknown, "mw_unknown_2", `{}`)), Want{Status: http.StatusNotFound, Code: protocol.CodeUnknownTool, Message: ToolCustomUnknown}}, 1},
		{Case{"invalid input never reaches the handler", Signed(http.MethodPost, ToolCall(ToolEcho, "mw_bad", `{"text":false}`)), Want{Status: http.StatusBadRequest, Code: protocol.CodeInvalidInput}}, 0},
		{Case{"unsigned call never reaches the handler", Unsigned(http.MethodPost, ToolCall(ToolCustom, "mw_unsigned", `{}`)), Want{Status: http.StatusUnauthorized, Code: protocol.CodeMissingSignature}}, 0},
		{Case{"GET manifest is answered by the middleware", Signed(http.MethodGet, nil), Want{Status: http.StatusOK, Tools: AllTools}}, 0},
		{Case{"diagnostics are answered by the middleware", Signed(http.MethodPost, []byte(`{"op":"diagnostics"}`)), Want{Status: http.StatusOK, App: Diagnostics}}, 0},
		{Case{"handler panic is execution_failed", Signed(http.MethodPost, ToolCall(ToolCustomPanic, "mw_panic", `{}`)), Want{Status: http.StatusOK, Code: protocol.CodeExecutionFailed, Message: "failed unexpectedly"}}, 1},
		{Case{"PUT is answered by the middleware", Signed(http.MethodPut, nil), notAllowed}, 0},
		{Case{"DELETE is answered by the middleware", Unsigned(http.MethodDelete, nil), notAllowed}, 0},
		{Case{"OPTIONS is answered by the middleware", Unsigned(http.MethodOptions, nil), notAllowed}, 0},
		{Case{"HEAD is answered by the middleware", Unsigned(http.MethodHead, nil), Want{Status: http.StatusMethodNotAllowed, Allow: AllowHeader, NoBody: true}}, 0},

		{Case{"repeated signature header: the call reaches the handler", Split(Signed(http.MethodPost, ToolCall(ToolCustom, "mw_split", `{}`))), ok(Handled{Tool: ToolCustom, Input: json.RawMessage(`{}`), Visitor: "user_7"})}, 1},
		{Case{"repeated signature header: two t never reaches the handler", twoT(ToolCall(ToolCustom, "mw_split_t", `{}`)), Want{Status: http.StatusUnauthorized, Code: protocol.CodeMalformedSignature}}, 0},

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

// Tool names the kit's middleware handler answers itself. They are
// registered on the kit's handlers (middleware mode answers any other
// tool 404 unknown_tool before the handler), with functions that fail
// should the Handler itself ever run them.
const (
	ToolCustom        = "custom"         // answered with Handled
	ToolCustomFail    = "custom_fail"    // answered with ErrFail
	ToolCustomRefuse  = "custom_refuse"  // answered with Refusal
	ToolCustomBody    = "custom_body"    // answered with BodySeen
	ToolCustomSilent  = "custom_silent"  // not answered through Respond (ErrNoAnswer)
	ToolCustomNothing = "custom_nothing" // not answered at all (ErrNothing)
	ToolCustomPanic   = "custom_panic"   // the handler panics
	ToolCustomUnknown = "custom_unknown" // answered protocol.CodeUnknownTool
	ToolCustomRequest = "custom_request" // answered with RequestSeen
)

// customTools are the tool names the kit's middleware handler answers.
var customTools = []string{ToolCustom, ToolCustomFail, ToolCustomRefuse, ToolCustomBody, ToolCustomSilent, ToolCustomNothing, ToolCustomPanic, ToolCustomUnknown, ToolCustomRequest}

// AllTools are the tools the kit's handlers list in their manifest.
var AllTools = append([]string{ToolEcho, ToolFail, ToolPanic, ToolRefuse, ToolValue}, customTools...)

// Step is what one handler of a chain does (Adapter.Chain). Each
// adapter's description writes it in its framework's terms.
type Step int

const (
	// Pass answers nothing and passes the call on, as its framework does
	// (fiber: c.Next(); elsewhere: return).
	Pass Step = iota
	// Write writes the answer ForbiddenBody with status 403 and a
	// text/plain Content-Type directly, without Respond, then passes the
	// call on as Pass does, as a careless handler might: the chain must end
	// anyway.
	Write
	// Refuse answers Refusal with the adapter's Respond, then passes the
	// call on as Pass does.
	Refuse
	// Abort is the framework's abort (Adapter.Abort) without answering.
	Abort
	// Flush flushes the response without writing anything first
	// (Adapter.Flush), then passes the call on as Pass does. A flush sends
	// the status (200), so it ends the chain: the handler's own empty 200
	// goes out, and nothing after it runs.
	Flush
	// Hijack takes the connection (Adapter.Hijack), answers on it with
	// [AnswerHijacked], then passes the call on as Pass does: the chain
	// must end, and nothing is written after the handler's own answer.
	Hijack
	// Panic panics (the framework's recovery middleware runs outside):
	// the core answers execution_failed, and nothing after it runs.
	Panic
	// Dispatch answers Handled with the adapter's Respond: the dispatcher
	// that must not run after a handler that answered.
	Dispatch
)

// ChainPanic is what the Panic step panics with.
const ChainPanic = "a handler of the chain panicked"

// ForbiddenBody is the body of the Write and Hijack steps.
const ForbiddenBody = "forbidden"

// AnswerHijacked is what the Hijack step does with the connection it took:
// it writes a 403 with the body ForbiddenBody and closes the connection.
func AnswerHijacked(conn net.Conn, rw *bufio.ReadWriter) {
	_, _ = rw.WriteString("HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
		strconv.Itoa(len(ForbiddenBody)) + "\r\nConnection: close\r\n\r\n" + ForbiddenBody)
	_ = rw.Flush()
	_ = conn.Close()
}

// ChainCase is a chain of handlers Mount runs in middleware mode, the
// handlers that must run (by index) and the one answer that goes out: Want
// for an answer of the core, or, when Own, the status of Want and Body
// exactly for a handler's own.
type ChainCase struct {
	Name  string
	Steps []Step
	Ran   []int
	Want  Want
	Body  string
	Own   bool
}

// chainInput is the input of the ToolEcho call each chain case sends: a
// registered tool, so that a Handler running it itself would show in
// Runs.Echo.
const chainInput = `{"text":"chain"}`

// ChainCases are the handler chains every adapter's Mount must end at the
// first handler that answers (see "Handler chains" in the protocol
// package), for a's framework: the abort case only where it has one.
func ChainCases(a Adapter) []ChainCase {
	handled := Want{Status: http.StatusOK, Result: Handled{Tool: ToolEcho, Input: json.RawMessage(chainInput), Visitor: "user_7"}}
	cases := []ChainCase{
		{"a handler that writes directly ends the chain", []Step{Write, Dispatch}, []int{0}, Want{Status: http.StatusForbidden}, ForbiddenBody, true},
		{"a handler that refuses with Respond ends the chain", []Step{Refuse, Dispatch}, []int{0}, Want{Status: http.StatusOK, Result: Refusal}, "", false},
		{"a chain of three where the third answers", []Step{Pass, Pass, Dispatch}, []int{0, 1, 2}, handled, "", false},
		{"a chain of three where the second writes", []Step{Pass, Write, Dispatch}, []int{0, 1}, Want{Status: http.StatusForbidden}, ForbiddenBody, true},
		{"a chain where none answers", []Step{Pass, Pass}, []int{0, 1}, Want{Status: http.StatusOK, Code: protocol.CodeExecutionFailed, Message: "did not answer"}, "", false},
		{"a handler that panics ends the chain", []Step{Panic, Dispatch}, []int{0}, Want{Status: http.StatusOK, Code: protocol.CodeExecutionFailed, Message: "failed unexpectedly"}, "", false},
	}
	if a.Abort != "" {
		cases = append(cases, ChainCase{"a handler that aborts (" + a.Abort + ") ends the chain", []Step{Abort, Dispatch}, []int{0}, a.AbortAnswer, "", false})
	}
	if a.Flush != "" {
		cases = append(cases, ChainCase{"a handler that flushes (" + a.Flush + ") ends the chain", []Step{Flush, Dispatch}, []int{0}, Want{Status: http.StatusOK}, "", true})
	}
	if a.Hijack != "" {
		cases = append(cases, ChainCase{"a handler that hijacks the connection (" + a.Hijack + ") ends the chain", []Step{Hijack, Dispatch}, []int{0}, Want{Status: http.StatusForbidden}, ForbiddenBody, true})
	}
	return cases
}

// ErrNoAnswer tells the kit's framework handlers to answer 204 on their own,
// without the adapter's Respond, as a handler that forgets Respond does.
var ErrNoAnswer = errors.New("answer without Respond")

// ErrNothing tells the kit's framework handlers to return without writing
// anything: the middleware must answer the call itself.
var ErrNothing = errors.New("no answer at all")

// BodySeen is the result the kit's middleware handler answers for
// ToolCustomBody: the body it read after the middleware.
type BodySeen struct {
	Body string `json:"body"`
}

// RequestSeen is the result the kit's middleware handler answers for
// ToolCustomRequest: the parts of the request Median does not sign, as
// the handler found them (Seen).
type RequestSeen struct {
	Target string `json:"target"`
	Tenant string `json:"tenant"`
	User   string `json:"user"`
}

// Handled is the result the kit's middleware handler answers.
type Handled struct {
	Tool    string          `json:"tool"`
	Input   json.RawMessage `json:"input"`
	Visitor string          `json:"visitor"`
}

// Dispatched is the Handled the kit answers for call: the Dispatch step's
// answer, and the Recorder's for ToolEcho and ToolCustom.
func Dispatched(call *protocol.Call) Handled {
	if call == nil {
		return Handled{}
	}
	id, _ := call.Visitor.ExternalID()
	return Handled{Tool: call.Tool, Input: call.RawInput, Visitor: id}
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
	if want.App != nil {
		var report struct{ App json.RawMessage }
		require.NoError(t, json.Unmarshal(answer.Result, &report))
		wantJSON, err := json.Marshal(want.App)
		require.NoError(t, err)
		assert.JSONEq(t, string(wantJSON), string(report.App), "the report's app entry (result %s)", answer.Result)
	}
}

func withQuery(r Request, q string) Request { r.Query = q; return r }

// unsignedParts adds to r what Median does not sign and a signed call must
// not carry to the app as if it did: a query string naming another tenant
// and a header claiming an admin.
func unsignedParts(r Request) Request {
	r.Query, r.Header = "tenant=other", map[string]string{"X-User": "admin"}
	return r
}

func chunked(r Request) Request { r.Chunked = true; return r }

// splitOtherFirst returns a POST of body whose median-signature header
// comes as two lines: t with a v1 under OtherKey, then a v1 under Key (a
// rotation's two v1 entries, split by a proxy).
func splitOtherFirst(method string, body []byte) Request {
	other := MustKey(OtherKey).Sign(Now, body)
	_, v1, _ := strings.Cut(MustKey(Key).Sign(Now, body), ",")
	return Request{Method: method, Body: body, Signatures: []string{other, v1}}
}

// twoT returns a POST of body signed with Key whose header lines, joined,
// carry two t entries: malformed, though each line is a valid signature.
func twoT(body []byte) Request {
	sig := MustKey(Key).Sign(Now, body)
	return Request{Method: http.MethodPost, Body: body, Signatures: []string{sig, sig}}
}

func slash(r Request) Request { r.Path = Path + "/"; return r }

// hiddenFailure is the execution_failed answer to an error not meant for
// the agent (see protocol.AgentError): the tool's name and a reference.
var hiddenFailure = regexp.MustCompile(`^\{"error":\{"code":"execution_failed","message":"tool ([a-zA-Z0-9_-]+) failed \(reference [0-9a-f]{8}\); the server's log has the details"\}\}$`)

// RequireHiddenFailure asserts that body is the execution_failed answer
// to an error of tool's that the agent is not shown: it names the tool and
// a reference, nothing of the error.
func RequireHiddenFailure(t testing.TB, tool string, body []byte) {
	t.Helper()
	m := hiddenFailure.FindSubmatch(body)
	require.NotNil(t, m, "want execution_failed naming tool %s and a reference, got %s", tool, body)
	require.Equal(t, tool, string(m[1]), "the tool named in %s", body)
}
