package hertzmedian

import (
	"bytes"
	"net/http"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/median-go/median/internal/adapt/httpwire"
	"github.com/median-go/median/protocol"
)

// request builds the core's view of the Hertz request: the method and the
// median-signature header as strings of their own (Hertz reuses its
// buffers once the handler returns; a header sent more than once is
// joined with ",", PROTOCOL.md §1.1), and the body as Hertz holds it,
// which the core copies (see protocol.Request). A streamed body
// (server.WithStreamBody) is left unread for the core to read up to its
// limit; stream is nil unless the body is streamed.
func request(c *app.RequestContext) (r protocol.Request, stream *httpwire.BodyStream) {
	r = protocol.Request{Method: method(c.Request.Header.Method()), ContentLength: -1}
	// The headers Hertz keeps apart (Host, Cookie, …) are none of these;
	// its VisitAll would also build the Cookie header.
	r.Signature, r.Check = httpwire.RawHeaders(c.Request.Header.PeekAll, c.Request.Header.VisitAllCustomHeader)
	if c.Request.IsBodyStream() {
		stream = httpwire.NewBodyStream(c.Request.BodyStream())
		r.Body = stream
		if n := c.Request.Header.ContentLength(); n >= 0 {
			r.ContentLength = int64(n)
		}
		return r, stream
	}
	r.BodyBytes = c.Request.Body()
	r.ContentLength = int64(len(r.BodyBytes))
	return r, nil
}

// method returns m as a string that does not alias Hertz's buffers; the
// usual methods cost no allocation.
func method(m []byte) string {
	switch string(m) {
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
	return string(m)
}

// write puts resp in c's response: the status, Content-Type
// application/json, the Allow header on 405 and the body, which the
// response then shares (the core never writes to an answer it returned,
// and the replay store may keep these very bytes). The zero Response (a
// second answer to one call) writes nothing, so the first answer stands.
func write(c *app.RequestContext, resp protocol.Response) {
	if resp.Status == 0 {
		return
	}
	c.Response.SetStatusCode(resp.Status)
	c.Response.Header.SetContentType(httpwire.ContentType)
	if resp.Allow != "" {
		c.Response.Header.Set("Allow", resp.Allow)
	}
	if resp.CheckToken != "" {
		c.Response.Header.Set(httpwire.CheckTokenHeader, resp.CheckToken)
	}
	c.Response.SetBodyRaw(resp.Body)
}

// written is the status of a response the handlers wrote of their own,
// for protocol.Settle: 0 when they left it as Hertz starts it (status 200,
// no body). A hijacked connection (c.Hijack) and a hijacked writer count
// as an answer: Hertz sends the response the handler set, 200 when none,
// before it hands the connection over.
func written(c *app.RequestContext) int {
	res := &c.Response
	if c.Hijacked() || res.GetHijackWriter() != nil || res.StatusCode() != http.StatusOK || len(res.BodyBytes()) > 0 || res.IsBodyStream() {
		return res.StatusCode()
	}
	return 0
}

// answered reports whether a handler answered the call: a response of its
// own (through Respond or directly), a hijacked connection, or Hertz's
// abort.
func answered(c *app.RequestContext) bool { return c.IsAborted() || written(c) != 0 }

// dropQuery removes the request's query string, from its URI and its
// request line, for the handlers behind the middleware: Median signs no
// part of the URL and sends no query, so a handler must not read one an
// attacker added (c.Query then finds none).
func dropQuery(c *app.RequestContext) {
	u := c.Request.URI()
	if len(u.QueryString()) == 0 && bytes.IndexByte(c.Request.Header.RequestURI(), '?') < 0 {
		return
	}
	u.SetQueryString("")
	c.Request.Header.SetRequestURIBytes(u.PathOriginal())
}
