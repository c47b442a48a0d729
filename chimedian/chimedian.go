// Package chimedian mounts the Median tool endpoint on a chi (v5) router.
//
// chi routes plain net/http handlers and [protocol.Handler] is one, so this
// package is thin: it gives chi users the vocabulary of ginmedian,
// echomedian and fibermedian, in net/http's shapes (a handler answers with
// w and r, so [CallFrom] and [Respond] take r, not a framework context).
//
// Two ways to mount it, both with [Mount]:
//
//	chimedian.Mount(r, "/median", h)                 // the Handler's tools answer
//	chimedian.Mount(r, "/median", h, auth, dispatch) // your handlers answer verified calls
//
// In the first form ([New]) the Handler answers everything: signature,
// body, the tools registered with [protocol.NewTool], the GET manifest and
// diagnostics. In the second, [Middleware] verifies and answers everything
// but verified calls of the tools in protocol.Config.Tools (declare those
// only your handlers answer with [protocol.DeclareTool]), which reach
// your handlers, after verification: they read the call with [CallFrom]
// (its Visitor is who the agent talks to) and answer it with [Respond].
// The handlers form a chain, and the first one that answers ends it (see
// "Handler chains" in the protocol package): through Respond or a direct
// write (http.Error, w.WriteHeader). A handler that writes nothing passes
// the call on to the next one. Refuse the contract's way,
// chimedian.Respond(w, r, nil, protocol.Refuse(reason, detail)): a 403 of
// your own is sent as written, but Median's agent reads it as the tool not
// answering.
//
// Either way Mount registers the path with and without a
// trailing slash for every method chi routes, so the contract's 405 and the
// manifest always come from the core. chi knows the nine standard methods
// and answers any other (PURGE, PROPFIND, …) with its own empty 405;
// chi.RegisterMethod changes that for every router of the process, so this
// package leaves it to you. Median only sends GET and POST.
//
// Only the call is authenticated: Median signs the timestamp and the
// body, so trust what CallFrom returns, never the query string or a header
// (see "Authenticated: the call only" in the protocol package). The
// handlers after the middleware get the request without its query string
// (nor a form parsed from it) and with its headers as they arrived.
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

	"github.com/go-chi/chi/v5"

	"github.com/median-go/median/internal/adapt/mount"
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
// "" and "/" both mount at the root of r, once, as "/".
//
// With no handlers it mounts [New](h). With handlers it mounts them, as
// one chain, behind [Middleware](h): they answer the verified tool calls
// with [Respond]; everything else is answered before them. The first
// handler that answers (Respond, a direct write) ends the chain: the
// handlers after it do not run.
func Mount(r chi.Router, path string, h *protocol.Handler, handlers ...http.Handler) {
	endpoint := New(h)
	if len(handlers) > 0 {
		endpoint = Middleware(h)(mount.Chain(handlers))
	}
	for _, p := range mount.Paths(path) {
		r.Handle(p, endpoint)
	}
}

// Middleware returns net/http middleware (for chi's Use and With, or any
// router) that verifies Median's requests with h and lets only verified
// calls of the tools in protocol.Config.Tools through to next, which
// answers with [Respond]. It is [protocol.Handler.Middleware]: everything
// else (a refusal, 404 unknown_tool for any other tool, the GET manifest,
// the diagnostics answer, the stored answer of a repeated toolCallId, the
// 405) is answered here and next does not run.
//
// next finds the call with [CallFrom] and reads r.Body as Median sent it. A
// call it leaves unanswered gets execution_failed kept for its toolCallId,
// so a repeat is answered at once; a panic in it is recovered, logged and
// answered execution_failed. Prefer [Mount] with a handler, which also
// registers every method and the trailing slash.
func Middleware(h *protocol.Handler) func(next http.Handler) http.Handler {
	return h.Middleware
}

// CallFrom returns the call that [Middleware] verified for r, and false
// when the middleware did not run.
func CallFrom(r *http.Request) (*protocol.Call, bool) {
	return protocol.CallFrom(r.Context())
}

// Respond answers the call that [Middleware] verified for r, as
// [protocol.Respond] does.
func Respond(w http.ResponseWriter, r *http.Request, result any, err error) {
	protocol.Respond(w, r, result, err)
}
