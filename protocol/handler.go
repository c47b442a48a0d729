package protocol

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// Handler answers the Median tool endpoint. Build it with [New]; it is safe
// for concurrent use. Mount it as an [http.Handler] (ServeMux, chi, any
// router that takes one), wrap your own handler with [Handler.Middleware],
// or go through an adapter (ginmedian, echomedian, chimedian, fibermedian).
type Handler struct {
	keys   []Key
	keyErr *Error // answered 500 on every request when no usable key is set

	tools        map[string]*Tool
	manifest     []byte
	interceptors []Interceptor
	riskWarnOnly bool

	diagnostics        func(context.Context) (any, error)
	diagnosticsTimeout time.Duration
	maxBody            int64
	tolerance          time.Duration
	now                func() time.Time
	log                *slog.Logger
	observer           func(context.Context, Event)
	errorMessage       func(context.Context, *Call, error) string

	store        Store
	lease        time.Duration
	ttl          time.Duration
	storeTimeout time.Duration
}

// New builds a Handler from cfg. Every problem is reported at once, joined
// in the error: each unusable tool (bad name, duplicate name, a schema that
// does not compile, a type that cannot be described) and the key.
//
// A key problem alone (errors.Is(err, CodeMissingSecret) or
// errors.Is(err, CodeInvalidMedianKey)) still returns a Handler, which
// answers every request 500 missing_secret or invalid_median_key, never
// fail-open; it is also logged once. Return the error from your constructor
// as usual: the endpoint then never starts with a bad key. Any tool problem
// returns a nil Handler.
func New(cfg Config) (*Handler, error) {
	h := &Handler{
		tools:              make(map[string]*Tool, len(cfg.Tools)),
		interceptors:       cfg.Interceptors,
		riskWarnOnly:       cfg.RiskFloorWarnOnly,
		diagnostics:        cfg.Diagnostics,
		diagnosticsTimeout: orDefault(cfg.DiagnosticsTimeout, defaultDiagnosticsTimeout),
		maxBody:            cfg.MaxBodyBytes,
		tolerance:          orDefault(cfg.Tolerance, defaultTolerance),
		now:                cfg.Now,
		log:                cfg.Logger,
		observer:           cfg.Observer,
		errorMessage:       cfg.ErrorMessage,
		store:              cfg.Store,
		lease:              cfg.ReplayLease,
		ttl:                cfg.ReplayTTL,
		storeTimeout:       orDefault(cfg.StoreTimeout, defaultStoreTimeout),
	}
	if h.maxBody <= 0 {
		h.maxBody = defaultMaxBodyBytes
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
		h.store = newMemoryStore(cfg.ReplayMaxBytes, nil)
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
	for i, ic := range cfg.Interceptors {
		if ic == nil {
			problems = append(problems, fmt.Errorf("interceptor %d is nil", i))
		}
	}
	keys, keyErr := parseKeys(cfg.Keys)
	if len(problems) > 0 {
		if keyErr != nil {
			problems = append(problems, keyErr)
		}
		return nil, fmt.Errorf("median: %w", errors.Join(problems...))
	}
	h.manifest = buildManifest(cfg.Tools)
	if keyErr != nil {
		h.keyErr = keyErr
		h.log.Error("median: the endpoint will answer 500 until a usable key is configured", "code", keyErr.Code, "error", keyErr.Message)
		return h, keyErr
	}
	h.keys = keys
	return h, nil
}

// Request is what an adapter for a framework not built on net/http (such
// as fasthttp) passes to [Handler.Serve] and [Handler.Verify]: the method,
// the median-signature header and the body. The body is read only after the
// header checks pass, and never past the size limit.
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

// Response is an answer ready to write: the status, the JSON body and, on
// 405, the value of the Allow header. Write it with Content-Type
// application/json. Adapters for frameworks not built on net/http write it;
// nothing else needs to.
type Response struct {
	Status int    // the HTTP status; 0 only for a second answer to one call, which must not be written
	Body   []byte // the JSON answer
	Allow  string // the Allow header's value, set on 405 only

	code     Code   // for the observer and the log
	refusal  string // the refusal's reason, when the answer is a refusal result
	replayed bool   // the answer came from the replay store
	evicted  int    // answers the replay store dropped early to keep this one
}

var (
	contentTypeValue = []string{"application/json"}
	allowValue       = []string{"GET, POST"}
)

// write writes the response to w; the zero Response writes nothing.
func (r Response) write(w http.ResponseWriter) {
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

// ServeHTTP answers the Median endpoint on net/http. Register it for every
// method on both the mount path and the path with a trailing slash; on an
// [http.ServeMux], [Handler.Mount] does that.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.Serve(r.Context(), requestFromHTTP(r)).write(w)
}

// Mount registers the whole endpoint on mux at path ("/api/median"): the
// path and the path with a trailing slash, for every method, so that GET
// gets the manifest and any other method the contract's 405. With handlers,
// they answer the verified calls behind [Handler.Middleware] instead of the
// Handler's own tools. They run in order until one answers (with
// [Respond]); none calls the next, like a router's handler chain: an
// authorization check, then your dispatcher.
//
// It avoids the trap of Go 1.22's method patterns: with
// mux.Handle("POST /api/median", h) the mux itself answers GET (the
// manifest Median syncs tools with) and other methods with its own
// plain-text 405, and "/api/median/" is not routed. Like mux.Handle, Mount
// panics when a pattern is already registered.
func (h *Handler) Mount(mux *http.ServeMux, path string, handlers ...http.Handler) {
	var handler http.Handler = h
	if len(handlers) > 0 {
		handler = h.Middleware(chain(handlers))
	}
	path = "/" + strings.Trim(path, "/")
	if path == "/" {
		mux.Handle("/{$}", handler)
		return
	}
	mux.Handle(path, handler)
	mux.Handle(path+"/{$}", handler)
}

// chain runs handlers in order until one answers the verified call.
func chain(handlers []http.Handler) http.Handler {
	if len(handlers) == 1 {
		return handlers[0]
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ex := exchangeFrom(r.Context())
		for _, next := range handlers {
			next.ServeHTTP(w, r)
			if ex == nil || ex.answered.Load() {
				return
			}
		}
	})
}

// requestFromHTTP is the core's view of a net/http request; the body is
// left unread.
func requestFromHTTP(r *http.Request) Request {
	sig := ""
	if v := r.Header["Median-Signature"]; len(v) > 0 {
		sig = v[0]
	}
	return Request{Method: r.Method, Signature: sig, Body: r.Body, ContentLength: r.ContentLength}
}

// Serve answers one request: it runs every check of PROTOCOL.md §5 in
// order, then the tool, and returns the answer. Adapters for frameworks not
// built on net/http call it and write the Response; they never build an
// answer of their own. ctx is the tool's context: values on it reach the
// tool.
func (h *Handler) Serve(ctx context.Context, req Request) Response {
	start := time.Now()
	ex, resp, ok := h.check(ctx, req, true, start)
	if ok {
		resp = h.run(ctx, ex)
	}
	h.observe(ctx, req.Method, ex, resp, start)
	return resp
}

// Verify runs the checks of PROTOCOL.md §5 through the replay store, then
// the interceptors, for middleware whose own handler answers (see
// [Handler.Middleware]; adapters for frameworks not built on net/http call
// it). When ok, the request is a verified tool call: the returned context
// carries it ([CallFrom]); the handler answers it with [Answer] on that
// context, and once the handler is done the adapter writes what
// Settle(callCtx, recover()) returns. Otherwise resp is the answer to write:
// a refusal, the GET manifest, the diagnostics answer, an interceptor's
// answer, or the stored answer of a repeated toolCallId.
//
// A call for a registered tool has its input validated and the risk floor
// applied; a call for any other tool passes, so your handler can dispatch
// tools the Handler does not know (answer [CodeUnknownTool] as the error for
// the rest).
func (h *Handler) Verify(ctx context.Context, req Request) (callCtx context.Context, resp Response, ok bool) {
	start := time.Now()
	ex, resp, ok := h.check(ctx, req, false, start)
	if !ok {
		h.observe(ctx, req.Method, ex, resp, start)
		return ctx, resp, false
	}
	if resp, stop := h.intercept(ctx, ex); stop {
		return ctx, h.finish(ctx, ex, resp), false
	}
	return context.WithValue(ctx, exchangeKey{}, ex), Response{}, true
}

// check runs the contract's checks in order. lookup makes an unknown tool
// an error (Serve); without it unknown tools pass (Verify).
func (h *Handler) check(ctx context.Context, req Request, lookup bool, start time.Time) (*exchange, Response, bool) {
	if req.Method != http.MethodPost && req.Method != http.MethodGet {
		resp := errorResponse(errorf(CodeMethodNotAllowed, "method %s is not allowed; Median sends POST (and GET for the manifest)", truncate(req.Method, 16)))
		resp.Allow = allowValue[0]
		return nil, resp, false
	}
	if h.keyErr != nil {
		return nil, errorResponse(h.keyErr), false
	}
	sig, err := parseSignature(req.Signature)
	if err == nil {
		err = sig.checkTime(h.now(), h.tolerance)
	}
	if err != nil {
		return nil, errorResponse(asError(err)), false
	}
	body, e := h.readBody(ctx, req)
	if e != nil {
		return nil, errorResponse(e), false
	}
	if err := sig.verify(body, h.keys...); err != nil {
		return nil, errorResponse(asError(err)), false
	}
	if req.Method == http.MethodGet {
		return nil, Response{Status: http.StatusOK, Body: h.manifest}, false
	}
	op, call, err := decodeBody(body)
	if err != nil {
		return nil, errorResponse(asError(err)), false
	}
	if op == opDiagnostics {
		return nil, h.runDiagnostics(ctx), false
	}
	ex := &exchange{h: h, call: call, tool: h.tools[call.Tool], start: start}
	if ex.tool == nil && lookup {
		return ex, errorResponse(unknownTool(call.Tool)), false
	}
	if ex.tool != nil {
		if e := ex.tool.checkInput(call.RawInput); e != nil {
			return ex, errorResponse(e), false
		}
		if lookup {
			run, err := protect(h, ctx, "the input type's Validate or UnmarshalJSON", call, func() (func(context.Context) (any, error), error) {
				return ex.tool.prepare(call)
			})
			if err != nil {
				return ex, h.encodeAnswer(ctx, ex, nil, err), false
			}
			ex.run = run
		}
		if resp, refused := h.riskFloor(ctx, ex); refused {
			return ex, resp, false
		}
	}
	if stored, ok := h.claim(ctx, ex, body); !ok {
		return ex, stored, false
	}
	return ex, Response{}, true
}

// readBody reads the body up to the limit: 413 beyond it. A body that
// cannot be read to its end is answered without transport details (which
// go to the log): PROTOCOL.md §7.
func (h *Handler) readBody(ctx context.Context, req Request) ([]byte, *Error) {
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
			h.log.InfoContext(ctx, "median: the request body could not be read", "read", len(buf), "error", err)
			return nil, newError(CodeInvalidBody, "the body could not be read to its end: the client stopped sending it or the connection failed")
		}
	}
}

// observe logs a refused request and reports every answered one to the
// observer.
func (h *Handler) observe(ctx context.Context, method string, ex *exchange, resp Response, start time.Time) {
	if resp.code != "" && resp.code != CodeExecutionFailed && resp.code != CodeDiagnosticsUnsupported {
		h.log.DebugContext(ctx, "median: request refused", "status", resp.Status, "code", resp.code)
	}
	if h.observer == nil {
		return
	}
	ev := Event{Method: method, Code: resp.code, Status: resp.Status, Refusal: resp.refusal, Replayed: resp.replayed,
		EvictedEarly: resp.evicted, Answer: resp.Body, Start: start, Duration: time.Since(start)}
	if ex != nil {
		c := ex.call
		ev.Tool, ev.ToolCallID, ev.Risk, ev.Input = c.Tool, c.ToolCallID, c.Risk, c.RawInput
	}
	_, _ = protect(h, ctx, "Config.Observer", nil, func() (struct{}, error) {
		h.observer(ctx, ev)
		return struct{}{}, nil
	})
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
