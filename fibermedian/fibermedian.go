// Package fibermedian mounts the Median tool endpoint on a fiber (v2) app.
//
// It only moves requests between fiber (fasthttp) and [protocol.Handler]:
// every check and every answer comes from the core, so an endpoint served
// through fiber answers byte for byte what it answers on net/http. fiber is
// not built on net/http, so this adapter calls the core's
// [protocol.Handler.Serve] and [protocol.Handler.Verify] itself, and is the
// only one with a test helper, [Do].
//
// Two ways to mount it, both with [Mount]:
//
//	fibermedian.Mount(api, "/median", h)                 // the Handler's tools answer
//	fibermedian.Mount(api, "/median", h, auth, dispatch) // your handlers answer verified calls
//
// In the first form ([New]) the Handler answers everything: signature,
// body, the tools registered with [protocol.NewTool], the GET manifest and
// diagnostics. In the second, [Middleware] verifies and answers everything
// but verified calls of the tools in protocol.Config.Tools (declare those
// only your handlers answer with [protocol.DeclareTool]), which reach
// your handlers: they read the call with [CallFrom] (its Visitor is who
// the agent talks to) and answer it with [Respond]. The handlers form a
// chain, and the first one that answers ends it (see "Handler chains" in
// the protocol package): through Respond, a direct write (c.SendString,
// c.SendStatus, c.JSON) or a returned error, which is answered as
// Respond(c, nil, err) would answer it. As everywhere in fiber, a handler
// passes the call on with c.Next(); one that returns without it and
// without answering (fiber's abort) ends the chain unanswered, and the
// core answers execution_failed. Refuse the contract's way,
// fibermedian.Respond(c, nil, protocol.Refuse(reason, detail)): a 403 of
// your own is sent as written, but Median's agent reads it as the tool not
// answering.
//
// Either way Mount registers the path with and without a
// trailing slash for every method fiber routes, so the contract's 405 and
// the manifest always come from the core. fiber refuses a method missing
// from fiber.Config.RequestMethods (default: the nine standard ones) with
// its own 400 before any route runs; to have the core answer, say, PURGE
// with the contract's 405, list it there:
//
//	fiber.New(fiber.Config{RequestMethods: append(slices.Clone(fiber.DefaultMethods), "PURGE")})
//
// Median only sends GET and POST.
//
// Only the call is authenticated: Median signs the timestamp and the
// body, so trust what CallFrom returns, never the query string or a header
// (see "Authenticated: the call only" in the protocol package). The
// handlers after the middleware find no query string (c.Query, c.Queries,
// c.OriginalURL) and the headers as they arrived.
//
// A panic in your handlers is recovered by [Middleware], logged with its
// stack and answered execution_failed the first time, whatever recovery
// middleware (recover.New) runs outside. An error your handlers return is
// their answer too, as if they called Respond(c, nil, err): fiber's error
// handler never writes a page of its own on the Median path.
//
// Values reach tools: a tool's ctx is c.UserContext() (its values,
// cancellation and deadline), falling back to the fiber context's locals,
// so what earlier middleware stored with c.Locals(key, v) (requestid's
// "requestid", for one) is ctx.Value(key). The locals are read only while
// the request is served: fiber reuses its contexts, so a goroutine that
// outlives the request sees only the user context's values.
//
// What fiber reads first: fasthttp reads a request's headers and then,
// before any handler runs (so before this adapter sees the signature
// header), its whole body, into a buffer of the declared length or as a
// chunked body arrives, up to fiber.Config.BodyLimit (default 4 MiB; a
// larger body is answered 413 with fasthttp's own plain-text body). A
// client with no key can so make the server hold up to BodyLimit per
// connection until fiber.Config.ReadTimeout (none by default). Set
// ReadTimeout, and BodyLimit just above the Handler's MaxBodyBytes
// (default 1 MiB), such as MaxBodyBytes+1: a body over MaxBodyBytes, up to
// BodyLimit, is then still the core's to refuse with the contract's 413
// invalid_body. fiber.Config.StreamRequestBody changes the order: fasthttp
// reads at most 8 KiB of the body first, and the core checks the signature
// header before it reads the rest, never past MaxBodyBytes; but fiber then
// applies BodyLimit to no route (c.Body() reads a streamed body whole), so
// turn it on only when every route of the app bounds what it reads. Both
// are the app's settings, which an adapter cannot choose for it.
//
// fasthttp reuses its buffers after a handler returns. The core copies the
// body once its signature matches (see protocol.Request), so a
// [protocol.Call] and everything in it stay valid after the request. The answer is not copied: fasthttp's response shares the core's
// bytes, which the in-process replay store also keeps for repeats of the
// call, so no middleware may write into c.Response().Body() in place
// (replacing the body, as c.Send or c.SendString do, is fine).
package fibermedian

import (
	"context"
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/median-go/median/internal/adapt/fasthttpio"
	"github.com/median-go/median/internal/adapt/mount"
	"github.com/median-go/median/protocol"
)

// Mount takes the app and its groups alike.
var (
	_ fiber.Router = (*fiber.App)(nil)
	_ fiber.Router = (*fiber.Group)(nil)
)

// New returns a fiber handler that answers the Median endpoint with h: the
// Handler's registered tools answer the calls. It never returns an error:
// every answer, refusals included, is written here. Register it on the
// path and the path with a trailing slash for every method (fiber's All);
// [Mount] does that for you.
func New(h *protocol.Handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		ctx := newContext(c)
		defer ctx.Detach()
		req, stream := fasthttpio.Request(c.Request(), c.Method())
		fasthttpio.Write(c.Response(), h.Serve(ctx, req))
		stream.CloseIfUnread(c.Context())
		return nil
	}
}

// Mount registers the Median endpoint at path on r, a *fiber.App or a
// group, with and without a trailing slash (so it answers under strict
// routing too), for every method fiber routes. "" and "/" both mount at
// the root of r, once, as "/".
//
// With no handlers it mounts [New](h). With handlers it mounts
// [Middleware](h) followed by them: your handlers answer the verified tool
// calls with [Respond]; everything else is answered before them. Each
// handler but the last passes the call on with c.Next(). The first handler
// that answers (Respond, a direct write, a returned error) ends the chain:
// the handlers after it do not run, even when it calls c.Next().
func Mount(r fiber.Router, path string, h *protocol.Handler, handlers ...fiber.Handler) {
	chain := []fiber.Handler{New(h)}
	if len(handlers) > 0 {
		chain = []fiber.Handler{Middleware(h)}
		for _, handler := range handlers {
			chain = append(chain, step(handler))
		}
		chain = append(chain, end)
	}
	for _, p := range mount.Paths(path) {
		r.All(p, chain...)
	}
}

// end closes Mount's chain: c.Next() in the last handler stops there.
// fiber would otherwise go on to the next route that matches, the path's
// twin with a trailing slash included, and run the endpoint again.
func end(*fiber.Ctx) error { return nil }

// step runs one of Mount's handlers unless the call was answered before
// it: a handler that answered and then called c.Next() ends the chain all
// the same.
func step(handler fiber.Handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if answered(c) {
			return nil
		}
		return handler(c)
	}
}

// answered reports whether a handler answered the call: a response of its
// own (written through Respond or directly), or the connection hijacked.
func answered(c *fiber.Ctx) bool {
	return !fasthttpio.Untouched(c.Response()) || c.Context().Hijacked()
}

// written is the status of a response the handlers answered on their own,
// for protocol.Settle: 0 for none, 101 Switching Protocols standing for a
// hijacked connection, on which the handler answers itself.
func written(c *fiber.Ctx) int {
	if status := fasthttpio.Written(c.Response()); status != 0 || !c.Context().Hijacked() {
		return status
	}
	return http.StatusSwitchingProtocols
}

// Middleware returns fiber middleware that verifies Median's requests with
// h and lets only verified calls of the tools in protocol.Config.Tools
// through to the next handlers, which answer with [Respond]. Everything
// else (a refusal, 404 unknown_tool for any other tool, the GET manifest,
// the diagnostics answer, the stored answer of a repeated toolCallId, the
// 405) is answered here and the next handlers do not run.
//
// The next handlers find the call with [CallFrom] (it is on
// c.UserContext()) and read c.Body() as Median sent it, streamed bodies
// (fiber.Config.StreamRequestBody) included. An error they return is
// answered like Respond(c, nil, err). A call they leave unanswered gets
// execution_failed kept for its toolCallId, so a repeat is answered at
// once; a panic in them is recovered, logged and answered execution_failed.
// The middleware itself never returns an error. Prefer [Mount] with
// handlers, which also registers every method and the trailing slash.
func Middleware(h *protocol.Handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		ctx := newContext(c)
		defer ctx.Detach()
		req, stream := fasthttpio.Request(c.Request(), c.Method())
		callCtx, resp, ok := h.Verify(ctx, req)
		if !ok {
			fasthttpio.Write(c.Response(), resp)
			stream.CloseIfUnread(c.Context())
			return nil
		}
		fasthttpio.DropQuery(c.Request())
		if stream != nil { // the core has read the stream: give the bytes back
			call, _ := protocol.CallFrom(callCtx)
			c.Request().SetBody(call.Body)
		}
		c.SetUserContext(callCtx)
		serveNext(c, callCtx)
		return nil
	}
}

// serveNext runs the handlers after Middleware for the verified call on
// ctx: an error they return is their answer (unless they wrote one of
// their own first), a panic is answered execution_failed, and a call left
// unanswered is settled.
func serveNext(c *fiber.Ctx, ctx context.Context) {
	defer func() {
		fasthttpio.Write(c.Response(), protocol.Settle(ctx, written(c), recover()))
	}()
	if err := c.Next(); err != nil && !answered(c) {
		fasthttpio.Write(c.Response(), protocol.Answer(ctx, nil, err))
	}
}

// CallFrom returns the call that [Middleware] verified for this request,
// and false when the middleware did not run.
func CallFrom(c *fiber.Ctx) (*protocol.Call, bool) {
	return protocol.CallFrom(c.UserContext())
}

// Respond answers the call that [Middleware] verified, as
// [protocol.Respond] does. It returns nil, so a handler can end with
// return fibermedian.Respond(c, out, err).
func Respond(c *fiber.Ctx, result any, err error) error {
	fasthttpio.Write(c.Response(), protocol.Answer(c.UserContext(), result, err))
	return nil
}
