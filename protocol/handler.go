package protocol

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/median-go/median/internal/adapt/httpwire"
)

// Handler answers the Median tool endpoint. Build it with [New]; it is safe
// for concurrent use. Mount it as an [http.Handler] (ServeMux, chi, any
// router that takes one), wrap your own handler with [Handler.Middleware],
// or go through an adapter (ginmedian, echomedian, chimedian, fibermedian,
// hertzmedian).
type Handler struct {
	// cfg is the Config given to New with every default filled in (see
	// withDefaults). Its Keys are dropped once parsed; Store is nil when
	// replay protection is off.
	cfg Config

	keys      atomic.Pointer[keyring] // the keys in force; see keyring
	keyReader *keyReader              // reads keys that change while the server runs; nil when they are read once

	tools       map[string]*Tool // cfg.Tools by name
	manifest    []byte           // the GET answer, built once
	manifestSum string           // hex SHA-256 of manifest, for the report

	runner claimRunner // cfg.Store, when it runs claimed calls in its own transaction

	renewals *renewals // renews the claims of the calls that run (nil in the zero Handler)
	resaves  *resaves  // saves again the answers a shared store failed to save

	stats      *stats        // the diagnostics report's counters
	appTimeout time.Duration // bounds cfg.Diagnostics, the report's app entry

	// systemClock is true when Config.Now was not set: a request's start
	// (time.Now in begin) is then also its now, read once.
	systemClock bool

	// Warnings that could come once per request are logged at most once
	// per logInterval each, and so is every line a request can cause
	// before its signature is verified: a client with no key must not be
	// able to flood the log.
	offContract   rareLog // a handler answered a verified call outside the contract
	unanswered    rareLog // a handler left a verified call unanswered
	declaredRun   rareLog // a call of a declared tool reached Serve
	unreadBody    rareLog // a request body could not be read to its end (before the signature is verified)
	unverified    rareLog // a request refused before its signature was verified (at debug level)
	observerPanic rareLog // Config.Observer panicked on a request whose signature was not verified
	renewFailed   rareLog // a claim could not be renewed
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
	h := &Handler{cfg: withDefaults(cfg), tools: make(map[string]*Tool, len(cfg.Tools)),
		appTimeout: min(orDefault(cfg.DiagnosticsTimeout, defaultAppTimeout), maxAppTimeout), systemClock: cfg.Now == nil}
	h.runner, _ = h.cfg.Store.(claimRunner)
	var problems []error
	for i, t := range cfg.Tools {
		if t == nil {
			problems = append(problems, fmt.Errorf("tool %d is nil", i))
			continue
		}
		if err := t.Err(); err != nil {
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
	src, err := keySourceFor(cfg)
	if err != nil {
		problems = append(problems, err)
	}
	var keys []Key
	var names []string
	var keyErr *Error
	if src == nil && err == nil {
		keys, names, keyErr = parseKeys(cfg.Keys)
	}
	if len(problems) > 0 {
		if keyErr != nil {
			problems = append(problems, keyErr)
		}
		return nil, fmt.Errorf("median: %w", errors.Join(problems...))
	}
	h.manifest = buildManifest(cfg.Tools)
	sum := sha256.Sum256(h.manifest)
	h.manifestSum = hex.EncodeToString(sum[:])
	h.stats = newStats(h.cfg.Now(), h.tools)
	h.renewals, h.resaves = newRenewals(h, h.stats.stripes.n), newResaves(h)
	if src != nil {
		h.keyReader = startKeyReader(h, src) // it logs a missing key itself
		if keyErr = h.keyring().err; keyErr != nil {
			return h, keyErr
		}
		return h, nil
	}
	if keyErr != nil {
		h.keys.Store(&keyring{err: keyErr})
		h.cfg.Logger.Error("median: the endpoint will answer 500 until a usable key is configured", "code", keyErr.Code, "error", keyErr.Message)
		return h, keyErr
	}
	h.keys.Store(newKeyring(keys, names, nil))
	return h, nil
}

// withDefaults returns cfg with the documented default of every field that
// is not set, and without its keys (New keeps them parsed).
func withDefaults(cfg Config) Config {
	cfg.Keys = nil
	cfg.DiagnosticsTimeout = orDefault(cfg.DiagnosticsTimeout, defaultDiagnosticsTimeout)
	cfg.Tolerance = orDefault(cfg.Tolerance, defaultTolerance)
	cfg.StoreTimeout = orDefault(cfg.StoreTimeout, defaultStoreTimeout)
	cfg.ReplayTTL = orDefault(cfg.ReplayTTL, 2*cfg.Tolerance)
	cfg.ReplayLease = orDefault(cfg.ReplayLease, defaultLease(cfg.StoreTimeout))
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = defaultMaxBodyBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.DisableReplayProtection {
		cfg.Store = nil
	} else if cfg.Store == nil {
		cfg.Store = newMemoryStore(cfg.ReplayMaxBytes, nil)
	}
	return cfg
}

// ServeHTTP answers the Median endpoint on net/http. Register it for every
// method on both the mount path and the path with a trailing slash; on an
// [http.ServeMux], [Handler.Mount] does that.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.Serve(r.Context(), requestFromHTTP(r)).write(w)
}

// requestFromHTTP is the core's view of a net/http request; the body is
// left unread.
func requestFromHTTP(r *http.Request) Request {
	return Request{Method: r.Method, Signature: httpwire.Signature(r), Check: httpwire.Check(r), Body: r.Body, ContentLength: r.ContentLength}
}

// begin starts the core's state for one request.
func (h *Handler) begin(req Request) *callState {
	return &callState{h: h, method: req.Method, start: time.Now(), maxAnswer: req.MaxAnswerBytes}
}

// front runs the checks of PROTOCOL.md §5 that [Handler.Serve] and
// [Handler.Verify] share, steps 1 to 7, and answers what is not a call of
// a registered tool: ok is true when st holds such a call.
func (h *Handler) front(ctx context.Context, st *callState, req Request) (Response, bool) {
	now := st.start
	if !h.systemClock {
		now = h.cfg.Now()
	}
	// 1. the method
	if req.Method != http.MethodPost && req.Method != http.MethodGet {
		resp := errorResponse(errorf(CodeMethodNotAllowed, "method %s is not allowed; Median sends POST (and GET for the manifest)", truncate(req.Method, 16)))
		resp.Allow = httpwire.Allow
		st.unsignedCheck(req.Check, now, h.keyring())
		return resp, false
	}
	// 2. a usable key, from the keys in force when the request arrived
	keys := h.keyring() // read once
	if keys.err != nil {
		return errorResponse(keys.err), false
	}
	// 3. the signature header, before a byte of the body is read
	sig, err := parseSignature(req.Signature)
	stale := false
	if err == nil {
		err = sig.checkTime(now, h.cfg.Tolerance)
		stale = err != nil
	}
	if err != nil {
		if st.unsignedCheck(req.Check, now, keys); stale && !st.check {
			h.stats.staleSkew(skewMs(now, sig.timestamp), now)
		}
		return errorResponse(asError(err)), false
	}
	// 4. the body's size
	body, e := h.readBody(ctx, req)
	if e != nil {
		st.unsignedCheck(req.Check, now, keys)
		return errorResponse(e), false
	}
	// 5. the signature against the body
	i := sig.match(body, keys.keys)
	if i < 0 {
		st.unsignedCheck(req.Check, now, keys)
		return errorResponse(errInvalidSignature), false
	}
	st.verified = true
	if req.Check != "" && signedCheck(req.Check, sig.ts, keys.keys[i], now, keys.keys) {
		st.check, st.checkToken = true, keys.keys[i].checkToken(now)
	}
	if h.stats != nil { // nil only in the zero Handler and a benchmark's baseline
		st.stripe = h.stats.stripes.pick()
		if !st.check { // the keys' counts say what Median signs with
			keys.keys[i].verifiedAt(now, st.stripe)
		}
	}
	if req.Method == http.MethodGet {
		if !st.check {
			h.stats.manifestServed(now)
		}
		return Response{Status: http.StatusOK, Body: h.manifest}, false
	}
	if req.Body == nil {
		// The call keeps its body past Serve (Call.Body, RawInput,
		// Event.Input) and the adapter may reuse BodyBytes once Serve
		// returns: the signed bytes are copied, once, here.
		body = bytes.Clone(body)
	}
	// 6. the body's shape
	op, call, err := decodeBody(body)
	if err != nil {
		return errorResponse(asError(err)), false
	}
	// 7. the op, or the tool lookup
	if op == opDiagnostics {
		return h.runDiagnostics(ctx, now, skewMs(now, sig.timestamp)), false
	}
	st.call, st.tool = call, h.tools[call.Tool]
	if st.tool == nil {
		return errorResponse(unknownTool(call.Tool)), false
	}
	return Response{}, true
}

// checkInput validates the call's input against its tool's schema
// (PROTOCOL.md §5 step 8): invalid_input lists every problem.
func (h *Handler) checkInput(st *callState) (Response, bool) {
	if e := st.tool.checkInput(st.call.RawInput); e != nil {
		return errorResponse(e), false
	}
	return Response{}, true
}

// prepare decodes the call's input into the tool's input type and runs
// its Validate method, for [Handler.Serve]; st.run is then the tool's run.
func (h *Handler) prepare(ctx context.Context, st *callState) (Response, bool) {
	run, err := protect(h, ctx, "the input type's Validate or UnmarshalJSON", st.call, func() (func(context.Context) (any, error), error) {
		return st.tool.prepare(st.call)
	})
	if err != nil {
		return h.encodeAnswer(ctx, st, nil, err), false
	}
	st.run = run
	return Response{}, true
}

// readBody reads the body up to the limit: 413 beyond it. A body that
// cannot be read to its end is answered without transport details (which
// go to the log, at most once per logInterval: no signature is verified
// yet): PROTOCOL.md §7.
//
// The header checks before it need no secret, so what readBody reserves
// follows the bytes that arrive, not the length declared: at most
// firstBodyChunk before the first byte, then twice what arrived (see
// growBody). A body of the usual size is still read into one buffer of
// exactly its declared length.
func (h *Handler) readBody(ctx context.Context, req Request) ([]byte, *Error) {
	limit := h.cfg.MaxBodyBytes
	tooLarge := func() *Error {
		return &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeInvalidBody,
			Message: fmt.Sprintf("the body is larger than the %d-byte limit", limit)}
	}
	if req.Body == nil {
		if int64(len(req.BodyBytes)) > limit {
			return nil, tooLarge()
		}
		return req.BodyBytes, nil
	}
	if req.ContentLength > limit {
		return nil, tooLarge()
	}
	want := int64(-1) // the declared length +1, to see EOF without growing; -1 when unknown
	size := int64(unknownBodyChunk)
	if req.ContentLength >= 0 {
		want = req.ContentLength + 1
		size = min(want, firstBodyChunk)
	}
	buf := make([]byte, 0, size)
	r := io.LimitReader(req.Body, limit+1)
	for {
		if len(buf) == cap(buf) {
			buf = growBody(buf, want, limit+1)
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, tooLarge()
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			if ok, held := h.unreadBody.allow(h.cfg.Now()); ok {
				h.cfg.Logger.InfoContext(ctx, "median: the request body could not be read", "read", len(buf), "error", errorText(err), "suppressed", held)
			}
			return nil, newError(CodeInvalidBody, "the body could not be read to its end: the client stopped sending it or the connection failed")
		}
	}
}

// What readBody reserves before a body's bytes arrive: the declared length
// up to firstBodyChunk (1 KiB to a few KiB is the usual call), or
// unknownBodyChunk when no length is declared.
const (
	firstBodyChunk   = 16 << 10
	unknownBodyChunk = 512
)

// growBody returns full (len == cap) in a buffer twice as large, but no
// larger than want (the declared length +1, when known and larger) or
// most (the limit +1): the last step of an honest body lands on its
// declared length exactly. It always grows by at least one byte, as full
// holds at most the limit.
func growBody(full []byte, want, most int64) []byte {
	c := int64(cap(full))
	next := 2 * c
	if want > c {
		next = min(next, want)
	}
	next = max(min(next, most), c+1)
	grown := make([]byte, len(full), next)
	copy(grown, full)
	return grown
}

// finish ends every request: it keeps the answer for replays when the call
// holds a claim in the replay store (once), then reports the answer to the
// log and the observer. Every answer the core gives goes through it.
func (h *Handler) finish(ctx context.Context, st *callState, resp Response) Response {
	resp = h.fit(ctx, st, resp)
	// One reading of the clock serves the memory store's save (as st.now()
	// would), the counters and the observer; a slow save (a shared store's,
	// or one that logged) is part of the request's time, so the clock is
	// read again after it.
	took := time.Since(st.start)
	evicted, slow := h.save(ctx, st, resp, st.start.Add(took))
	resp.evicted = evicted
	if resp.Status != 0 {
		resp.CheckToken = st.checkToken
	}
	if slow {
		took = time.Since(st.start)
	}
	h.observe(ctx, st, resp, took)
	return resp
}

// observe logs a refused request and reports every answered one, which
// took took, to the observer. A check's request is counted in the checks
// section of the report only (PROTOCOL.md §10). What a request whose
// signature was not verified causes is logged at most once per logInterval.
func (h *Handler) observe(ctx context.Context, st *callState, resp Response, took time.Duration) {
	refused := resp.code != "" && resp.code != CodeExecutionFailed && resp.code != CodeDiagnosticsUnsupported
	if refused {
		if st.verified {
			h.cfg.Logger.DebugContext(ctx, "median: request refused", "status", resp.Status, "code", resp.code, "check", st.check)
		} else if ok, held := h.unverified.allow(h.cfg.Now()); ok {
			h.cfg.Logger.DebugContext(ctx, "median: request refused", "status", resp.Status, "code", resp.code, "check", st.check, "suppressed", held)
		}
	}
	switch {
	case h.stats == nil:
	case st.check:
		code := Code("")
		if refused {
			code = resp.code
		}
		h.stats.checked(code, st.tool != nil, h.cfg.Now())
	default:
		if refused {
			h.stats.refusal(resp.code, h.cfg.Now())
		}
		if st.tool != nil {
			if t := h.stats.tools[st.tool.name]; t != nil {
				t.answer(st.stripe, resp, st.start, took, h.cfg.Now)
			}
		}
	}
	observer := h.cfg.Observer
	if observer == nil {
		return
	}
	ev := Event{Method: st.method, Code: resp.code, Status: resp.Status, Refusal: resp.refusal, Replayed: resp.replayed,
		Check: st.check, EvictedEarly: resp.evicted, Answer: resp.Body, Start: st.start, Duration: took}
	if resp.offContract { // what went out is the handlers' own response, not the answer kept for repeats
		ev.Status, ev.Code, ev.Answer, ev.OffContract = int(resp.written), "", nil, true
	}
	if c := st.call; c != nil {
		ev.Tool, ev.ToolCallID, ev.Risk, ev.Input = c.Tool, c.ToolCallID, c.Risk, c.RawInput
		if ev.Code == CodeExecutionFailed {
			ev.ErrorRef = errorRefOf(c.Tool, ev.Answer)
		}
	}
	if st.verified {
		_, _ = protect(h, ctx, "Config.Observer", nil, func() (struct{}, error) {
			observer(ctx, ev)
			return struct{}{}, nil
		})
		return
	}
	defer func() {
		if p := recover(); p != nil {
			if ok, held := h.observerPanic.allow(h.cfg.Now()); ok {
				h.logPanic(ctx, "Config.Observer", nil, p, "suppressed", held)
			}
		}
	}()
	observer(ctx, ev)
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
