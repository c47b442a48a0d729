package protocol

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/median-go/median/internal/adapt/httpwire"
)

// This file is the API an adapter uses (see "Writing an adapter" in the
// package doc): the request it passes in, the answer it writes, and the
// four calls of the two modes.

// Request is what an adapter for a framework not built on net/http (such
// as fasthttp) passes to [Handler.Serve] and [Handler.Verify]: the method,
// the median-signature and Median-Check headers and the body. The body is
// read only after the header checks pass, and never past the size limit.
//
// Who owns what: the core keeps nothing the Request points to once Serve
// or Verify returns, but for Method. Signature and BodyBytes may alias
// buffers the framework reuses for its next request (fasthttp's, Hertz's):
// the core copies the body, once, when its signature matches, and what it
// keeps past the call (the [Call], its Body and RawInput, [Event].Input,
// the answer kept for replays) is that copy or its own. Body, a reader, is
// read only before Serve or Verify returns, into the core's own buffer.
// Method must be a string of the adapter's own ([Config.Observer] may keep
// it). So an adapter passes the body its framework holds, without a copy
// of its own.
type Request struct {
	Method    string // the HTTP method, e.g. "POST"; not aliasing a reused buffer
	Signature string // the median-signature header, "" when absent
	// Check is the Median-Check header, "" when absent: a check's mark or
	// token, which counts the request apart from Median's in the
	// diagnostics report (PROTOCOL.md §10).
	Check string
	// Body is read at most to the limit. When nil, BodyBytes is used: an
	// adapter that already holds the bytes passes them there (a body over
	// the limit is refused without a copy).
	Body      io.Reader
	BodyBytes []byte
	// ContentLength is the declared length, or -1 (or 0) when unknown. A
	// declared length over the limit is refused without reading; the body
	// is still read only up to the limit whatever is declared.
	ContentLength int64

	// AnswerBy, when set, is when [Handler.Serve] must have answered, for
	// an adapter on a platform that ends a request at a deadline of its own
	// (AWS Lambda): the request's ctx ends then, and a tool still running
	// (even one that ignores its ctx) is answered execution_failed saying
	// it timed out, its claim settled with that answer; what the tool
	// returns later is dropped, with a warning. A tool run in a store's
	// transaction (a Store with RunClaimed, such as pgstore's) is not left
	// running: it must honour its ctx. Zero for a server's request, which
	// has no such deadline.
	AnswerBy time.Time
	// MaxAnswerBytes, when above 0, is the longest answer body the
	// adapter's platform can return: a longer answer is replaced, before
	// it is kept for replays, by execution_failed saying it is too large.
	MaxAnswerBytes int
}

// Response is an answer ready to write: the status, the JSON body, on 405
// the value of the Allow header, and for a check's signed request the
// value of the Median-Check-Token header. Write it with Content-Type
// application/json. Adapters for frameworks not built on net/http write it;
// nothing else needs to.
type Response struct {
	Status int    // the HTTP status; 0 when there is nothing to write
	Body   []byte // the JSON answer; write it as it is, never into it (the replay store may keep it)
	Allow  string // the Allow header's value, set on 405 only
	// CheckToken is the Median-Check-Token header's value: set only on
	// the answer to a check's signed request (PROTOCOL.md §10), "" otherwise.
	CheckToken string

	code        Code   // for the observer and the log
	refusal     string // the refusal's reason, when the answer is a refusal result
	replayed    bool   // the answer came from the replay store
	offContract bool   // the app's handlers answered on their own (Settle's written): the agent got their response, not Body
	written     int32  // with offContract, the status they wrote (int32 fits beside the flags: no larger Response)
	evicted     int    // answers the replay store dropped early to keep this one
}

// write writes the response to w; the zero Response writes nothing.
func (r Response) write(w http.ResponseWriter) {
	httpwire.Write(w, r.Status, r.Body, r.Allow != "", r.CheckToken)
}

// Serve answers one request: it runs every check of PROTOCOL.md §5 in
// order, then the tool, and returns the answer. Adapters for frameworks not
// built on net/http call it and write the Response; they never build an
// answer of their own. ctx is the tool's context: values on it reach the
// tool.
//
// Serve is the whole path of a request, from bytes to answer, one step per
// line.
func (h *Handler) Serve(ctx context.Context, req Request) Response {
	st := h.begin(req)
	if !req.AnswerBy.IsZero() { // the platform's deadline (answerby.go)
		var cancel context.CancelFunc
		ctx, cancel = st.bound(ctx, req)
		defer cancel()
	}
	resp, ok := h.front(ctx, st, req) // §5 steps 1-7: method … tool lookup
	if ok {
		resp, ok = h.checkInput(st) // 8: the input against the tool's schema
	}
	if ok {
		resp, ok = h.prepare(ctx, st) // 8: the input decoded into the tool's type
	}
	if ok {
		resp, ok = h.riskFloor(ctx, st) // 9
	}
	if ok && h.runner != nil {
		// 10 and 11 inside the store's transaction, with the tool's writes
		// (§8.1)
		return h.finish(ctx, st, h.runClaimed(ctx, st, h.runner))
	}
	if ok {
		resp, ok = h.acquireClaim(ctx, st) // 10: the replay store
	}
	if ok {
		resp, ok = h.intercept(ctx, st) // Config.Interceptors, the tool's own
	}
	if ok {
		resp = h.runTool(ctx, st) // 11
	}
	return h.finish(ctx, st, resp)
}

// Verify runs the checks of PROTOCOL.md §5 through the replay store, then
// the interceptors, for middleware whose own handlers answer (see
// [Handler.Middleware]; adapters for frameworks not built on net/http call
// it). When ok, the request is a verified call of a tool in
// [Config.Tools]: the returned context carries it ([CallFrom]); the
// handlers answer it with [Answer] on that context, and once they are done
// the adapter writes what [Settle] returns. Otherwise resp is the answer to
// write: a refusal (404 unknown_tool for a tool not in Config.Tools
// included), the GET manifest, the diagnostics answer, an interceptor's
// answer, or the stored answer of a repeated toolCallId.
//
// A verified call holds its toolCallId's claim in the replay store, which
// the Handler renews until the call is answered or settled, however long
// the handlers take: defer Settle, or the claim is renewed until
// [Handler.Close] (and copies of the call wait for it).
func (h *Handler) Verify(ctx context.Context, req Request) (callCtx context.Context, resp Response, ok bool) {
	st := h.begin(req)
	resp, ok = h.front(ctx, st, req) // §5 steps 1-7: method … tool lookup
	if ok {
		resp, ok = h.checkInput(st) // 8
	}
	if ok {
		resp, ok = h.riskFloor(ctx, st) // 9
	}
	if ok {
		resp, ok = h.acquireClaim(ctx, st) // 10
	}
	if ok {
		resp, ok = h.intercept(ctx, st)
	}
	if !ok {
		return ctx, h.finish(ctx, st, resp), false
	}
	return context.WithValue(ctx, callStateKey{}, st), Response{}, true // 11: the app's handlers answer
}

// Answer encodes the answer to the verified call on ctx (the context
// [Handler.Verify] returned) as [Respond] does, keeps it for replays, and
// returns it for the adapter to write: it is Respond for adapters of
// frameworks not built on net/http. A second answer to one call is the
// zero Response, which must not be written.
func Answer(ctx context.Context, result any, err error) Response {
	st := callStateFrom(ctx)
	if st == nil {
		return errorResponse(errNoCall)
	}
	h := st.h
	if st.answered.Swap(true) {
		h.cfg.Logger.ErrorContext(ctx, "median: a call was answered twice; the second answer is dropped", "tool", st.call.Tool, "toolCallId", st.call.ToolCallID)
		return Response{}
	}
	return h.finish(ctx, st, h.encodeAnswer(ctx, st, result, err))
}

// errNoCall answers Respond without a verified call.
var errNoCall = newError(CodeExecutionFailed, "no verified Median call on this request: mount the Median middleware before this handler")

// Settle ends a call that [Handler.Verify] let through, once the app's
// handlers are done; middleware for frameworks not built on net/http
// defers it (net/http's [Handler.Middleware] does this itself). written is
// the status of a response the handlers wrote on their own, without
// [Answer] (0 when they wrote none); recovered is what recover() returned
// there (nil when they returned).
//
// It returns the answer to write, or the zero Response when there is
// nothing to write: the call was answered, or the handlers wrote a
// response of their own (written), which is sent as they wrote it,
// logged as a warning naming its status and reported to the observer as
// such ([Event.OffContract]; see "Handler chains" in the package doc). A
// panic is logged with its stack and answered execution_failed, so the
// first answer is the contract's whatever recovery middleware runs
// outside. A call left unanswered is answered
// execution_failed too. Either way that answer is kept for the call's
// toolCallId, so a repeat is answered at once instead of waiting for the
// claim's lease and then running again.
func Settle(ctx context.Context, written int, recovered any) Response {
	st := callStateFrom(ctx)
	if st == nil {
		return Response{}
	}
	h, call := st.h, st.call
	if recovered != nil {
		h.logPanic(ctx, "your handler", call, recovered)
		if st.answered.Swap(true) {
			return Response{}
		}
		return h.settleWith(ctx, st, failedUnexpectedly(call.Tool), written)
	}
	if !st.answered.CompareAndSwap(false, true) {
		return Response{}
	}
	resp := h.settleWith(ctx, st, newError(CodeExecutionFailed, "the server's handler did not answer this call"), written)
	if written != 0 {
		h.warnOffContract(ctx, call, written)
		return resp
	}
	if ok, held := h.unanswered.allow(h.cfg.Now()); ok {
		h.cfg.Logger.WarnContext(ctx, "median: a verified call was not answered; it and its repeats are answered execution_failed", "tool", call.Tool, "toolCallId", call.ToolCallID, "suppressed", held)
	}
	return resp
}

// settleWith ends a call Settle answers with e, the answer kept for its
// repeats. When a handler wrote a response of its own (written, its
// status, not 0), that response is what went out: the answer is marked
// off-contract for the counters and the observer, and none is returned.
func (h *Handler) settleWith(ctx context.Context, st *callState, e *Error, written int) Response {
	resp := errorResponse(e)
	resp.offContract, resp.written = written != 0, int32(written)
	resp = h.finish(ctx, st, resp)
	if written != 0 {
		return Response{}
	}
	return resp
}

// warnOffContract logs, at most once per logInterval, that a handler
// answered a verified call on its own.
func (h *Handler) warnOffContract(ctx context.Context, call *Call, status int) {
	if ok, held := h.offContract.allow(h.cfg.Now()); ok {
		h.cfg.Logger.WarnContext(ctx, "median: a handler answered a verified call outside the contract; the answer was sent as written, but Median's agent reads a non-2xx answer as the tool not answering and anything but the contract's answers as outside the contract (PROTOCOL.md §11): answer with Respond, and refuse with Respond(…, protocol.Refuse(reason, detail))",
			"status", status, "tool", call.Tool, "toolCallId", call.ToolCallID, "suppressed", held)
	}
}
