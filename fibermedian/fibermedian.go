// Package fibermedian mounts the Median tool endpoint on a fiber (v2) app.
//
// It only moves bytes between fiber (fasthttp) and [protocol.Handler]: every
// check and every answer comes from the core, so an endpoint served through
// fiber answers byte for byte what it would answer on net/http.
//
// Two ways to use it:
//
//   - [Mount] (or [New]) lets the Handler answer everything: signature,
//     body, the tools registered with [protocol.NewTool], the manifest and
//     diagnostics.
//   - [Middleware] only verifies; your own fiber handler reads the call with
//     [CallFrom] (and the visitor with [VisitorFrom]) and answers it with
//     [Respond].
//
// Methods your router does not route are answered by the router: fiber
// refuses a method missing from fiber.Config.RequestMethods (default: the
// nine standard ones) with its own 400 "Invalid http method" before any
// route runs. To have the Handler answer, say, PURGE with the contract's
// 405, list it there:
//
//	fiber.New(fiber.Config{RequestMethods: append(slices.Clone(fiber.DefaultMethods), "PURGE")})
//
// Median only sends GET and POST.
//
// Body size: fasthttp reads the whole body before any handler runs, up to
// fiber.Config.BodyLimit (default 4 MiB), and answers a larger one 413 with
// its own plain-text body. Keep BodyLimit at or above the Handler's
// MaxBodyBytes (default 1 MiB) so that the contract's 413 invalid_body
// answers every oversized body. With fiber.Config.StreamRequestBody the body
// is streamed to the core, which stops reading at MaxBodyBytes.
//
// fasthttp reuses its buffers after a handler returns. The core reads the
// body into its own buffer (after the header checks, never past its limit),
// so a [protocol.Call] and everything in it stay valid after the request;
// the answer is copied into fasthttp's response.
package fibermedian

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/median-go/median/protocol"
)

// callKey is the fiber Locals key the middleware stores the call under.
type callKey struct{}

// New returns a fiber handler that answers the Median endpoint with h. It
// never returns an error: every answer, refusals included, is written here.
// Register it for every method (fiber's All), so that methods other than GET
// and POST get the contract's 405 answer; [Mount] does that for you.
func New(h *protocol.Handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		req, stream := request(c)
		write(c, h.Serve(c.UserContext(), req))
		stream.closeIfUnread(c)
		return nil
	}
}

// Mount registers the Median endpoint at path on r, a *fiber.App or a group,
// for every method fiber routes (fiber.Config.RequestMethods). When path
// does not end in "/", path+"/" is registered too, so that the Median path
// is answered by the Handler with or without a trailing slash, under strict
// routing as well. Use it when the Handler's registered tools answer every
// call.
func Mount(r fiber.Router, path string, h *protocol.Handler) {
	handler := New(h)
	r.All(path, handler)
	if !strings.HasSuffix(path, "/") {
		r.All(path+"/", handler)
	}
}

// Middleware returns fiber middleware that verifies Median's requests with h
// and lets only verified tool calls through to the next handler, which
// answers with [Respond]. Everything else (a refusal, the GET manifest, the
// diagnostics answer, the stored answer of a repeated toolCallId) is answered
// here and the next handler does not run.
//
// The call is stored in the fiber context's Locals ([CallFrom]) and on its
// user context ([protocol.CallFromContext] on c.UserContext()), and the body
// stays readable: c.Body() in the next handler returns it as Median sent it,
// streamed bodies (fiber.Config.StreamRequestBody) included. Answer every
// call that gets through with Respond; a call your handler leaves unanswered
// (or panics on) gets execution_failed stored for its toolCallId, so a repeat
// is answered at once.
func Middleware(h *protocol.Handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		ctx := c.UserContext()
		req, stream := request(c)
		call, resp, ok := h.Verify(ctx, req)
		if !ok {
			write(c, resp)
			stream.closeIfUnread(c)
			return nil
		}
		if stream != nil { // the core has read the stream: give the bytes back
			c.Request().SetBody(call.Body)
		}
		c.Locals(callKey{}, call)
		c.SetUserContext(protocol.ContextWithCall(ctx, call))
		defer protocol.Settle(ctx, call) // a handler that never answered still releases the toolCallId
		return c.Next()
	}
}

// CallFrom returns the call that [Middleware] verified for this request, and
// false when the middleware did not run.
func CallFrom(c *fiber.Ctx) (*protocol.Call, bool) {
	if call, ok := c.Locals(callKey{}).(*protocol.Call); ok && call != nil {
		return call, true
	}
	return protocol.CallFromContext(c.UserContext())
}

// VisitorFrom returns the visitor of the call that [Middleware] verified,
// and false when the middleware did not run. Authorize on
// [protocol.Visitor.ExternalID] only.
func VisitorFrom(c *fiber.Ctx) (protocol.Visitor, bool) {
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
// It returns nil, so a handler can end with return fibermedian.Respond(c, out, err).
func Respond(c *fiber.Ctx, result any, err error) error {
	call, _ := CallFrom(c)
	write(c, protocol.Respond(c.UserContext(), call, result, err))
	return nil
}

// request builds the core's view of a fiber request. The raw body is passed
// as fasthttp holds it (never decoded: the signature covers the bytes as
// sent), as a reader: the core copies it into its own buffer only after the
// header checks, so nothing the core keeps (the Call's Body and RawInput)
// aliases fasthttp's buffers, which are reused once the handler returns. A
// streamed body is left unread for the core to read up to its limit; stream
// is nil unless the body is streamed.
func request(c *fiber.Ctx) (r protocol.Request, stream *streamedBody) {
	req := c.Request()
	r = protocol.Request{
		Method:        method(c.Method()),
		Signature:     string(req.Header.Peek(protocol.SignatureHeader)),
		ContentLength: -1,
	}
	if req.IsBodyStream() {
		stream = &streamedBody{r: req.BodyStream()}
		r.Body = stream
		if n := req.Header.ContentLength(); n >= 0 {
			r.ContentLength = int64(n)
		}
		return r, stream
	}
	body := req.Body()
	r.Body, r.ContentLength = bytes.NewReader(body), int64(len(body))
	return r, nil
}

// streamedBody is a streamed request body (fiber.Config.StreamRequestBody)
// that remembers whether it was read to the end.
type streamedBody struct {
	r   io.Reader
	eof bool
}

func (s *streamedBody) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err == io.EOF {
		s.eof = true
	}
	return n, err
}

// closeIfUnread closes the connection after the answer when the core left
// part of a streamed body unread (a refusal before the body, a body over
// the limit): fasthttp would otherwise parse the rest as the next request
// on the connection and answer it with its own 400.
func (s *streamedBody) closeIfUnread(c *fiber.Ctx) {
	if s != nil && !s.eof {
		c.Context().SetConnectionClose()
	}
}

// method returns the request method as a string that does not alias
// fasthttp's reused buffers (the core hands it to Config.Observer, which may
// keep it). The usual methods cost no allocation.
func method(m string) string {
	switch m {
	case http.MethodGet:
		return http.MethodGet
	case http.MethodPost:
		return http.MethodPost
	case http.MethodPut:
		return http.MethodPut
	case http.MethodPatch:
		return http.MethodPatch
	case http.MethodDelete:
		return http.MethodDelete
	case http.MethodHead:
		return http.MethodHead
	case http.MethodOptions:
		return http.MethodOptions
	}
	return strings.Clone(m)
}

// write copies resp into fasthttp's response. The zero Response (a second
// Respond for one call) writes nothing, so the first answer stands.
func write(c *fiber.Ctx, resp protocol.Response) {
	if resp.Status == 0 {
		return
	}
	res := c.Response()
	res.SetStatusCode(resp.Status)
	res.Header.SetContentType(protocol.ContentType)
	if resp.Allow != "" {
		res.Header.Set(fiber.HeaderAllow, resp.Allow)
	}
	res.SetBody(resp.Body)
}

// Do returns a function that sends one net/http request through app in
// memory and returns its answer, like http.Client.Do. Use it to test a fiber
// app without a listener, for example as conformance.Target.Do. A body of
// unknown length is read first and sent with its length.
func Do(app *fiber.App) func(*http.Request) (*http.Response, error) {
	return func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context()) // app.Test adds headers: leave the caller's request alone
		if r.Body != nil && r.Body != http.NoBody && r.ContentLength < 0 {
			body, err := io.ReadAll(r.Body)
			_ = r.Body.Close()
			if err != nil {
				return nil, fmt.Errorf("fibermedian: reading the request body: %w", err)
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		return app.Test(r, -1)
	}
}
