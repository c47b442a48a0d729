// Package hertzmedian mounts the Median tool endpoint on a CloudWeGo Hertz
// server or router group.
//
// It only moves requests between Hertz and [protocol.Handler]: every check
// and every answer comes from the core, so an endpoint served through
// Hertz answers byte for byte what it answers on net/http. Hertz is not
// built on net/http, so this adapter calls the core's
// [protocol.Handler.Serve] and [protocol.Handler.Verify] itself, and has a
// test helper, [Do], which runs a request through Hertz's own in-process
// test helper (pkg/common/ut).
//
// Two ways to mount it, both with [Mount]:
//
//	hertzmedian.Mount(api, "/median", h)                 // the Handler's tools answer
//	hertzmedian.Mount(api, "/median", h, auth, dispatch) // your handlers answer verified calls
//
// In the first form ([New]) the Handler answers everything: signature,
// body, the tools registered with [protocol.NewTool], the GET manifest and
// diagnostics. In the second, [Middleware] verifies and answers everything
// but verified calls of the tools in protocol.Config.Tools (declare those
// only your handlers answer with [protocol.DeclareTool]), which reach
// your handlers: they read the call with [CallFrom] on the ctx Hertz
// passes them (its Visitor is who the agent talks to) and answer it with
// [Respond]. The handlers form a chain, and the first one that answers
// ends it (see "Handler chains" in the protocol package): through Respond,
// a direct write (c.String, c.JSON, c.SetStatusCode, c.Hijack) or Hertz's
// abort (c.Abort, c.AbortWithStatus…). A handler that does none of these
// passes the call on to the next one; calling c.Next(ctx) is not needed.
// Refuse the contract's way,
// hertzmedian.Respond(ctx, c, nil, protocol.Refuse(reason, detail)): a 403
// of your own is sent as written, but Median's agent reads it as the tool
// not answering.
//
// Either way Mount registers the path with and without a trailing slash
// (so Hertz's trailing-slash redirect never answers), for every method
// Hertz's Any routes (GET, POST, PUT, PATCH, HEAD, OPTIONS, DELETE,
// CONNECT, TRACE), so the contract's 405 and the manifest always come
// from the core. A method outside that set (PURGE, a WebDAV method) gets
// Hertz's own answer (404, or 405 with server.WithHandleMethodNotAllowed);
// Median only sends GET and POST.
//
// A panic in your handlers is recovered by [Middleware], logged with its
// stack and answered execution_failed the first time, whatever recovery
// middleware (recovery.Recovery) runs outside.
//
// Values reach tools: a tool's ctx is the ctx Hertz passed the handler
// (its values, cancellation and deadline), falling back to the request
// context's keys, so what earlier middleware stored with c.Set(key, v)
// (Hertz keys are strings) is ctx.Value(key). The keys are read only while
// the request is served: Hertz reuses its request contexts, so a goroutine
// that outlives the request sees only the ctx's own values.
//
// Body size: Hertz reads the whole body before any handler runs, up to
// server.WithMaxRequestBodySize (default 4 MiB), and refuses a larger one
// with an answer of its own (413, plain text). Keep that limit at or above
// the Handler's MaxBodyBytes (default 1 MiB) so that the contract's 413
// invalid_body answers every oversized body. With server.WithStreamBody
// the body is streamed to the core, which stops reading at MaxBodyBytes
// and closes the connection when it leaves part of the body unread.
//
// Hertz reuses its buffers after a handler returns; the core copies the
// body it is handed (see protocol.Request), so a [protocol.Call] and
// everything in it stay valid after the request. The answer is not
// copied: Hertz's response shares the core's bytes, which the in-process
// replay store also keeps for repeats of the call, so no middleware may
// write into c.Response.Body() in place (replacing the body, as c.String
// or c.Response.SetBody do, is fine).
//
// Hertz logs every route it registers at debug level (18 lines for one
// Mount); server.WithDisablePrintRoute(true) turns that off.
package hertzmedian

import (
	"context"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/route"

	"github.com/median-go/median/internal/adapt/mount"
	"github.com/median-go/median/protocol"
)

// Mount takes the server's engine and its groups alike (a *server.Hertz
// embeds a *route.Engine).
var (
	_ route.IRoutes = (*route.Engine)(nil)
	_ route.IRoutes = (*route.RouterGroup)(nil)
)

// New returns a Hertz handler that answers the Median endpoint with h: the
// Handler's registered tools answer the calls. Register it on the path and
// the path with a trailing slash for every method (Hertz's Any); [Mount]
// does that for you.
func New(h *protocol.Handler) app.HandlerFunc {
	return func(ctx context.Context, c *app.RequestContext) {
		fctx := newContext(ctx, c)
		defer fctx.Detach()
		req, stream := request(c)
		write(c, h.Serve(fctx, req))
		stream.CloseIfUnread(c)
	}
}

// Mount registers the Median endpoint at path on r, a *server.Hertz (its
// engine) or a *route.RouterGroup, with and without a trailing slash, for
// every method of Hertz's Any. "" and "/" both mount at the root of r,
// once, as "/".
//
// With no handlers it mounts [New](h). With handlers it mounts
// [Middleware](h) followed by them: your handlers answer the verified tool
// calls with [Respond]; everything else is answered before them. The first
// handler that answers (Respond, a direct write, c.Abort) ends the chain:
// the handlers after it do not run, even one it called c.Next(ctx) for.
func Mount(r route.IRoutes, path string, h *protocol.Handler, handlers ...app.HandlerFunc) {
	chain := []app.HandlerFunc{New(h)}
	if len(handlers) > 0 {
		chain = []app.HandlerFunc{Middleware(h)}
		for _, handler := range handlers {
			chain = append(chain, step(handler))
		}
	}
	for _, p := range mount.Paths(path) {
		r.Any(p, chain...)
	}
}

// step runs one of Mount's handlers unless the call was answered before
// it, and ends the chain (c.Abort) once the call is answered, so that no
// handler after the first that answers runs.
func step(handler app.HandlerFunc) app.HandlerFunc {
	return func(ctx context.Context, c *app.RequestContext) {
		if answered(c) {
			c.Abort()
			return
		}
		handler(ctx, c)
		if answered(c) {
			c.Abort()
		}
	}
}

// Middleware returns Hertz middleware that verifies Median's requests with
// h and lets only verified calls of the tools in protocol.Config.Tools
// through to the handlers after it, which answer with [Respond].
// Everything else (a refusal, 404 unknown_tool for any other tool, the GET
// manifest, the diagnostics answer, the stored answer of a repeated
// toolCallId, the 405) is answered here and the chain is aborted.
//
// The handlers after it are passed a ctx that carries the call, which
// they find with [CallFrom], and read c.Request.Body() as Median sent it,
// streamed bodies included. A call they leave unanswered gets
// execution_failed kept for its toolCallId, so a repeat is answered at
// once; a panic in them is recovered, logged and answered
// execution_failed, and the chain is aborted. Prefer [Mount] with
// handlers, which also registers every method and the trailing slash, and
// ends the chain at the first handler that answers; on a route of your own
// Hertz's rules apply: [Respond] ends the chain, a direct write does not
// unless the handler aborts after it.
func Middleware(h *protocol.Handler) app.HandlerFunc {
	return func(ctx context.Context, c *app.RequestContext) {
		fctx := newContext(ctx, c)
		defer fctx.Detach()
		req, stream := request(c)
		callCtx, resp, ok := h.Verify(fctx, req)
		if !ok {
			write(c, resp)
			stream.CloseIfUnread(c)
			c.Abort()
			return
		}
		dropQuery(c)
		if stream != nil { // the core has read the stream: give the bytes back
			call, _ := protocol.CallFrom(callCtx)
			c.Request.SetBody(call.Body)
		}
		serveNext(callCtx, c)
	}
}

// serveNext runs the handlers after Middleware for the verified call on
// ctx: a panic is answered execution_failed, and a call left unanswered is
// settled. The chain ends here either way: after a recovered panic Hertz
// would otherwise go on with the handlers after the one that panicked.
func serveNext(ctx context.Context, c *app.RequestContext) {
	defer func() {
		write(c, protocol.Settle(ctx, written(c), recover()))
		c.Abort()
	}()
	c.Next(ctx)
}

// CallFrom returns the call that [Middleware] verified, from the ctx Hertz
// passes the handlers after it, and false when the middleware did not run.
func CallFrom(ctx context.Context) (*protocol.Call, bool) {
	return protocol.CallFrom(ctx)
}

// Respond answers the call that [Middleware] verified, found on ctx (the
// ctx Hertz passed the handler), as [protocol.Respond] does, and ends the
// handler chain (c.Abort).
func Respond(ctx context.Context, c *app.RequestContext, result any, err error) {
	write(c, protocol.Answer(ctx, result, err))
	c.Abort()
}
