// Package fasthttpio moves a Median request from fasthttp to the core and
// the core's answer back, for the adapters of frameworks built on fasthttp
// rather than net/http: fiber v2 and v3.
//
// fasthttp reuses a request's buffers once its handler returns. The body
// and the signature are handed to the core as fasthttp holds them: the
// core copies what it keeps (see protocol.Request); a streamed body goes as
// a reader, which the core reads into its own buffer only after the header
// checks and never past its limit. The method is the adapter's own string.
// The answer is not copied: fasthttp's response shares the core's
// bytes (SetBodyRaw), which the in-process replay store also keeps for
// repeats, so nothing may write into the response's body in place.
//
// It is one of the adapters' run-time helpers (internal/adapt), imported by
// fibermedian and fibermedian/v3; a helper here imports of this module only
// protocol and other helpers (internal/testonly/surface checks), and Go's
// internal rule keeps it from code outside the module.
package fasthttpio

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/median-go/median/internal/adapt/httpwire"
	"github.com/median-go/median/protocol"
)

// Request builds the core's view of req, whose method is method, with its
// median-signature header read whole: sent more than once, its values are
// joined with "," (PROTOCOL.md §1.1). The raw body is passed as
// fasthttp holds it, never decoded (the signature covers the bytes as
// sent) and not copied: the core copies it once the signature matches,
// and refuses a body over its limit without a copy (protocol.Request says
// who owns what). A streamed body (the framework's StreamRequestBody) is
// left unread for the core to read up to its limit; stream is nil unless
// the body is streamed.
func Request(req *fasthttp.Request, method string) (r protocol.Request, stream *httpwire.BodyStream) {
	r = protocol.Request{Method: Method(method), ContentLength: -1}
	r.Signature, r.Check = httpwire.RawHeaders(req.Header.PeekAll, func(f func(k, v []byte)) {
		for k, v := range req.Header.All() {
			f(k, v)
		}
	})
	if req.IsBodyStream() {
		stream = httpwire.NewBodyStream(req.BodyStream())
		r.Body = stream
		if n := req.Header.ContentLength(); n >= 0 {
			r.ContentLength = int64(n)
		}
		return r, stream
	}
	r.BodyBytes = req.Body()
	r.ContentLength = int64(len(r.BodyBytes))
	return r, nil
}

// DropQuery removes req's query string, from its URI and its request
// line, for the handlers behind the middleware: Median signs no part of
// the URL, and sends no query. fasthttp parses the query from the URI
// again when asked (fiber's c.Query, c.Queries), so they find none.
func DropQuery(req *fasthttp.Request) {
	u := req.URI()
	if len(u.QueryString()) == 0 && bytes.IndexByte(req.Header.RequestURI(), '?') < 0 {
		return
	}
	u.SetQueryString("")
	req.Header.SetRequestURIBytes(u.PathOriginal())
}

// Method returns m as a string that does not alias fasthttp's reused
// buffers (the core hands it to Config.Observer, which may keep it). The
// usual methods cost no allocation.
func Method(m string) string {
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

// Write puts resp in res: the status, Content-Type application/json, the
// Allow header on 405, the Median-Check-Token header when set and the body, which res then shares (not copied; the
// core never writes to an answer it returned, and the replay store may keep
// these very bytes, so res.Body() must not be written into in place). The
// zero Response (a second answer to one call) writes nothing, so the first
// answer stands.
func Write(res *fasthttp.Response, resp protocol.Response) {
	if resp.Status == 0 {
		return
	}
	res.SetStatusCode(resp.Status)
	res.Header.SetContentType(httpwire.ContentType)
	if resp.Allow != "" {
		res.Header.Set("Allow", resp.Allow)
	}
	if resp.CheckToken != "" {
		res.Header.Set(httpwire.CheckTokenHeader, resp.CheckToken)
	}
	res.SetBodyRaw(resp.Body) // the core never writes to an answer it returned: no copy
}

// Untouched reports whether a handler left res as fasthttp starts it: status
// 200, no body. The adapters write the core's answer to a call the handler
// left unanswered only then, never over a response of the handler's own.
func Untouched(res *fasthttp.Response) bool {
	return res.StatusCode() == fasthttp.StatusOK && len(res.Body()) == 0 && !res.IsBodyStream()
}

// Written returns the status of a response a handler wrote of its own
// into res, or 0 when it left res untouched: what [protocol.Settle] takes.
func Written(res *fasthttp.Response) int {
	if Untouched(res) {
		return 0
	}
	return res.StatusCode()
}

// TestRequest returns a copy of r ready for a framework's in-memory test
// call (fiber's app.Test): the caller's request is left alone (app.Test
// adds headers), a body of unknown length is read first and sent with its
// length, and a missing body is http.NoBody.
func TestRequest(r *http.Request) (*http.Request, error) {
	r = r.Clone(r.Context())
	if r.Body != nil && r.Body != http.NoBody && r.ContentLength < 0 {
		body, err := io.ReadAll(r.Body)
		_ = r.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("reading the request body: %w", err)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}
	if r.Body == nil {
		r.Body = http.NoBody
	}
	return r, nil
}
