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
//     [CallFrom] and answers it with [Respond].
package ginmedian

import (
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
		h.Serve(c.Request.Context(), request(c)).WriteTo(c.Writer)
	}
}

// Mount registers the Median endpoint at path on r, a *gin.Engine or a
// *gin.RouterGroup, for every method gin routes. Use it when the Handler's
// registered tools answer every call.
func Mount(r gin.IRoutes, path string, h *protocol.Handler) {
	r.Any(path, New(h))
}

// Middleware returns gin middleware that verifies Median's requests with h
// and lets only verified tool calls through to the next handler, which
// answers with [Respond]. Everything else (a refusal, the GET manifest, the
// diagnostics answer, the stored answer of a repeated toolCallId) is answered
// here and the chain is aborted.
//
// The call is stored on the gin context ([CallFrom]) and on the request's
// context.Context ([protocol.CallFromContext]). Answer every call that gets
// through: replay protection holds its toolCallId until the answer is given.
func Middleware(h *protocol.Handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx := c.Request.Context()
		call, resp, ok := h.Verify(ctx, request(c))
		if !ok {
			resp.WriteTo(c.Writer)
			c.Abort()
			return
		}
		c.Set(callKey, call)
		c.Request = c.Request.WithContext(protocol.ContextWithCall(ctx, call))
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

// Respond answers the call that [Middleware] verified: result as
// {"result": …}, a [*protocol.Refusal] (as result or as err) as a refusal
// result, or err as execution_failed. It must be called once per call; without
// the middleware it answers execution_failed saying so.
func Respond(c *gin.Context, result any, err error) {
	call, _ := CallFrom(c)
	protocol.Respond(c.Request.Context(), call, result, err).WriteTo(c.Writer)
}

// request builds the core's view of a gin request. The body is left unread:
// the core reads it only after the header checks, and never past its limit.
func request(c *gin.Context) protocol.Request {
	r := c.Request
	sig := ""
	if v := r.Header[signatureHeader]; len(v) > 0 {
		sig = v[0]
	}
	return protocol.Request{Method: r.Method, Signature: sig, Body: r.Body, ContentLength: r.ContentLength}
}

// signatureHeader is protocol.SignatureHeader in net/http's canonical form.
const signatureHeader = "Median-Signature"
