// Package echomedian mounts the Median tool endpoint on an echo (v4) server.
//
// It only moves bytes between echo and [protocol.Handler]: every check and
// every answer comes from the core, so an endpoint served through echo
// answers byte for byte what it would answer on net/http.
//
// Two ways to use it:
//
//   - [Mount] (or [New]) lets the Handler answer everything: signature,
//     body, the tools registered with [protocol.NewTool], the manifest and
//     diagnostics.
//   - [Middleware] only verifies; your own echo handler reads the call with
//     [CallFrom] and answers it with [Respond].
package echomedian

import (
	"github.com/labstack/echo/v4"

	"github.com/median-go/median/protocol"
)

// callKey is the echo context key the middleware stores the call under.
const callKey = "median.call"

// Router is what [Mount] registers on: *echo.Echo and *echo.Group both
// satisfy it.
type Router interface {
	Any(path string, handler echo.HandlerFunc, middleware ...echo.MiddlewareFunc) []*echo.Route
}

// New returns an echo handler that answers the Median endpoint with h. It
// never returns an error: every answer, refusals included, is written here.
// Register it for every method (echo's Any), so that methods other than GET
// and POST get the contract's 405 answer; [Mount] does that for you.
func New(h *protocol.Handler) echo.HandlerFunc {
	return func(c echo.Context) error {
		h.Serve(c.Request().Context(), request(c)).WriteTo(c.Response())
		return nil
	}
}

// Mount registers the Median endpoint at path on r, an *echo.Echo or an
// *echo.Group, for every method echo routes. Use it when the Handler's
// registered tools answer every call.
func Mount(r Router, path string, h *protocol.Handler) {
	r.Any(path, New(h))
}

// Middleware returns echo middleware that verifies Median's requests with h
// and lets only verified tool calls through to the next handler, which
// answers with [Respond]. Everything else (a refusal, the GET manifest, the
// diagnostics answer, the stored answer of a repeated toolCallId) is answered
// here and the next handler does not run.
//
// The call is stored on the echo context ([CallFrom]) and on the request's
// context.Context ([protocol.CallFromContext]). Answer every call that gets
// through: replay protection holds its toolCallId until the answer is given.
func Middleware(h *protocol.Handler) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			ctx := c.Request().Context()
			call, resp, ok := h.Verify(ctx, request(c))
			if !ok {
				resp.WriteTo(c.Response())
				return nil
			}
			c.Set(callKey, call)
			c.SetRequest(c.Request().WithContext(protocol.ContextWithCall(ctx, call)))
			return next(c)
		}
	}
}

// CallFrom returns the call that [Middleware] verified for this request, and
// false when the middleware did not run.
func CallFrom(c echo.Context) (*protocol.Call, bool) {
	if call, ok := c.Get(callKey).(*protocol.Call); ok && call != nil {
		return call, true
	}
	return protocol.CallFromContext(c.Request().Context())
}

// Respond answers the call that [Middleware] verified: result as
// {"result": …}, a [*protocol.Refusal] (as result or as err) as a refusal
// result, or err as execution_failed. It must be called once per call; without
// the middleware it answers execution_failed saying so. It returns nil, so a
// handler can end with return echomedian.Respond(c, out, err).
func Respond(c echo.Context, result any, err error) error {
	call, _ := CallFrom(c)
	protocol.Respond(c.Request().Context(), call, result, err).WriteTo(c.Response())
	return nil
}

// request builds the core's view of an echo request. The body is left
// unread: the core reads it only after the header checks, and never past its
// limit.
func request(c echo.Context) protocol.Request {
	r := c.Request()
	sig := ""
	if v := r.Header[signatureHeader]; len(v) > 0 {
		sig = v[0]
	}
	return protocol.Request{Method: r.Method, Signature: sig, Body: r.Body, ContentLength: r.ContentLength}
}

// signatureHeader is protocol.SignatureHeader in net/http's canonical form.
const signatureHeader = "Median-Signature"
