// Package httpwire is how the core's answers meet net/http, written once
// for protocol.Handler.ServeHTTP and for the adapters that hand a net/http
// request to the core themselves (internal/adapt/httpio): the one header the
// core reads and how an answer is written.
//
// It is one of the adapters' run-time helpers (internal/adapt), imported by
// protocol, httpio and fasthttpio; a helper here imports of this module only
// protocol and other helpers (internal/testonly/surface checks), and Go's
// internal rule keeps it from code outside the module.
package httpwire

import "net/http"

// The wire's names and values, for net/http here and for the adapters of
// frameworks that are not built on it (internal/adapt/fasthttpio).
const (
	SignatureHeader = "Median-Signature" // the header that carries Median's signature, canonical
	ContentType     = "application/json" // the Content-Type of every answer
	Allow           = "GET, POST"        // the Allow header's value on a 405 answer
)

// The header values every answer shares, never written to.
var (
	contentTypeValue = []string{ContentType}
	allowValue       = []string{Allow}
)

// Signature returns the median-signature header of r, "" when absent.
func Signature(r *http.Request) string {
	if v := r.Header[SignatureHeader]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Write writes an answer: Content-Type application/json, the Allow header
// when allow is set, the status and the body. A status of 0 writes
// nothing (a second answer to one call).
func Write(w http.ResponseWriter, status int, body []byte, allow bool) {
	if status == 0 {
		return
	}
	hdr := w.Header()
	hdr["Content-Type"] = contentTypeValue
	if allow {
		hdr["Allow"] = allowValue
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
