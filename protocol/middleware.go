package protocol

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// exchange is the core's state for one verified tool call, from the checks
// to the answer: the call, the tool (nil when middleware dispatches a tool
// the Handler does not know), the prepared run, the replay claim and
// whether the call was answered. Middleware carries it on the request's
// context.
type exchange struct {
	h        *Handler
	call     *Call
	tool     *Tool
	run      func(context.Context) (any, error) // the prepared tool run (Serve only)
	claim    *claim                             // the replay-store claim held, if any
	answered atomic.Bool                        // set by the first answer
	start    time.Time
}

type exchangeKey struct{}

// exchangeFrom returns the exchange on ctx, or nil.
func exchangeFrom(ctx context.Context) *exchange {
	ex, _ := ctx.Value(exchangeKey{}).(*exchange)
	return ex
}

// CallFrom returns the verified call on ctx (the request's context behind
// [Handler.Middleware], or the context [Handler.Verify] returned), and false
// when there is none.
func CallFrom(ctx context.Context) (*Call, bool) {
	if ex := exchangeFrom(ctx); ex != nil {
		return ex.call, true
	}
	return nil, false
}

// Middleware verifies Median's requests and lets only verified tool calls
// through to next, which answers them with [Respond]. Everything else (a
// refusal, the GET manifest, the diagnostics answer, the stored answer of a
// repeated toolCallId) is answered here and next does not run.
//
// The tools in [Config.Tools] still declare the endpoint: the manifest
// lists them, and a call of one has its input checked against the tool's
// schema and the risk floor applied before next runs (their functions are
// not called). Register every tool next answers, or Median cannot sync it;
// a call of an unregistered tool reaches next unchecked, and next answers
// it [CodeUnknownTool] when it does not know it either.
//
// next sees the call on its request's context ([CallFrom]) and reads the
// body as Median sent it. A call next leaves unanswered (it writes nothing)
// is answered execution_failed, and that answer is kept for its toolCallId,
// so a repeat gets it at once; a panic in next is recovered, logged with its
// stack and answered the same way, so the first answer is the contract's
// whatever recovery middleware runs outside.
// Mount it on the path with and without a trailing slash, for every method.
func (h *Handler) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, resp, ok := h.Verify(r.Context(), requestFromHTTP(r))
		if !ok {
			resp.write(w)
			return
		}
		body := exchangeFrom(ctx).call.Body
		r = r.WithContext(ctx)
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		tw := &writeTracker{ResponseWriter: w}
		defer h.recoverHandler(ctx, tw)
		next.ServeHTTP(tw, r)
	})
}

// writeTracker records whether the handler behind the middleware wrote a
// response of its own.
type writeTracker struct {
	http.ResponseWriter
	wrote bool
}

func (t *writeTracker) WriteHeader(code int) {
	t.wrote = true
	t.ResponseWriter.WriteHeader(code)
}

func (t *writeTracker) Write(b []byte) (int, error) {
	t.wrote = true
	return t.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the writer underneath.
func (t *writeTracker) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// written reports whether a response was written or begun: through the
// tracker, or, for frameworks whose handlers write to their own writer
// rather than the one the middleware passes on, as the writer underneath
// reports with a Written() bool method (the gin and echo adapters pass
// one).
func (t *writeTracker) written() bool {
	if t.wrote {
		return true
	}
	w, ok := t.ResponseWriter.(interface{ Written() bool })
	return ok && w.Written()
}

// recoverHandler ends a middleware call: http.ErrAbortHandler is passed on,
// as net/http expects, after the call is settled; a panic, or a call the
// handler left unanswered, is answered execution_failed unless the handler
// wrote a response of its own.
func (h *Handler) recoverHandler(ctx context.Context, tw *writeTracker) {
	p := recover()
	if p == http.ErrAbortHandler {
		Settle(ctx, nil)
		panic(p)
	}
	if resp := Settle(ctx, p); !tw.written() {
		resp.write(tw)
	}
}

// Respond answers the verified call on r's context (see
// [Handler.Middleware]) and writes the answer to w: result as
// {"result": …}, a [*Refusal] (as result or as err) as a refusal result,
// [CodeUnknownTool] (for a tool your handler does not know) or an
// invalid_input error from [Call.BindInput] as that error, any other err as
// execution_failed. It keeps the answer for
// replays. A call is answered once: a second Respond writes nothing.
// Without a verified call it answers execution_failed saying so.
func Respond(w http.ResponseWriter, r *http.Request, result any, err error) {
	Answer(r.Context(), result, err).write(w)
}

// Answer is [Respond] for adapters of frameworks not built on net/http: it
// encodes the answer to the verified call on ctx (the context
// [Handler.Verify] returned) and keeps it for replays, and returns it for
// the adapter to write. A second answer to one call is the zero Response,
// which must not be written.
func Answer(ctx context.Context, result any, err error) Response {
	ex := exchangeFrom(ctx)
	if ex == nil {
		return errorResponse(errNoCall)
	}
	h := ex.h
	if ex.answered.Swap(true) {
		h.log.ErrorContext(ctx, "median: a call was answered twice; the second answer is dropped", "tool", ex.call.Tool, "toolCallId", ex.call.ToolCallID)
		return Response{}
	}
	return h.finish(ctx, ex, h.encodeAnswer(ctx, ex, result, err))
}

// errNoCall answers Respond without a verified call.
var errNoCall = newError(CodeExecutionFailed, "no verified Median call on this request: mount the Median middleware before this handler")

// Settle ends a call that [Handler.Verify] let through, once the app's
// handler is done; middleware for frameworks not built on net/http defers
// it (net/http's [Handler.Middleware] does this itself). recovered is what
// recover() returned there: nil when the handler returned.
//
// A panic is logged with its stack and answered execution_failed, so the
// first answer is the contract's whatever recovery middleware runs outside.
// A call the handler left unanswered gets execution_failed too, kept for
// its toolCallId, so a repeat is answered at once instead of waiting for
// the claim's lease and then running again. It returns that answer, which
// the adapter writes unless the handler wrote a response of its own, or
// the zero Response (write nothing) when the call was answered.
func Settle(ctx context.Context, recovered any) Response {
	ex := exchangeFrom(ctx)
	if ex == nil {
		return Response{}
	}
	h := ex.h
	if recovered != nil {
		h.logPanic(ctx, "your handler", ex.call, recovered)
		if ex.answered.Swap(true) {
			return Response{}
		}
		return h.finish(ctx, ex, errorResponse(failedUnexpectedly(ex.call.Tool)))
	}
	if !ex.answered.CompareAndSwap(false, true) {
		return Response{}
	}
	h.log.WarnContext(ctx, "median: a verified call was not answered; it and its repeats are answered execution_failed", "tool", ex.call.Tool, "toolCallId", ex.call.ToolCallID)
	return h.finish(ctx, ex, errorResponse(newError(CodeExecutionFailed, "the server's handler did not answer this call")))
}

// finish keeps the answer of a call for replays and reports it.
func (h *Handler) finish(ctx context.Context, ex *exchange, resp Response) Response {
	resp.evicted = h.save(ctx, ex, resp)
	h.observe(ctx, http.MethodPost, ex, resp, ex.start)
	return resp
}
