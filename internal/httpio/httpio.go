// Package httpio hands a net/http request to the core under a context the
// adapter made (gin's and echo's, which fall back to the framework's
// per-request store) and writes the answer, as protocol.Handler.ServeHTTP
// does for the request's own context. It spares the copy of the whole
// request that r.WithContext makes on every call.
package httpio

import (
	"context"
	"net/http"

	"github.com/median-go/median/protocol"
)

// The header values the core writes, shared by every answer.
var (
	contentTypeValue = []string{"application/json"}
	allowValue       = []string{"GET, POST"}
)

// Serve answers r through h under ctx and writes the answer to w.
func Serve(ctx context.Context, h *protocol.Handler, w http.ResponseWriter, r *http.Request) {
	Write(w, h.Serve(ctx, Request(r)))
}

// Request is the core's view of r; the body is left unread.
func Request(r *http.Request) protocol.Request {
	sig := ""
	if v := r.Header["Median-Signature"]; len(v) > 0 {
		sig = v[0]
	}
	return protocol.Request{Method: r.Method, Signature: sig, Body: r.Body, ContentLength: r.ContentLength}
}

// Write writes resp to w as the core does; the zero Response writes
// nothing.
func Write(w http.ResponseWriter, resp protocol.Response) {
	if resp.Status == 0 {
		return
	}
	hdr := w.Header()
	hdr["Content-Type"] = contentTypeValue
	if resp.Allow != "" {
		hdr["Allow"] = allowValue
	}
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
}
