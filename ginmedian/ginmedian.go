// Package ginmedian mounts the Median tool endpoint on a gin router.
//
// It only moves requests between gin and [protocol.Handler]: every check
// and every answer comes from the core, so an endpoint served through gin
// answers byte for byte what it answers on net/http.
//
// Two ways to mount it, both with [Mount]:
//
//	ginmedian.Mount(api, "/median", h)                 // the Handler's tools answer
//	ginmedian.Mount(api, "/median", h, auth, dispatch) // your handlers answer verified calls
//
// In the first form ([New]) the Handler answers everything: signature,
// body, the tools registered with [protocol.NewTool], the GET manifest and
// diagnostics. In the second, [Middleware] verifies and answers everything
// but verified calls of the tools in protocol.Config.Tools (declare those
// only your handlers answer with [protocol.DeclareTool]), which reach
// your handlers: they read the call with [CallFrom] (its Visitor is who
// the agent talks to) and answer it with [Respond]. The handlers form a
// chain, and the first one that answers ends it (see "Handler chains" in
// the protocol package): through Respond, a direct write (c.String,
// c.JSON, c.Status) or gin's abort (c.Abort, c.AbortWithStatus…). A
// handler that does none of these passes the call on to the next one;
// calling c.Next() is not needed. Refuse the contract's way,
// ginmedian.Respond(c, nil, protocol.Refuse(reason, detail)): a 403 of
// your own is sent as written, but Median's agent reads it as the tool not
// answering.
//
// Either way Mount registers the path with and without a
// trailing slash, for every method gin's Any routes (GET, POST, PUT, PATCH,
// HEAD, OPTIONS, DELETE, CONNECT, TRACE), so the contract's 405 and the
// manifest always come from the core. A method outside that set (PURGE, a
// WebDAV method) gets gin's own answer (404, or 405 with
// HandleMethodNotAllowed); Median only sends GET and POST.
//
// Only the call is authenticated: Median signs the timestamp and the
// body, so trust what CallFrom returns, never the query string or a header
// (see "Authenticated: the call only" in the protocol package). The
// handlers after the middleware get c.Request without its query string
// and with its headers as they arrived; gin keeps the query values a
// handler before the middleware read with c.Query, so read none there on
// the Median path.
//
// A panic in your handlers is answered execution_failed the first time, by
// the core, whatever recovery middleware (gin.Recovery) runs outside; the
// stack goes to the Handler's logger.
//
// Values reach tools: a tool's ctx (and the request's context behind
// Middleware) falls back to the gin context's keys, so what earlier
// middleware stored with c.Set(key, v) is ctx.Value(key). Cancellation,
// deadline and the request context's own values stay the request's. The
// keys are read only while the request is served: gin reuses its contexts,
// so a goroutine that outlives the request sees only the request context's
// values.
//
// In gin's debug mode one Mount prints one summary line instead of a line
// per method and path; see [Mount].
package ginmedian

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/median-go/median/internal/adapt/httpio"
	"github.com/median-go/median/internal/adapt/mount"
	"github.com/median-go/median/protocol"
)

// Mount takes the engine and its groups alike.
var (
	_ gin.IRoutes = (*gin.Engine)(nil)
	_ gin.IRoutes = (*gin.RouterGroup)(nil)
)

// New returns a gin handler that answers the Median endpoint with h: the
// Handler's registered tools answer the calls. Register it on the path and
// the path with a trailing slash for every method (gin's Any); [Mount]
// does that for you.
func New(h *protocol.Handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx := newContext(c)
		defer ctx.Detach()
		httpio.Serve(ctx, h, c.Writer, c.Request)
	}
}

// Mount registers the Median endpoint at path on r, a *gin.Engine or a
// *gin.RouterGroup, with and without a trailing slash, for every method
// of gin's Any.
//
// With no handlers it mounts [New](h). With handlers it mounts
// [Middleware](h) followed by them: your handlers answer the verified tool
// calls with [Respond]; everything else is answered before them. The first
// handler that answers (Respond, a direct write, c.Abort) ends the chain:
// the handlers after it do not run. "" and "/" both mount at the root of
// r, once, as "/".
//
// In gin's debug mode, gin prints a line for every route registered (18
// here). Mount prints one instead, "median endpoint at /api/median and
// /api/median/, every method --> …", through gin.DebugPrintFunc or to
// gin.DefaultWriter as gin does; when you set gin.DebugPrintRouteFunc, it
// is called once per path with the method "ANY". To do so Mount swaps
// gin.DebugPrintRouteFunc while it registers (debug mode only): register
// routes from one goroutine, as gin requires anyway. Every method still
// needs its own route in gin, so registering fewer routes was not an
// option.
func Mount(r gin.IRoutes, path string, h *protocol.Handler, handlers ...gin.HandlerFunc) {
	chain := []gin.HandlerFunc{New(h)}
	if len(handlers) > 0 {
		chain = []gin.HandlerFunc{Middleware(h)}
		for _, handler := range handlers {
			chain = append(chain, step(handler))
		}
	}
	registerQuietly(func() {
		for _, p := range mount.Paths(path) {
			r.Any(p, chain...)
		}
	})
}

// step runs one of Mount's handlers unless the call was answered before
// it, and ends the chain (c.Abort) once the call is answered, so that no
// handler after the first that answers runs, even one it called c.Next()
// for.
func step(handler gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		if answered(c) {
			c.Abort()
			return
		}
		handler(c)
		if answered(c) {
			c.Abort()
		}
	}
}

// answered reports whether the call was answered: through Respond, a
// write of the handler's own, or gin's abort.
func answered(c *gin.Context) bool { return c.IsAborted() || ginWriter{c.Writer}.Written() }

// Middleware returns gin middleware that verifies Median's requests with h
// ([protocol.Handler.Middleware]) and lets only verified calls of the tools
// in protocol.Config.Tools through to the handlers after it, which answer
// with [Respond]. Everything else (a refusal, 404 unknown_tool for any
// other tool, the GET manifest, the diagnostics answer, the stored answer
// of a repeated toolCallId, the 405) is answered here and the chain is
// aborted.
//
// The handlers after it find the call with [CallFrom] (it is on
// c.Request.Context()) and read c.Request.Body as Median sent it. A call
// they leave unanswered gets execution_failed kept for its toolCallId, so a
// repeat is answered at once; a panic in them is recovered, logged and
// answered execution_failed, and the chain is aborted. Prefer [Mount] with
// handlers, which also registers every method and the trailing slash, and
// ends the chain at the first handler that answers; on a route of your own
// gin's rules apply: [Respond] ends the chain, a direct write does not
// unless the handler aborts after it.
func Middleware(h *protocol.Handler) gin.HandlerFunc {
	mw := h.Middleware(serveNext)
	return func(c *gin.Context) {
		ctx := newContext(c)
		defer ctx.Detach()
		mw.ServeHTTP(ginWriter{c.Writer}, c.Request.WithContext(ctx))
		if !ctx.nextReturned { // answered here, or the chain panicked
			c.Abort()
		}
	}
}

// ginWriter is gin's response writer as the core's middleware sees it:
// Written tells the core whether the handlers behind it answered on their
// own (gin handlers write to c.Writer directly, and gin writes a status set
// with c.Status only once the chain ends).
type ginWriter struct{ gin.ResponseWriter }

// Written reports whether the response was written or given a status;
// the core then asks Status (gin's own) which.
func (w ginWriter) Written() bool { return w.ResponseWriter.Written() || w.Status() != http.StatusOK }

// serveNext is what [protocol.Handler.Middleware] runs for a verified
// call: the rest of the gin chain, on the verified request.
var serveNext http.Handler = http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
	ctx := contextFrom(r.Context())
	ctx.c.Request = r
	ctx.c.Next()
	ctx.nextReturned = true
})

// CallFrom returns the call that [Middleware] verified for this request,
// and false when the middleware did not run.
func CallFrom(c *gin.Context) (*protocol.Call, bool) {
	return protocol.CallFrom(c.Request.Context())
}

// Respond answers the call that [Middleware] verified, as
// [protocol.Respond] does, and ends the handler chain (c.Abort).
func Respond(c *gin.Context, result any, err error) {
	protocol.Respond(c.Writer, c.Request, result, err)
	c.Abort()
}
