// Package chimedian mounts the Median tool endpoint on a chi (v5) router.
//
// chi routes plain net/http handlers and [protocol.Handler] is one, so this
// package is thin: it gives chi users the vocabulary of ginmedian,
// echomedian and fibermedian, in net/http's shapes (a handler answers with
// w and r, so [CallFrom], [VisitorFrom] and [Respond] take r, not a
// framework context).
//
// Two ways to mount it, both with [Mount]:
//
//	chimedian.Mount(r, "/median", h)           // the Handler's tools answer
//	chimedian.Mount(r, "/median", h, answer)   // your handler answers verified calls
//
// In the first form ([New]) the Handler answers everything: signature,
// body, the tools registered with [protocol.NewTool], the GET manifest and
// diagnostics. In the second, [Middleware] verifies and answers everything
// but verified tool calls, which reach your handler: it reads the call with
// [CallFrom] (and the visitor with [VisitorFrom]) and answers it with
// [Respond]. Either way Mount registers the path with and without a
// trailing slash for every method chi routes, so the contract's 405 and the
// manifest always come from the core. chi knows the nine standard methods
// and answers any other (PURGE, PROPFIND, …) with its own empty 405;
// chi.RegisterMethod changes that for every router of the process, so this
// package leaves it to you. Median only sends GET and POST.
//
// A panic in your handler is answered execution_failed the first time, by
// the core, whatever recovery middleware (middleware.Recoverer) runs
// outside; the stack goes to the Handler's logger.
//
// Values reach tools: a tool's ctx is the request's context, so what chi's
// middleware put there (middleware.GetReqID, chi.URLParam's route context,
// your own context.WithValue) is there, with the request's cancellation and
// deadline.
package chimedian

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/median-go/median/protocol"
)

// Mount takes the root router and the sub-routers of Route and Group alike.
var _ chi.Router = (*chi.Mux)(nil)

// New returns an http.Handler that answers the Median endpoint with h: the
// Handler's registered tools answer the calls. It is h itself
// (*protocol.Handler serves net/http), so chi code reads like the other
// adapters. Register it on the path and the path with a trailing slash for
// every method; [Mount] does that for you.
func New(h *protocol.Handler) http.Handler {
	return h
}

// Mount registers the Median endpoint at path on r (the root router, a
// Group or a Route), with and without a trailing slash, for every method.
//
// With no handler it mounts [New](h). With a handler it mounts
// [Middleware](h) in front of it: your handler answers the verified tool
// calls with [Respond]; everything else is answered before it. chi routes
// one handler per route: pass at most one, and add other middleware with
// r.With. Mount panics when given more, as chi does on a bad route.
func Mount(r chi.Router, path string, h *protocol.Handler, handler ...http.Handler) {
	var endpoint http.Handler
	switch len(handler) {
	case 0:
		endpoint = New(h)
	case 1:
		endpoint = Middleware(h)(handler[0])
	default:
		panic("chimedian: Mount takes at most one handler (chi routes one handler per route): add the others as middleware with r.With")
	}
	for _, p := range paths(path) {
		r.Handle(p, endpoint)
	}
}

// paths returns the paths Mount registers: path without its trailing
// slash and with it, or "/" alone for the root.
func paths(path string) []string {
	base := strings.TrimSuffix(path, "/")
	if base == "" {
		return []string{path}
	}
	return []string{base, base + "/"}
}

// Middleware returns net/http middleware (for chi's Use and With, or any
// router) that verifies Median's requests with h and lets only verified
// tool calls through to next, which answers with [Respond]. It is
// [protocol.Handler.Middleware]: everything else (a refusal, the GET
// manifest, the diagnostics answer, the stored answer of a repeated
// toolCallId, the 405) is answered here and next does not run.
//
// next finds the call with [CallFrom] and reads r.Body as Median sent it.
// A call it leaves unanswered gets execution_failed kept for its
// toolCallId, so a repeat is answered at once; a panic in it is recovered,
// logged and answered execution_failed. Prefer [Mount] with a handler,
// which also registers every method and the trailing slash.
func Middleware(h *protocol.Handler) func(next http.Handler) http.Handler {
	return h.Middleware
}

// CallFrom returns the call that [Middleware] verified for r, and false
// when the middleware did not run.
func CallFrom(r *http.Request) (*protocol.Call, bool) {
	return protocol.CallFrom(r.Context())
}

// VisitorFrom returns the visitor of the call that [Middleware] verified
// for r, and false when the middleware did not run. Authorize on
// [protocol.Visitor.ExternalID] only.
func VisitorFrom(r *http.Request) (protocol.Visitor, bool) {
	call, ok := CallFrom(r)
	if !ok {
		return protocol.Visitor{}, false
	}
	return call.Visitor, true
}

// Respond answers the call that [Middleware] verified for r
// ([protocol.Respond]): result as {"result": …}, a [*protocol.Refusal] (as
// result or as err) as a refusal result, [protocol.CodeUnknownTool] or an
// invalid_input error from [protocol.Call.BindInput] as that error, any
// other err as execution_failed. The answer is kept for replays. A call is
// answered once: a second Respond writes nothing. Without the middleware
// it answers execution_failed saying so.
func Respond(w http.ResponseWriter, r *http.Request, result any, err error) {
	protocol.Respond(w, r, result, err)
}
