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
//     [CallFrom] (and the visitor with [VisitorFrom]) and answers it with
//     [Respond].
//
// Methods your router does not route are answered by the router: [Mount]
// registers echo's Any methods plus the short list in [ExtraMethods], so any
// other method (a custom one) gets echo's own 405 JSON before the Handler
// sees it. Median only sends GET and POST.
package echomedian

import (
	"bytes"
	"io"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/median-go/median/protocol"
)

// callKey is the echo context key the middleware stores the call under.
const callKey = "median.call"

// Router is what [Mount] registers on: *echo.Echo and *echo.Group both
// satisfy it.
type Router interface {
	Any(path string, handler echo.HandlerFunc, middleware ...echo.MiddlewareFunc) []*echo.Route
	Match(methods []string, path string, handler echo.HandlerFunc, middleware ...echo.MiddlewareFunc) []*echo.Route
}

// New returns an echo handler that answers the Median endpoint with h. It
// never returns an error: every answer, refusals included, is written here.
// Register it for every method (echo's Any), so that methods other than GET
// and POST get the contract's 405 answer; [Mount] does that for you.
func New(h *protocol.Handler) echo.HandlerFunc {
	return func(c echo.Context) error {
		h.Serve(c.Request().Context(), protocol.RequestFromHTTP(c.Request())).WriteTo(c.Response())
		return nil
	}
}

// ExtraMethods are the methods [Mount] registers beyond echo's Any
// (CONNECT, DELETE, GET, HEAD, OPTIONS, PATCH, POST, PROPFIND, PUT, TRACE,
// REPORT), so that they too get the contract's 405 answer instead of echo's
// 405 page: the other WebDAV methods, PURGE (caches) and QUERY.
var ExtraMethods = []string{"PROPPATCH", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK", "PURGE", "QUERY"}

// Mount registers the Median endpoint at path on r, an *echo.Echo or an
// *echo.Group, for every method of echo's Any and [ExtraMethods]. When path
// does not end in "/", path+"/" is registered too, so that echo's 404 page
// (or a trailing-slash middleware) never answers on the Median path. Use it
// when the Handler's registered tools answer every call.
func Mount(r Router, path string, h *protocol.Handler) {
	handler := New(h)
	for _, p := range paths(path) {
		r.Any(p, handler)
		r.Match(ExtraMethods, p, handler)
	}
}

// paths returns path and, when it does not end in "/", path+"/".
func paths(path string) []string {
	if strings.HasSuffix(path, "/") {
		return []string{path}
	}
	return []string{path, path + "/"}
}

// Middleware returns echo middleware that verifies Median's requests with h
// and lets only verified tool calls through to the next handler, which
// answers with [Respond]. Everything else (a refusal, the GET manifest, the
// diagnostics answer, the stored answer of a repeated toolCallId) is answered
// here and the next handler does not run.
//
// The call is stored on the echo context ([CallFrom]) and on the request's
// context.Context ([protocol.CallFromContext]), and the body it read is given
// back: the next handler reads c.Request().Body (or binds it) as Median sent
// it. Answer every call that gets through with Respond; a call your handler
// leaves unanswered (or panics on) gets execution_failed stored for its
// toolCallId, so a repeat is answered at once.
func Middleware(h *protocol.Handler) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			ctx := c.Request().Context()
			call, resp, ok := h.Verify(ctx, protocol.RequestFromHTTP(c.Request()))
			if !ok {
				resp.WriteTo(c.Response())
				return nil
			}
			c.Set(callKey, call)
			r := c.Request().WithContext(protocol.ContextWithCall(ctx, call))
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(call.Body)), int64(len(call.Body))
			c.SetRequest(r)
			defer protocol.Settle(ctx, call) // a handler that never answered still releases the toolCallId
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

// Respond answers the call that [Middleware] verified: result as
// {"result": …}, a [*protocol.Refusal] (as result or as err) as a refusal
// result, [protocol.UnknownTool] (for a tool you do not know) or a bind
// error from [protocol.Call.BindInput] as that 4xx error, or any other err as
// execution_failed. A call is answered once: a second Respond writes
// nothing. Without the middleware it answers execution_failed saying so.
// It returns nil, so a handler can end with return echomedian.Respond(c, out, err).
func Respond(c echo.Context, result any, err error) error {
	call, _ := CallFrom(c)
	protocol.Respond(c.Request().Context(), call, result, err).WriteTo(c.Response())
	return nil
}
