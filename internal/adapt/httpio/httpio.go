// Package httpio hands a net/http request to the core under a context the
// adapter made (gin's and echo's, which fall back to the framework's
// per-request store) and writes the answer, as protocol.Handler.ServeHTTP
// does for the request's own context. It spares the copy of the whole
// request that r.WithContext makes on every call.
//
// It is one of the adapters' run-time helpers (internal/adapt), imported by
// ginmedian and echomedian (v4 and v5); a helper here imports of this module
// only protocol and other helpers (internal/testonly/surface checks), and
// Go's internal rule keeps it from code outside the module.
package httpio

import (
	"context"
	"net/http"

	"github.com/median-go/median/internal/adapt/httpwire"

	"github.com/median-go/median/protocol"
)

// Serve answers r through h under ctx and writes the answer to w.
func Serve(ctx context.Context, h *protocol.Handler, w http.ResponseWriter, r *http.Request) {
	Write(w, h.Serve(ctx, Request(r)))
}

// Request is the core's view of r; the body is left unread.
func Request(r *http.Request) protocol.Request {
	return protocol.Request{Method: r.Method, Signature: httpwire.Signature(r), Body: r.Body, ContentLength: r.ContentLength}
}

// Write writes resp to w as the core does; the zero Response writes
// nothing.
func Write(w http.ResponseWriter, resp protocol.Response) {
	httpwire.Write(w, resp.Status, resp.Body, resp.Allow != "")
}
