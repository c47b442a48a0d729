// Package chimedian mounts the Median tool endpoint on a chi (v5) router.
//
// chi routes plain net/http handlers, and [protocol.Handler] is one, so this
// package is thin: [Mount] registers the Handler for every method, and
// [Middleware], [CallFrom] and [Respond] give chi users the same vocabulary
// as ginmedian, echomedian and fibermedian when their own handler answers.
//
// Two ways to use it:
//
//   - [Mount] (or [New]) lets the Handler answer everything: signature,
//     body, the tools registered with [protocol.NewTool], the manifest and
//     diagnostics.
//   - [Middleware] only verifies; your own handler reads the call with
//     [CallFrom] (and the visitor with [VisitorFrom]) and answers it with
//     [Respond].
//
// Methods your router does not route are answered by the router: chi knows
// the nine standard methods, and answers any other (PURGE, PROPFIND, …)
// with its own empty 405 before the Handler sees it. chi.RegisterMethod
// changes that for every router of the process, so this package leaves it
// to you; Median only sends GET and POST.
package chimedian

import (
	"bytes"
	"io"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/median-go/median/protocol"
)

// New returns an http.Handler that answers the Median endpoint with h. It is
// h itself: *protocol.Handler already serves net/http. It exists so chi code
// reads like the other adapters.
func New(h *protocol.Handler) http.Handler {
	return h
}

// Mount registers the Median endpoint at path on r, a chi.Router (the root
// router, a Group or a Route), for every method. When path does not end in
// "/", path+"/" is registered too, so that chi's 404 page never answers on
// the Median path. Use it when the Handler's registered tools answer every
// call.
func Mount(r chi.Router, path string, h *protocol.Handler) {
	r.Handle(path, h)
	if !strings.HasSuffix(path, "/") {
		r.Handle(path+"/", h)
	}
}

// Middleware returns net/http middleware (chi's Use, With, or any router)
// that verifies Median's requests with h and lets only verified tool calls
// through to the next handler, which answers with [Respond]. Everything else
// (a refusal, the GET manifest, the diagnostics answer, the stored answer of
// a repeated toolCallId) is answered here and next does not run.
//
// The call is stored on the request's context.Context ([CallFrom],
// [protocol.CallFromContext]), and the body it read is given back: next
// reads r.Body as Median sent it. Answer every call that gets through with
// Respond; a call your handler leaves unanswered (or panics on) gets
// execution_failed stored for its toolCallId, so a repeat is answered at
// once.
func Middleware(h *protocol.Handler) func(next http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			call, resp, ok := h.Verify(r.Context(), protocol.RequestFromHTTP(r))
			if !ok {
				resp.WriteTo(w)
				return
			}
			r = r.WithContext(protocol.ContextWithCall(r.Context(), call))
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(call.Body)), int64(len(call.Body))
			defer protocol.Settle(r.Context(), call) // a handler that never answered still releases the toolCallId
			next.ServeHTTP(w, r)
		})
	}
}

// CallFrom returns the call that [Middleware] verified for r, and false when
// the middleware did not run.
func CallFrom(r *http.Request) (*protocol.Call, bool) {
	return protocol.CallFromContext(r.Context())
}

// VisitorFrom returns the visitor of the call that [Middleware] verified for
// r, and false when the middleware did not run. Authorize on
// [protocol.Visitor.ExternalID] only.
func VisitorFrom(r *http.Request) (protocol.Visitor, bool) {
	call, ok := CallFrom(r)
	if !ok {
		return protocol.Visitor{}, false
	}
	return call.Visitor, true
}

// Respond answers the call that [Middleware] verified: result as
// {"result": …}, a [*protocol.Refusal] (as result or as err) as a refusal
// result, [protocol.UnknownTool] (for a tool you do not know) or a bind
// error from [protocol.Call.BindInput] as that 4xx error, or any other err as
// execution_failed. A call is answered once: a second Respond writes
// nothing. Without the middleware it answers execution_failed saying so.
func Respond(w http.ResponseWriter, r *http.Request, result any, err error) {
	call, _ := CallFrom(r)
	protocol.Respond(r.Context(), call, result, err).WriteTo(w)
}
