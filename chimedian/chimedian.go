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
//     [CallFrom] and answers it with [Respond].
package chimedian

import (
	"net/http"

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
// router, a Group or a Route), for every method. Use it when the Handler's
// registered tools answer every call.
func Mount(r chi.Router, path string, h *protocol.Handler) {
	r.Handle(path, h)
}

// Middleware returns net/http middleware (chi's Use, With, or any router)
// that verifies Median's requests with h and lets only verified tool calls
// through to the next handler, which answers with [Respond]. Everything else
// (a refusal, the GET manifest, the diagnostics answer, the stored answer of
// a repeated toolCallId) is answered here and next does not run.
//
// The call is stored on the request's context.Context ([CallFrom],
// [protocol.CallFromContext]). Answer every call that gets through: replay
// protection holds its toolCallId until the answer is given.
func Middleware(h *protocol.Handler) func(next http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			call, resp, ok := h.Verify(r.Context(), request(r))
			if !ok {
				resp.WriteTo(w)
				return
			}
			next.ServeHTTP(w, r.WithContext(protocol.ContextWithCall(r.Context(), call)))
		})
	}
}

// CallFrom returns the call that [Middleware] verified for r, and false when
// the middleware did not run.
func CallFrom(r *http.Request) (*protocol.Call, bool) {
	return protocol.CallFromContext(r.Context())
}

// Respond answers the call that [Middleware] verified: result as
// {"result": …}, a [*protocol.Refusal] (as result or as err) as a refusal
// result, or err as execution_failed. It must be called once per call; without
// the middleware it answers execution_failed saying so.
func Respond(w http.ResponseWriter, r *http.Request, result any, err error) {
	call, _ := CallFrom(r)
	protocol.Respond(r.Context(), call, result, err).WriteTo(w)
}

// request builds the core's view of a net/http request. The body is left
// unread: the core reads it only after the header checks, and never past its
// limit.
func request(r *http.Request) protocol.Request {
	sig := ""
	if v := r.Header[signatureHeader]; len(v) > 0 {
		sig = v[0]
	}
	return protocol.Request{Method: r.Method, Signature: sig, Body: r.Body, ContentLength: r.ContentLength}
}

// signatureHeader is protocol.SignatureHeader in net/http's canonical form.
const signatureHeader = "Median-Signature"
