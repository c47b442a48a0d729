// Package echomedian mounts the Median tool endpoint on an echo (v4) server.
//
// It only moves requests between echo and [protocol.Handler]: every check
// and every answer comes from the core, so an endpoint served through echo
// answers byte for byte what it answers on net/http.
//
// Two ways to mount it, both with [Mount]:
//
//	echomedian.Mount(api, "/median", h)           // the Handler's tools answer
//	echomedian.Mount(api, "/median", h, answer)   // your handler answers verified calls
//
// In the first form ([New]) the Handler answers everything: signature,
// body, the tools registered with [protocol.NewTool], the GET manifest and
// diagnostics. In the second, [Middleware] verifies and answers everything
// but verified tool calls, which reach your handler: it reads the call with
// [CallFrom] (and the visitor with [VisitorFrom]) and answers it with
// [Respond]. Either way Mount registers the path with and without a
// trailing slash for every method echo's Any routes (the nine standard
// ones, PROPFIND and REPORT), so the contract's 405 and the manifest always
// come from the core. A method outside that set (PURGE, MKCOL) gets echo's
// own 405; Median only sends GET and POST.
//
// A panic in your handler is answered execution_failed the first time, by
// the core, whatever recovery middleware (middleware.Recover) runs
// outside; the stack goes to the Handler's logger. An error your handler
// returns is its answer too, as if it called Respond(c, nil, err): echo's
// error handler never writes a page of its own on the Median path.
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
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/median-go/median/protocol"
)

// Router is what [Mount] registers on: *echo.Echo and *echo.Group both
// satisfy it. echo has no interface of its own for the two.
type Router interface {
	Any(path string, handler echo.HandlerFunc, middleware ...echo.MiddlewareFunc) []*echo.Route
}

var (
	_ Router = (*echo.Echo)(nil)
	_ Router = (*echo.Group)(nil)
)

// New returns an echo handler that answers the Median endpoint with h: the
// Handler's registered tools answer the calls. It never returns an error:
// every answer, refusals included, is written here. Register it on the
// path and the path with a trailing slash for every method (echo's Any);
// [Mount] does that for you.
func New(h *protocol.Handler) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := newContext(c, nil)
		defer ctx.Detach()
		h.ServeHTTP(c.Response(), c.Request().WithContext(ctx))
		return nil
	}
}

// Mount registers the Median endpoint at path on r, an *echo.Echo or an
// *echo.Group, with and without a trailing slash, for every method of
// echo's Any.
//
// With no handler it mounts [New](h). With a handler it mounts the handler
// behind [Middleware](h): your handler answers the verified tool calls with
// [Respond]; everything else is answered before it. echo routes one
// handler per route: pass at most one, and add other middleware to the
// group. Mount panics when given more, as echo does on a bad route.
func Mount(r Router, path string, h *protocol.Handler, handler ...echo.HandlerFunc) {
	var (
		endpoint   echo.HandlerFunc
		middleware []echo.MiddlewareFunc
	)
	switch len(handler) {
	case 0:
		endpoint = New(h)
	case 1:
		endpoint, middleware = handler[0], []echo.MiddlewareFunc{Middleware(h)}
	default:
		panic("echomedian: Mount takes at most one handler (echo routes one handler per route): add the others as middleware on the group")
	}
	for _, p := range paths(path) {
		r.Any(p, endpoint, middleware...)
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

// Middleware returns echo middleware that verifies Median's requests with
// h ([protocol.Handler.Middleware]) and lets only verified tool calls
// through to the next handler, which answers with [Respond]. Everything
// else (a refusal, the GET manifest, the diagnostics answer, the stored
// answer of a repeated toolCallId, the 405) is answered here and the next
// handler does not run.
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
		return func(c echo.Context) error {
			ctx := newContext(c, next)
			defer ctx.Detach()
			mw.ServeHTTP(echoWriter{c.Response()}, c.Request().WithContext(ctx))
			return nil
		}
	}
}

// echoWriter is echo's response as the core's middleware sees it: Written
// tells the core whether the handler behind it committed a response of its
// own (echo handlers write to c.Response() directly).
type echoWriter struct{ *echo.Response }

// Written reports whether the response was committed.
func (w echoWriter) Written() bool { return w.Committed }

// serveNext is what [protocol.Handler.Middleware] runs for a verified
// call: the next echo handler, on the verified request; an error it
// returns is its answer.
var serveNext http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	ctx := contextFrom(r.Context())
	ctx.c.SetRequest(r)
	if err := ctx.next(ctx.c); err != nil {
		protocol.Respond(w, r, nil, err)
	}
})

// CallFrom returns the call that [Middleware] verified for this request,
// and false when the middleware did not run.
func CallFrom(c echo.Context) (*protocol.Call, bool) {
	return protocol.CallFrom(c.Request().Context())
}

// VisitorFrom returns the visitor of the call that [Middleware] verified,
// and false when the middleware did not run. Authorize on
// [protocol.Visitor.ExternalID] only.
func VisitorFrom(c echo.Context) (protocol.Visitor, bool) {
	call, ok := CallFrom(c)
	if !ok {
		return protocol.Visitor{}, false
	}
	return call.Visitor, true
}

// Respond answers the call that [Middleware] verified ([protocol.Respond]):
// result as {"result": …}, a [*protocol.Refusal] (as result or as err) as
// a refusal result, [protocol.CodeUnknownTool] or an invalid_input error from
// [protocol.Call.BindInput] as that error, any other err as
// execution_failed. The answer is kept for replays. A call is answered
// once: a second Respond writes nothing. Without the middleware it answers
// execution_failed saying so. It returns nil, so a handler can end with
// return echomedian.Respond(c, out, err).
func Respond(c echo.Context, result any, err error) error {
	protocol.Respond(c.Response(), c.Request(), result, err)
	return nil
}
