// Package mount holds the rules every adapter's Mount follows, so that
// they are written once: which paths an endpoint is registered on
// ([Paths]) and how a chain of net/http handlers runs ([Chain]). The
// handler-chain rule itself is stated in protocol's package doc
// ("Handler chains"); the adapters of other frameworks apply it to their
// own handler types.
package mount

import (
	"bufio"
	"net"
	"net/http"
	"strings"
)

// Paths returns the paths Mount registers for path, relative to the
// router or group it is given: the path without a trailing slash and with
// one ("/median" and "/median/"). "" and "/" both mean the root of that
// router or group, which is registered once, as "/". A missing leading
// slash is added and repeated slashes at either end are dropped, so
// "median", "/median" and "/median/" mean the same.
func Paths(path string) []string {
	base := "/" + strings.Trim(path, "/")
	if base == "/" {
		return []string{"/"}
	}
	return []string{base, base + "/"}
}

// Chain runs net/http handlers in order until one answers: it ends the
// chain when a handler has written a status or a body (through
// protocol.Respond or directly), flushed the response (which sends its
// status) or hijacked the connection; the handlers after it do not run. One
// handler is returned as it is.
func Chain(handlers []http.Handler) http.Handler {
	if len(handlers) == 1 {
		return handlers[0]
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &tracker{ResponseWriter: w}
		for _, next := range handlers {
			next.ServeHTTP(tw, r)
			if tw.wrote {
				return
			}
		}
	})
}

// tracker records whether a handler of a chain wrote a response.
type tracker struct {
	http.ResponseWriter
	wrote bool
}

// WriteHeader records an answer; an informational status (103 Early
// Hints; 1xx but 101) is not one, the answer is still to come.
func (t *tracker) WriteHeader(code int) {
	if code < 100 || code >= 200 || code == http.StatusSwitchingProtocols {
		t.wrote = true
	}
	t.ResponseWriter.WriteHeader(code)
}

func (t *tracker) Write(b []byte) (int, error) {
	t.wrote = true
	return t.ResponseWriter.Write(b)
}

// FlushError flushes the writer underneath; a flush sends the status, so
// it answers.
func (t *tracker) FlushError() error {
	t.wrote = true
	return http.NewResponseController(t.ResponseWriter).Flush()
}

// Flush is FlushError for handlers that assert http.Flusher.
func (t *tracker) Flush() { _ = t.FlushError() }

// Hijack hands the connection to the handler, which answers on it.
func (t *tracker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(t.ResponseWriter).Hijack()
	if err == nil {
		t.wrote = true
	}
	return conn, rw, err
}

// Unwrap gives http.ResponseController the writer underneath.
func (t *tracker) Unwrap() http.ResponseWriter { return t.ResponseWriter }
