// Package echomedian mounts the Median tool endpoint on an echo v5 server
// (github.com/labstack/echo/v5). For echo v4, use
// github.com/median-go/median/echomedian.
//
// It only moves requests between echo and [protocol.Handler]: every check
// and every answer comes from the core, so an endpoint served through echo
// answers byte for byte what it answers on net/http. echo v5's response is
// an http.ResponseWriter, so the core writes it directly.
//
// Two ways to mount it, both with [Mount]:
//
//	echomedian.Mount(api, "/median", h)                 // the Handler's tools answer
//	echomedian.Mount(api, "/median", h, auth, dispatch) // your handlers answer verified calls
//
// In the first form ([New]) the Handler answers everything: signature,
// body, the tools registered with [protocol.NewTool], the GET manifest and
// diagnostics. In the second, [Middleware] verifies and answers everything
// but verified calls of the tools in protocol.Config.Tools (declare those
// only your handlers answer with [protocol.DeclareTool]), which reach
// your handlers, after verification: they read the call with [CallFrom]
// (its Visitor is who the agent talks to) and answer it with [Respond].
// The handlers form a chain, and the first one that answers ends it (see
// "Handler chains" in the protocol package): through Respond, a direct
// write (c.String, c.JSON, c.NoContent) or echo's way to stop, returning
// an error, which is answered as Respond(c, nil, err) would answer it. A
// handler that returns nil without answering passes the call on to the
// next one. Refuse the contract's way,
// echomedian.Respond(c, nil, protocol.Refuse(reason, detail)): a 403 of
// your own is sent as written, but Median's agent reads it as the tool not
// answering.
//
// Either way Mount registers the path with and without a
// trailing slash with echo's Any, which in v5 matches every method, those
// echo does not know (PURGE, MKCOL) included: the contract's 405 and the
// manifest always come from the core. A route of your own for one method
// on the same path takes precedence over Any, as echo documents.
//
// Only the call is authenticated: Median signs the timestamp and the
// body, so trust what CallFrom returns, never the query string or a header
// (see "Authenticated: the call only" in the protocol package). The
// handlers after the middleware get c.Request() without its query string
// (c.QueryParam finds nothing, even what a handler before it read) and
// with its headers as they arrived.
//
// A panic in your handler is answered execution_failed the first time, by
// the core, whatever recovery middleware (middleware.Recover) runs
// outside; the stack goes to the Handler's logger. An error your handler
// returns, echo's own (echo.ErrForbidden) included, is its answer too, as
// if it called Respond(c, nil, err): execution_failed, which the agent
// reads as the tool's name and a reference to the log unless the error is
// meant for it (protocol.AgentError). echo's HTTPErrorHandler never runs
// on the Median path, so it never writes a page of its own there.
//
// Values reach tools: a tool's ctx (and the request's context behind
// Middleware) falls back to the echo context's store, so what earlier
// middleware stored with c.Set(key, v) is ctx.Value(key) for a string key.
// Cancellation, deadline and the request context's own values stay the
// request's. The store is read only while the request is served: echo
// reuses its contexts, so a goroutine that outlives the request sees only
// the request context's values.
package echomedian

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/median-go/median/internal/adapt/httpio"
	"github.com/median-go/median/internal/adapt/mount"
	"github.com/median-go/median/protocol"
)

// Router is what [Mount] registers on: *echo.Echo and *echo.Group both
// satisfy it. echo has no interface of its own for the two.
type Router interface {
	Any(path string, handler echo.HandlerFunc, middleware ...echo.MiddlewareFunc) echo.RouteInfo
}

var (
	_ Router = (*echo.Echo)(nil)
	_ Router = (*echo.Group)(nil)
)

// New returns an echo handler that answers the Median endpoint with h: the
// Handler's registered tools answer the calls. It never returns an error:
// every answer, refusals included, is written here. Register it on the
// path and the path with a trailing slash with echo's Any; [Mount] does
// that for you.
func New(h *protocol.Handler) echo.HandlerFunc {
	return func(c *echo.Context) error {
		ctx := newContext(c, nil)
		defer ctx.Detach()
		httpio.Serve(ctx, h, c.Response(), c.Request())
		return nil
	}
}

// Mount registers the Median endpoint at path on r, an *echo.Echo or an
// *echo.Group, with and without a trailing slash, for every method of
// echo's Any. "" and "/" both mount at the root of r, once, as "/".
//
// With no handlers it mounts [New](h). With handlers it mounts them, as
// one chain, behind [Middleware](h): they answer the verified tool calls
// with [Respond]; everything else is answered before them. The first
// handler that answers (Respond, a direct write, a returned error) ends
// the chain: the handlers after it do not run.
func Mount(r Router, path string, h *protocol.Handler, handlers ...echo.HandlerFunc) {
	endpoint, middleware := New(h), []echo.MiddlewareFunc(nil)
	if len(handlers) > 0 {
		endpoint, middleware = chain(handlers), []echo.MiddlewareFunc{Middleware(h)}
	}
	for _, p := range mount.Paths(path) {
		r.Any(p, endpoint, middleware...)
	}
}

// chain runs handlers in order until one answers: it returns an error, or
// the response is committed.
func chain(handlers []echo.HandlerFunc) echo.HandlerFunc {
	if len(handlers) == 1 {
		return handlers[0]
	}
	return func(c *echo.Context) error {
		for _, next := range handlers {
			if err := next(c); err != nil || committed(c) {
				return err
			}
		}
		return nil
	}
}

// Middleware returns echo middleware that verifies Median's requests with h
// ([protocol.Handler.Middleware]) and lets only verified calls of the tools
// in protocol.Config.Tools through to the next handler, which answers with
// [Respond]. Everything else (a refusal, 404 unknown_tool for any other
// tool, the GET manifest, the diagnostics answer, the stored answer of a
// repeated toolCallId, the 405) is answered here and the next handler does
// not run.
//
// The next handler finds the call with [CallFrom] (it is on
// c.Request().Context()) and reads c.Request().Body as Median sent it. An
// error it returns is answered like Respond(c, nil, err). A call it leaves
// unanswered gets execution_failed kept for its toolCallId, so a repeat is
// answered at once; a panic in it is recovered, logged and answered
// execution_failed. The middleware itself never returns an error. Prefer
// [Mount] with a handler, which also registers every method and the
// trailing slash.
func Middleware(h *protocol.Handler) echo.MiddlewareFunc {
	mw := h.Middleware(serveNext)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c *echo.Context) error {
			ctx := newContext(c, next)
			defer ctx.Detach()
			res, _ := echo.UnwrapResponse(c.Response())
			if res != nil {
				defer func(w http.ResponseWriter) { res.ResponseWriter = w }(res.ResponseWriter)
				res.ResponseWriter = mount.Committer{ResponseWriter: res.ResponseWriter, Committed: &res.Committed}
			}
			mw.ServeHTTP(echoWriter{c.Response(), res}, c.Request().WithContext(ctx))
			return nil
		}
	}
}

// echoWriter is echo's response as the core's middleware sees it: Written
// tells the core whether the handler behind it committed a response of its
// own (echo handlers write to c.Response() directly).
type echoWriter struct {
	http.ResponseWriter
	res *echo.Response // nil when c.Response() is not echo's
}

// Written reports whether the response was committed.
func (w echoWriter) Written() bool { return w.res != nil && w.res.Committed }

// Status is the status committed.
func (w echoWriter) Status() int { return w.res.Status }

// committed reports whether c's response was committed.
func committed(c *echo.Context) bool {
	res, err := echo.UnwrapResponse(c.Response())
	return err == nil && res.Committed
}

// serveNext is what [protocol.Handler.Middleware] runs for a verified
// call: the next echo handler, on the verified request; an error it
// returns is its answer, unless it committed a response of its own first.
var serveNext http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	ctx := contextFrom(r.Context())
	hadQuery := ctx.c.Request().URL.RawQuery != "" // the request as it arrived; r has none
	ctx.c.SetRequest(r)
	if hadQuery {
		clear(ctx.c.QueryParams()) // echo keeps what a handler before read (c.QueryParam): none of it is signed
	}
	if err := ctx.next(ctx.c); err != nil && !committed(ctx.c) {
		protocol.Respond(w, r, nil, err)
	}
})

// CallFrom returns the call that [Middleware] verified for this request,
// and false when the middleware did not run.
func CallFrom(c *echo.Context) (*protocol.Call, bool) {
	return protocol.CallFrom(c.Request().Context())
}

// Respond answers the call that [Middleware] verified, as
// [protocol.Respond] does. It returns nil, so a handler can end with
// return echomedian.Respond(c, out, err).
func Respond(c *echo.Context, result any, err error) error {
	protocol.Respond(c.Response(), c.Request(), result, err)
	return nil
}
