package adaptertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/median-go/median/protocol"
)

// Key is the Median key every handler of the kit accepts.
const Key = "adaptertest-key-0123456789abcdefABCDEF"

// OtherKey is a usable key the handlers do not accept.
const OtherKey = "adaptertest-other-key-0123456789abcdef"

// Now is the handlers' clock; requests are signed at Now unless a case says
// otherwise.
var Now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// MaxBodyBytes is the handlers' body limit, small so that oversized bodies
// stay cheap.
const MaxBodyBytes = 4096

// Tolerance is the contract's signature window (PROTOCOL.md §1.1), which the
// handlers keep.
const Tolerance = 5 * time.Minute

// The wire names of the contract (PROTOCOL.md §1, §3).
const (
	SignatureHeader = "Median-Signature"
	ContentType     = "application/json"
	AllowHeader     = "GET, POST"
)

// ValueKey is the key under which the apps of [Adapter.Values] store the
// request's X-Request-Id header in their framework's own store, before
// the endpoint; ToolValue answers what its ctx holds under it.
const ValueKey = "request_id"

// RequestIDHeader is the header the apps of [Adapter.Values] store.
const RequestIDHeader = "X-Request-Id"

// Tool names registered on the kit's handlers.
const (
	ToolEcho   = "echo"   // returns its input text and the visitor's id
	ToolFail   = "fail"   // returns ErrFail
	ToolRefuse = "refuse" // returns Refusal
	ToolPanic  = "panic"  // panics
	ToolValue  = "value"  // returns ctx.Value(ValueKey) and keeps its ctx (Runs.Contexts)
)

// ErrFail is what the "fail" tool returns: an error meant for the agent,
// answered with its message (the same bytes from every adapter).
var ErrFail error = protocol.AgentErrorf("the order service is down")

// Refusal is what the "refuse" tool returns.
var Refusal = protocol.Refuse("not_signed_in", "Sign in to see your orders.")

// Diagnostics is what the handlers' Config.Diagnostics returns: the
// report's app entry.
var Diagnostics = map[string]any{"version": "adaptertest"}

// EchoIn is the input of the "echo" tool.
type EchoIn struct {
	Text string `json:"text" jsonschema:"maxLength=20"`
}

// EchoOut is the result of the "echo" tool.
type EchoOut struct {
	Text    string `json:"text"`
	Visitor string `json:"visitor,omitempty"`
}

// Runs counts how often each tool of a kit handler ran, and keeps the
// contexts ToolValue ran under.
type Runs struct {
	Echo atomic.Int64

	mu   sync.Mutex
	ctxs []context.Context
}

// Contexts returns the contexts ToolValue ran under, in order.
func (r *Runs) Contexts() []context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ctxs)
}

// ValueOut is the result of ToolValue: what its ctx held under ValueKey.
type ValueOut struct {
	Value any `json:"value"`
}

// NewHandler builds the handler every case runs against: the five tools
// above and the custom tools the middleware handler answers (all of risk
// low, so the kit's low-risk calls pass the risk floor), diagnostics, the
// fixed clock, a small body limit and no logging.
// Each option, when not nil, may change the config before it is built.
func NewHandler(options ...func(*protocol.Config)) (*protocol.Handler, *Runs) {
	runs := &Runs{}
	echo := protocol.NewTool(ToolEcho, protocol.RiskLow, "Echoes its input.",
		func(_ context.Context, call protocol.ToolCall[EchoIn]) (EchoOut, error) {
			runs.Echo.Add(1)
			id, _ := call.Visitor.ExternalID()
			return EchoOut{Text: call.Input.Text, Visitor: id}, nil
		})
	fail := protocol.NewTool(ToolFail, protocol.RiskLow, "Always fails.",
		func(context.Context, protocol.ToolCall[struct{}]) (any, error) { return nil, ErrFail })
	refuse := protocol.NewTool(ToolRefuse, protocol.RiskLow, "Always refuses.",
		func(context.Context, protocol.ToolCall[struct{}]) (any, error) { return nil, Refusal })
	panics := protocol.NewTool(ToolPanic, protocol.RiskLow, "Always panics.",
		func(context.Context, protocol.ToolCall[struct{}]) (any, error) { panic("adaptertest: boom") })
	value := protocol.NewTool(ToolValue, protocol.RiskLow, "Answers the request id its context holds.",
		func(ctx context.Context, _ protocol.ToolCall[struct{}]) (ValueOut, error) {
			runs.mu.Lock()
			runs.ctxs = append(runs.ctxs, ctx)
			runs.mu.Unlock()
			return ValueOut{Value: ctx.Value(ValueKey)}, nil
		})
	tools := []*protocol.Tool{echo, fail, refuse, panics, value}
	for _, name := range customTools {
		tools = append(tools, AppTool(name))
	}
	cfg := protocol.Config{
		Keys:         []string{Key},
		Tools:        tools,
		Diagnostics:  func(context.Context) (any, error) { return Diagnostics, nil },
		MaxBodyBytes: MaxBodyBytes,
		Now:          func() time.Time { return Now },
		Logger:       slog.New(slog.DiscardHandler),
	}
	for _, o := range options {
		if o != nil {
			o(&cfg)
		}
	}
	h, err := protocol.New(cfg)
	if err != nil {
		panic("adaptertest: the kit's handler does not build: " + err.Error())
	}
	return h, runs
}

// AppTool declares a tool that a handler behind the middleware answers, as
// middleware mode requires (it answers any other tool 404 unknown_tool):
// any object as input.
func AppTool(name string) *protocol.Tool {
	return protocol.DeclareTool[map[string]any](name, protocol.RiskLow, "Answered by the handler behind the middleware.",
		protocol.WithInputSchema(json.RawMessage(`{"type":"object"}`)))
}

// Request is one request a case sends to Path.
type Request struct {
	Method    string
	Path      string  // "" for Path
	Query     string  // without "?"
	Signature *string // nil: no median-signature header
	// Signatures, when set, are sent as that many median-signature header
	// lines in this order (a proxy that splits the header on commas), in
	// place of Signature.
	Signatures []string
	Body       []byte
	Chunked    bool              // send the body without a length
	RequestID  string            // the X-Request-Id header; "" for none
	Header     map[string]string // more headers
}

// ToolCall returns a ToolCall body for tool with a verified visitor
// "user_7"; input is the raw JSON of the "input" field.
func ToolCall(tool, id, input string) []byte {
	return fmt.Appendf(nil, `{"tool":%q,"toolCallId":%q,"input":%s,"context":{"conversationId":"conv_42","risk":"low","visitor":{"verified":true,"externalId":"user_7","email":"a@b.c","name":"Ada"}}}`, tool, id, input)
}

// Signed returns a POST (or GET when body is nil) signed with Key at Now.
func Signed(method string, body []byte) Request {
	return SignedAt(method, body, Now)
}

// SignedAt returns a request signed with Key at t.
func SignedAt(method string, body []byte, t time.Time) Request {
	return Request{Method: method, Body: body, Signature: header(MustKey(Key).Sign(t, body))}
}

// NewSignedRequest returns an incoming request (httptest.NewRequest) of
// body to path, signed with Key at Now, for a test that serves one request
// in process.
func NewSignedRequest(method, path string, body []byte) *http.Request {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set(SignatureHeader, MustKey(Key).Sign(Now, body))
	return req
}

// WithHeader returns a request carrying the median-signature header sig as
// given.
func WithHeader(method string, body []byte, sig string) Request {
	return Request{Method: method, Body: body, Signature: &sig}
}

// Split returns r with its median-signature header sent as one header
// line per comma-separated entry, in order, as a proxy that splits header
// values on commas sends it (PROTOCOL.md §1.1, a repeated header).
func Split(r Request) Request {
	r.Signatures = strings.Split(*r.Signature, ",")
	r.Signature = nil
	return r
}

// Unsigned returns a request with no median-signature header.
func Unsigned(method string, body []byte) Request {
	return Request{Method: method, Body: body}
}

// Padded returns body with spaces appended up to size bytes (valid JSON
// that keeps its meaning).
func Padded(body []byte, size int) []byte {
	if len(body) >= size {
		return body
	}
	return append(body, strings.Repeat(" ", size-len(body))...)
}

func header(s string) *string { return &s }

// MustKey parses a key the kit knows to be usable.
func MustKey(key string) protocol.Key {
	k, err := protocol.ParseKey(key)
	if err != nil {
		panic("adaptertest: " + err.Error())
	}
	return k
}
