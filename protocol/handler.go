package protocol

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"time"
)

// Handler answers the Median tool endpoint. Build it with [New]; it is safe
// for concurrent use. Mount it as an [http.Handler], or call [Handler.Serve]
// from an adapter.
type Handler struct {
	keys   []Key
	keyErr *Error // answered 500 on every request when no usable key is set

	tools    map[string]*Tool
	manifest []byte

	diagnostics        func(context.Context) (any, error)
	diagnosticsTimeout time.Duration
	maxBody            int64
	tolerance          time.Duration
	now                func() time.Time
	log                *slog.Logger
	observer           func(Event)
	errorMessage       func(context.Context, *Call, error) string
	store              Store
	lease              time.Duration
	ttl                time.Duration
}

// New builds a Handler from cfg. Every problem is reported at once, joined
// in the error: each unusable tool (bad name, duplicate name, a schema that
// does not compile, a type that cannot be described) and the key.
//
// A key problem alone (errors.Is(err, ErrMissingKey) or ErrInvalidKey) still
// returns a Handler, which answers every request 500 missing_secret or
// invalid_median_key, never fail-open; it is also logged once. Any tool
// problem returns a nil Handler.
func New(cfg Config) (*Handler, error) {
	h := &Handler{
		tools:              make(map[string]*Tool, len(cfg.Tools)),
		diagnostics:        cfg.Diagnostics,
		diagnosticsTimeout: orDefault(cfg.DiagnosticsTimeout, DefaultDiagnosticsTimeout),
		maxBody:            cfg.MaxBodyBytes,
		tolerance:          orDefault(cfg.Tolerance, DefaultTolerance),
		now:                cfg.Now,
		log:                cfg.Logger,
		observer:           cfg.Observer,
		errorMessage:       cfg.ErrorMessage,
		store:              cfg.Store,
		lease:              cfg.ReplayLease,
		ttl:                cfg.ReplayTTL,
	}
	if h.maxBody <= 0 {
		h.maxBody = DefaultMaxBodyBytes
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.ttl <= 0 {
		h.ttl = 2 * h.tolerance
	}
	if cfg.DisableReplayProtection {
		h.store = nil
	} else if h.store == nil {
		h.store = NewMemoryStore(MemoryStoreOptions{})
	}

	var problems []error
	for i, t := range cfg.Tools {
		if t == nil {
			problems = append(problems, fmt.Errorf("tool %d is nil", i))
			continue
		}
		if err := t.err(); err != nil {
			problems = append(problems, err)
		}
		if _, dup := h.tools[t.name]; dup {
			problems = append(problems, fmt.Errorf("tool %q is registered twice", t.name))
		}
		h.tools[t.name] = t
	}
	keys, err := parseKeys(cfg.Keys)
	if len(problems) > 0 {
		if err != nil {
			problems = append(problems, err)
		}
		return nil, fmt.Errorf("median: %w", errors.Join(problems...))
	}
	h.manifest = buildManifest(cfg.Tools)

	if err != nil {
		h.keyErr = asError(err)
		h.log.Error("median: the endpoint will answer 500 until a usable key is configured", "code", h.keyErr.Code, "error", err)
		return h, err
	}
	h.keys = keys
	return h, nil
}

// Keys returns the fingerprints of the configured keys, for logs and
// diagnostics. It never returns a key or a secret.
func (h *Handler) Keys() []string {
	out := make([]string, len(h.keys))
	for i, k := range h.keys {
		out[i] = k.Fingerprint()
	}
	return out
}

// Tools returns the registered tools sorted by name.
func (h *Handler) Tools() []*Tool {
	out := make([]*Tool, 0, len(h.tools))
	for _, t := range h.tools {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// Request is what an adapter passes to [Handler.Serve] and [Handler.Verify]:
// the method, the median-signature header and the body. The body is read
// only after the header checks pass, and never past the size limit.
type Request struct {
	Method    string // the HTTP method, e.g. "POST"
	Signature string // the median-signature header, "" when absent
	// Body is read at most to the limit. When nil, BodyBytes is used: an
	// adapter that already holds the bytes passes them there.
	Body      io.Reader
	BodyBytes []byte
	// ContentLength is the declared length, or -1 (or 0) when unknown. A
	// declared length over the limit is refused without reading; the body
	// is still read only up to the limit whatever is declared.
	ContentLength int64
}

// ContentType is the Content-Type of every answer.
const ContentType = "application/json"

// AllowHeader is the value of the Allow header on 405 answers.
const AllowHeader = "GET, POST"

// Response is an answer ready to write: the status, the JSON body and, on
// 405, the Allow header. Content-Type is always [ContentType].
type Response struct {
	Status int    // the HTTP status; 0 only for a second Respond of one call
	Body   []byte // the JSON answer
	Allow  string // set on 405 only

	code     Code // for the observer
	replayed bool
}

// Code returns the error code the answer carries, or "" for a result.
func (r Response) Code() Code { return r.code }

// WriteTo writes the response to w: Content-Type, Allow when set, the
// status and the body.
//
// The zero Response (Status 0, from a second [Handler.Respond] for one call)
// writes nothing.
func (r Response) WriteTo(w http.ResponseWriter) {
	if r.Status == 0 {
		return
	}
	hdr := w.Header()
	hdr["Content-Type"] = contentTypeValue
	if r.Allow != "" {
		hdr["Allow"] = allowValue
	}
	w.WriteHeader(r.Status)
	_, _ = w.Write(r.Body)
}

var (
	contentTypeValue = []string{ContentType}
	allowValue       = []string{AllowHeader}
)

// canonicalSignatureHeader is SignatureHeader in net/http's canonical form.
const canonicalSignatureHeader = "Median-Signature"

// ServeHTTP answers the Median endpoint on net/http (ServeMux, chi, or any
// router that takes an http.Handler).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.Serve(r.Context(), RequestFromHTTP(r)).WriteTo(w)
}

// RequestFromHTTP is the core's view of a net/http request: its method, its
// median-signature header and its body, left unread (the core reads it only
// after the header checks, never past its limit). Adapters for frameworks
// built on net/http (gin, echo, chi) use it.
func RequestFromHTTP(r *http.Request) Request {
	sig := ""
	if v := r.Header[canonicalSignatureHeader]; len(v) > 0 {
		sig = v[0]
	}
	return Request{Method: r.Method, Signature: sig, Body: r.Body, ContentLength: r.ContentLength}
}

// Serve answers one request: it runs every check of PROTOCOL.md §5 in order,
// then the tool, and returns the answer. Adapters call it and write the
// Response; they never build an answer of their own.
func (h *Handler) Serve(ctx context.Context, req Request) Response {
	start := time.Now()
	call, resp, ok := h.check(ctx, req, true)
	if ok {
		resp = h.runTool(ctx, call)
	}
	h.observe(req.Method, call, resp, start)
	return resp
}

// Verify runs the checks of PROTOCOL.md §5 up to the tool lookup, for
// middleware whose own handler answers. When it returns ok, call is a
// verified tool call: answer it with [Handler.Respond]. Otherwise resp is
// the answer to write: a refusal, the GET manifest, the diagnostics answer,
// or the stored answer of a repeated toolCallId.
//
// A call for a registered tool also has its input validated against that
// tool's schema; a call for any other tool passes, so your handler can
// dispatch tools the Handler does not know.
func (h *Handler) Verify(ctx context.Context, req Request) (call *Call, resp Response, ok bool) {
	call, resp, ok = h.check(ctx, req, false)
	if !ok {
		h.observe(req.Method, call, resp, time.Now())
	}
	return call, resp, ok
}

// Respond encodes the answer to a call that [Handler.Verify] let through: a
// result, a [*Refusal] (as result or as err), [UnknownTool] or an
// invalid_input error (from [Call.BindInput]) as that error, or any other
// err as execution_failed.
// It stores the answer for replay protection, so always answer a verified
// call through Respond.
//
// A call is answered once: a second Respond for the same call logs an error
// and returns the zero Response, which [Response.WriteTo] skips, so the
// first answer is never followed by a second body.
func (h *Handler) Respond(ctx context.Context, call *Call, result any, err error) Response {
	if call == nil {
		return errorResponse(errNoCall)
	}
	if call.answered.Swap(true) {
		h.log.ErrorContext(ctx, "median: Respond called twice for one call; the second answer is dropped", "tool", call.Tool, "toolCallId", call.ToolCallID)
		return Response{}
	}
	start := time.Now()
	resp := h.safeAnswer(ctx, call, result, err)
	h.save(ctx, call, resp)
	h.observe(http.MethodPost, call, resp, start)
	return resp
}

// Respond encodes the answer to a call that middleware verified, through the
// Handler that verified it (see [Handler.Respond]). Adapters' context helpers
// call it. A call that no Handler verified (one built by hand in a test) is
// encoded with default settings and nothing is stored.
func Respond(ctx context.Context, call *Call, result any, err error) Response {
	if call == nil {
		return errorResponse(errNoCall)
	}
	h := call.handler
	if h == nil {
		h = fallbackHandler
	}
	return h.Respond(ctx, call, result, err)
}

// errNoCall answers Respond without a verified call.
var errNoCall = newError(CodeExecutionFailed, "no verified Median call on this request: mount the Median middleware before this handler")

// fallbackHandler encodes answers for calls no Handler verified.
var fallbackHandler = &Handler{log: slog.Default(), now: time.Now}

// UnknownTool returns the 404 unknown_tool error for a tool this server does
// not offer. Middleware handlers that dispatch tools themselves pass it to
// Respond (or an adapter's Respond) for a name they do not know, so the
// answer is the contract's and is stored like any other.
func UnknownTool(name string) *Error {
	return newError(CodeUnknownTool, fmt.Sprintf("no tool named %q is registered on this server; sync the tool list in Median or register the tool", truncate(name, 64)))
}

// check runs the contract's checks in order. lookup makes an unknown tool an
// error (Serve); without it unknown tools pass (Verify).
func (h *Handler) check(ctx context.Context, req Request, lookup bool) (*Call, Response, bool) {
	if req.Method != http.MethodPost && req.Method != http.MethodGet {
		resp := errorResponse(newError(CodeMethodNotAllowed, fmt.Sprintf("method %s is not allowed; Median sends POST (and GET for the manifest)", truncate(req.Method, 16))))
		resp.Allow = AllowHeader
		return nil, resp, false
	}
	if h.keyErr != nil {
		return nil, errorResponse(h.keyErr), false
	}
	sig, err := ParseSignature(req.Signature)
	if err == nil {
		err = sig.CheckTime(h.now(), h.tolerance)
	}
	if err != nil {
		return nil, errorResponse(asError(err)), false
	}
	body, bodyErr := h.readBody(req)
	if bodyErr != nil {
		return nil, errorResponse(bodyErr), false
	}
	if err := sig.Verify(body, h.keys...); err != nil {
		return nil, errorResponse(asError(err)), false
	}
	if req.Method == http.MethodGet {
		return nil, Response{Status: http.StatusOK, Body: h.manifest}, false
	}
	op, call, err := decodeBody(body)
	if err != nil {
		return nil, errorResponse(asError(err)), false
	}
	if op == OpDiagnostics {
		return nil, h.runDiagnostics(ctx), false
	}
	call.handler = h
	tool := h.tools[call.Tool]
	if tool == nil && lookup {
		return call, errorResponse(UnknownTool(call.Tool)), false
	}
	if tool != nil {
		if e := tool.checkInput(call.RawInput); e != nil {
			return call, errorResponse(e), false
		}
		if lookup {
			run, err := h.safePrepare(ctx, tool, call)
			if err != nil {
				return call, errorResponse(asError(err)), false
			}
			call.run = run
		}
	}
	if stored, ok := h.claim(ctx, call, body); !ok {
		return call, stored, false
	}
	return call, Response{}, true
}

// readBody reads the body up to the limit: 413 beyond it.
func (h *Handler) readBody(req Request) ([]byte, *Error) {
	tooLarge := func() *Error {
		return &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeInvalidBody,
			Message: fmt.Sprintf("the body is larger than the %d-byte limit", h.maxBody)}
	}
	if req.Body == nil {
		if int64(len(req.BodyBytes)) > h.maxBody {
			return nil, tooLarge()
		}
		return req.BodyBytes, nil
	}
	if req.ContentLength > h.maxBody {
		return nil, tooLarge()
	}
	size := int64(512)
	if req.ContentLength >= 0 {
		size = req.ContentLength + 1 // +1 to see EOF without growing
	}
	buf := make([]byte, 0, size)
	r := io.LimitReader(req.Body, h.maxBody+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > h.maxBody {
			return nil, tooLarge()
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, invalidBody("the body could not be read: " + err.Error())
		}
	}
}

// claim takes the call's toolCallId in the replay store. It returns false
// and the answer to send when the call must not run now.
func (h *Handler) claim(ctx context.Context, call *Call, body []byte) (Response, bool) {
	if h.store == nil {
		return Response{}, true
	}
	sum := sha256.Sum256(body)
	fp := hex.EncodeToString(sum[:])
	lease := h.lease
	if lease <= 0 {
		lease = DefaultReplayLease
		if t := h.tools[call.Tool]; t != nil && t.timeout+10*time.Second > lease {
			lease = t.timeout + 10*time.Second
		}
	}
	res, err := storeClaim(ctx, h.store, call.ToolCallID, fp, lease)
	switch {
	case err != nil && ctx.Err() != nil:
		return errorResponse(newError(CodeExecutionFailed, "the request ended while another request with the same toolCallId was still running")), false
	case err != nil:
		h.log.ErrorContext(ctx, "median: replay store failed; the tool was not run", "tool", call.Tool, "toolCallId", call.ToolCallID, "error", err)
		return errorResponse(newError(CodeExecutionFailed, "the server could not record this call, so the tool was not run; try again later")), false
	case res.Status == ClaimDone:
		return storedResponse(res.Answer), false
	case res.Status == ClaimConflict:
		return errorResponse(&Error{Status: http.StatusConflict, Code: CodeInvalidBody,
			Message: fmt.Sprintf("toolCallId %q was already used for a different call; every call needs its own id", truncate(call.ToolCallID, 80))}), false
	}
	call.claim = &claim{store: h.store, fingerprint: fp}
	return Response{}, true
}

// storeClaim calls s.Claim, turning a panic in it into an error: a broken
// store fails the call, it does not take the server down.
func storeClaim(ctx context.Context, s Store, id, fp string, lease time.Duration) (res ClaimResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = ClaimResult{}, fmt.Errorf("the replay store panicked in Claim: %v", p)
		}
	}()
	return s.Claim(ctx, id, fp, lease)
}

// storeSave calls s.Save, turning a panic in it into an error.
func storeSave(ctx context.Context, s Store, id, fp string, answer []byte, ttl time.Duration) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the replay store panicked in Save: %v", p)
		}
	}()
	return s.Save(ctx, id, fp, answer, ttl)
}

// storedResponse rebuilds an answer kept by the replay store. The store keeps
// only the body, so the code and status come from it: a replayed
// execution_failed keeps its code, a replayed invalid_input stays 400.
func storedResponse(body []byte) Response {
	resp := Response{Status: http.StatusOK, Body: body, replayed: true}
	if isResult(body) {
		return resp
	}
	var e struct {
		Error struct {
			Code Code `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Code != "" {
		resp.code, resp.Status = e.Error.Code, e.Error.Code.Status()
	}
	return resp
}

// save stores the answer of a claimed call.
func (h *Handler) save(ctx context.Context, call *Call, resp Response) {
	if call == nil || call.claim == nil {
		return
	}
	c := call.claim
	call.claim = nil
	// The answer must be kept even when the caller has gone away.
	ctx = context.WithoutCancel(ctx)
	if err := storeSave(ctx, c.store, call.ToolCallID, c.fingerprint, resp.Body, h.ttl); err != nil {
		h.log.ErrorContext(ctx, "median: replay store could not save the answer; a repeat of this call may run the tool again", "tool", call.Tool, "toolCallId", call.ToolCallID, "error", err)
	}
}

// observe reports a finished request to the observer.
func (h *Handler) observe(method string, call *Call, resp Response, start time.Time) {
	if resp.code != "" && resp.code != CodeExecutionFailed && resp.code != CodeDiagnosticsUnsupported {
		h.log.Debug("median: request refused", "status", resp.Status, "code", resp.code)
	}
	if h.observer == nil {
		return
	}
	ev := Event{Method: method, Code: resp.code, Status: resp.Status, Duration: time.Since(start), Replayed: resp.replayed}
	if call != nil {
		ev.Tool, ev.ToolCallID = call.Tool, call.ToolCallID
	}
	defer func() {
		if p := recover(); p != nil {
			h.log.Error("median: Config.Observer panicked; the answer is sent anyway", "panic", fmt.Sprint(p))
		}
	}()
	h.observer(ev)
}

// Settle makes sure a call that middleware let through has an answer in the
// replay store. The adapters' middleware defers it around your handler:
// when the handler returned (or panicked) without answering through
// Respond, Settle stores execution_failed for the call's toolCallId, so a
// repeat gets that answer at once instead of waiting for the claim's lease
// and then running again. It writes nothing to the client and does nothing
// for a call that was answered.
func Settle(ctx context.Context, call *Call) {
	if call == nil || call.handler == nil || !call.answered.CompareAndSwap(false, true) {
		return
	}
	h := call.handler
	h.log.WarnContext(ctx, "median: a verified call was not answered through Respond; repeats of its toolCallId will answer execution_failed", "tool", call.Tool, "toolCallId", call.ToolCallID)
	h.save(ctx, call, errorResponse(newError(CodeExecutionFailed, "the server's handler did not answer this call")))
}

// runDiagnostics answers {"op": "diagnostics"} under the deadline.
func (h *Handler) runDiagnostics(ctx context.Context) Response {
	if h.diagnostics == nil {
		return errorResponse(newError(CodeDiagnosticsUnsupported, "this server collects no diagnostics"))
	}
	ctx, cancel := context.WithTimeout(ctx, h.diagnosticsTimeout)
	defer cancel()
	type outcome struct {
		v   any
		err error
	}
	done := make(chan outcome, 1) // buffered: a late function never blocks
	go func() {
		var o outcome
		defer func() {
			if p := recover(); p != nil {
				h.logPanic(ctx, "diagnostics", "", p)
				o = outcome{err: errPanicked}
			}
			done <- o
		}()
		o.v, o.err = h.diagnostics(ctx)
	}()
	select {
	case o := <-done:
		if o.err != nil && !errors.As(o.err, new(*Refusal)) {
			return errorResponse(newError(CodeExecutionFailed, "diagnostics failed: "+o.err.Error()))
		}
		resp := h.safeEncodeDiagnostics(ctx, refusalOr(o.v, o.err))
		if n := countChars(resp.Body); n > MaxDiagnosticsChars {
			h.log.WarnContext(ctx, "median: diagnostics answer is longer than Median keeps", "chars", n, "limit", MaxDiagnosticsChars)
		}
		return resp
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return errorResponse(newError(CodeExecutionFailed, fmt.Sprintf("diagnostics did not finish within %s", h.diagnosticsTimeout)))
		}
		return errorResponse(newError(CodeExecutionFailed, "the request ended before diagnostics finished"))
	}
}

// errPanicked stands for a recovered panic.
var errPanicked = errors.New("panicked")

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// bodyPrefix is how a result answer starts.
var bodyPrefix = []byte(`{"result":`)

// isResult reports whether an encoded answer is a result.
func isResult(body []byte) bool { return bytes.HasPrefix(body, bodyPrefix) }

// safeEncodeDiagnostics encodes a diagnostics result, answering a panic in
// its MarshalJSON as a failure.
func (h *Handler) safeEncodeDiagnostics(ctx context.Context, v any) (resp Response) {
	defer func() {
		if p := recover(); p != nil {
			h.logPanic(ctx, "diagnostics", "", p)
			resp = errorResponse(newError(CodeExecutionFailed, "diagnostics failed unexpectedly"))
		}
	}()
	return h.encodeResult(ctx, "diagnostics", v, 0)
}
