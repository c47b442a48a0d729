// Package ginmedian mounts the Median tool endpoint on a gin router.
//
// It only moves bytes between gin and [protocol.Handler]: every check and
// every answer comes from the core, so an endpoint served through gin
// answers byte for byte what it would answer on net/http.
//
// Two ways to use it:
//
//   - [Mount] (or [New]) lets the Handler answer everything: signature,
//     body, the tools registered with [protocol.NewTool], the manifest and
//     diagnostics.
//   - [Middleware] only verifies; your own gin handler reads the call with
//     [CallFrom] (and the visitor with [VisitorFrom]) and answers it with
//     [Respond].
//
// Methods your router does not route are answered by the router: [Mount]
// registers gin's Any methods plus the short list in [ExtraMethods], so any
// other method (a custom one) gets gin's own 404 text before the Handler
// sees it. Median only sends GET and POST.
package ginmedian

import (
	"bytes"
	"io"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/median-go/median/protocol"
)

// callKey is the gin context key the middleware stores the call under.
const callKey = "median.call"

// New returns a gin handler that answers the Median endpoint with h. Register
// it for every method (gin's Any), so that methods other than GET and POST
// get the contract's 405 answer; [Mount] does that for you.
func New(h *protocol.Handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		h.Serve(c.Request.Context(), protocol.RequestFromHTTP(c.Request)).WriteTo(c.Writer)
	}
}

// ExtraMethods are the methods [Mount] registers beyond gin's Any (GET,
// POST, PUT, PATCH, HEAD, OPTIONS, DELETE, CONNECT, TRACE), so that they too
// get the contract's 405 answer instead of gin's 404 page: the WebDAV
// methods, PURGE (caches) and QUERY.
var ExtraMethods = []string{"PROPFIND", "PROPPATCH", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK", "REPORT", "PURGE", "QUERY"}

// Mount registers the Median endpoint at path on r, a *gin.Engine or a
// *gin.RouterGroup, for every method of gin's Any and [ExtraMethods]. When
// path does not end in "/", path+"/" is registered too, so that gin's
// trailing-slash redirect never answers on the Median path. Use it when the
// Handler's registered tools answer every call.
func Mount(r gin.IRoutes, path string, h *protocol.Handler) {
	handler := New(h)
	for _, p := range paths(path) {
		r.Any(p, handler)
		for _, m := range ExtraMethods {
			r.Handle(m, p, handler)
		}
	}
}

// paths returns path and, when it does not end in "/", path+"/".
func paths(path string) []string {
	if strings.HasSuffix(path, "/") {
		return []string{path}
	}
	return []string{path, path + "/"}
}

// Middleware returns gin middleware that verifies Median's requests with h
// and lets only verified tool calls through to the next handler, which
// answers with [Respond]. Everything else (a refusal, the GET manifest, the
// diagnostics answer, the stored answer of a repeated toolCallId) is answered
// here and the chain is aborted.
//
// The call is stored on the gin context ([CallFrom]) and on the request's
// context.Context ([protocol.CallFromContext]), and the body it read is given
// back: the next handler reads c.Request.Body as Median sent it. Answer every
// call that gets through with Respond; a call your handler leaves unanswered
// (or panics on) gets execution_failed stored for its toolCallId, so a repeat
// is answered at once.
func Middleware(h *protocol.Handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx := c.Request.Context()
		call, resp, ok := h.Verify(ctx, protocol.RequestFromHTTP(c.Request))
		if !ok {
			resp.WriteTo(c.Writer)
			c.Abort()
			return
		}
		c.Set(callKey, call)
		r := c.Request.WithContext(protocol.ContextWithCall(ctx, call))
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(call.Body)), int64(len(call.Body))
		c.Request = r
		defer protocol.Settle(ctx, call) // a handler that never answered still releases the toolCallId
		c.Next()
	}
}

// CallFrom returns the call that [Middleware] verified for this request, and
// false when the middleware did not run.
func CallFrom(c *gin.Context) (*protocol.Call, bool) {
	if v, ok := c.Get(callKey); ok {
		if call, ok := v.(*protocol.Call); ok && call != nil {
			return call, true
		}
	}
	return protocol.CallFromContext(c.Request.Context())
}

// VisitorFrom returns the visitor of the call that [Middleware] verified,
// and false when the middleware did not run. Authorize on
// [protocol.Visitor.ExternalID] only.
func VisitorFrom(c *gin.Context) (protocol.Visitor, bool) {
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
func Respond(c *gin.Context, result any, err error) {
	call, _ := CallFrom(c)
	protocol.Respond(c.Request.Context(), call, result, err).WriteTo(c.Writer)
}
