// Package httpwire is how the core's answers meet net/http, written once
// for protocol.Handler.ServeHTTP and for the adapters that hand a net/http
// request to the core themselves (internal/adapt/httpio): the headers the
// core reads and how an answer is written. The frameworks not built on
// net/http (fasthttp, Hertz) read the same headers through RawHeaders and
// hand a streamed body over as a BodyStream.
//
// It is one of the adapters' run-time helpers (internal/adapt), imported by
// protocol, httpio, fasthttpio and hertzmedian; a helper here imports of this module only
// protocol and other helpers (internal/testonly/surface checks), and Go's
// internal rule keeps it from code outside the module.
package httpwire

import (
	"bytes"
	"io"
	"net/http"
	"strings"
)

// The wire's names and values, for net/http here and for the adapters of
// frameworks that are not built on it (internal/adapt/fasthttpio).
const (
	SignatureHeader = "Median-Signature" // the header that carries Median's signature, canonical
	// CheckHeader marks a request as a check's, not Median's: a signed
	// request carries its mark, another one a check token (PROTOCOL.md §10).
	CheckHeader = "Median-Check"
	// CheckTokenHeader carries the check token the core gives a check's
	// signed request, for the check's unsigned and stale probes.
	CheckTokenHeader = "Median-Check-Token"
	ContentType      = "application/json" // the Content-Type of every answer
	Allow            = "GET, POST"        // the Allow header's value on a 405 answer
)

// The header values every answer shares, never written to.
var (
	contentTypeValue = []string{ContentType}
	allowValue       = []string{Allow}
)

// Signature returns the median-signature header of r, "" when absent. A
// header sent more than once (a proxy that splits values on commas) is
// joined with "," in the order received (PROTOCOL.md §1.1, RFC 9110, section 5.3);
// one value is returned as it is.
func Signature(r *http.Request) string {
	return strings.Join(r.Header[SignatureHeader], ",")
}

// RawHeaders returns the median-signature and Median-Check headers of a
// request whose framework holds headers as bytes it reuses (fasthttp,
// Hertz), as strings of their own: the signature's values joined with ","
// in the order received (PROTOCOL.md §1.1), the check's first value.
// peekAll is the framework's PeekAll, which matches names in their
// canonical spelling; when it finds no signature, the server may keep
// header names as sent (fasthttp's and Hertz's DisableNormalizing, which
// fiber and Hertz servers offer) while Median sends them in lower case, so
// both are read again from visit, the framework's walk over its headers,
// matching names in any case.
func RawHeaders(peekAll func(name string) [][]byte, visit func(func(k, v []byte))) (signature, check string) {
	signature = joined(peekAll(SignatureHeader))
	if v := peekAll(CheckHeader); len(v) > 0 {
		check = string(v[0])
	}
	if signature != "" {
		return signature, check
	}
	var sig, chk [][]byte
	visit(func(k, v []byte) {
		switch {
		case len(k) == len(SignatureHeader) && strings.EqualFold(string(k), SignatureHeader):
			sig = append(sig, v)
		case len(k) == len(CheckHeader) && strings.EqualFold(string(k), CheckHeader):
			chk = append(chk, v)
		}
	})
	if check == "" && len(chk) > 0 {
		check = string(chk[0])
	}
	return joined(sig), check
}

// joined is values joined with "," as a string of its own, "" when there
// are none.
func joined(values [][]byte) string {
	switch len(values) {
	case 0:
		return ""
	case 1:
		return string(values[0])
	}
	return string(bytes.Join(values, comma))
}

// comma joins a header's values.
var comma = []byte{','}

// BodyStream is a streamed request body (fasthttp's and Hertz's streamed
// bodies, which the core reads up to its limit) that remembers whether it
// was read to the end.
type BodyStream struct {
	r   io.Reader
	eof bool
}

// NewBodyStream returns the stream of the body r.
func NewBodyStream(r io.Reader) *BodyStream { return &BodyStream{r: r} }

// Read implements io.Reader.
func (s *BodyStream) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err == io.EOF {
		s.eof = true
	}
	return n, err
}

// CloseIfUnread closes the connection after the answer, through conn (the
// request's fasthttp.RequestCtx or Hertz app.RequestContext), when the
// core left part of the body unread (a refusal before the body, a body
// over the limit): the server would otherwise parse the rest as the next
// request on the connection and answer it with its own 400. A nil stream
// (the body was not streamed) does nothing.
func (s *BodyStream) CloseIfUnread(conn interface{ SetConnectionClose() }) {
	if s != nil && !s.eof {
		conn.SetConnectionClose()
	}
}

// Check returns the Median-Check header of r, "" when absent.
func Check(r *http.Request) string {
	if v := r.Header[CheckHeader]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Write writes an answer: Content-Type application/json, the Allow header
// when allow is set, the Median-Check-Token header when checkToken is not
// empty, the status and the body. A status of 0 writes nothing (a second
// answer to one call).
func Write(w http.ResponseWriter, status int, body []byte, allow bool, checkToken string) {
	if status == 0 {
		return
	}
	hdr := w.Header()
	hdr["Content-Type"] = contentTypeValue
	if allow {
		hdr["Allow"] = allowValue
	}
	if checkToken != "" {
		hdr[CheckTokenHeader] = []string{checkToken}
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
