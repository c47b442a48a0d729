// Package mount holds the rules every adapter's Mount follows, so that
// they are written once: which paths an endpoint is registered on
// ([Paths]) and how a chain of net/http handlers runs ([Chain]). The
// handler-chain rule itself is stated in protocol's package doc
// ("Handler chains"); the adapters of other frameworks apply it to their
// own handler types.
//
// It is one of the adapters' run-time helpers (internal/adapt), imported by
// protocol and every adapter; a helper here imports of this module only
// protocol and other helpers (internal/testonly/surface checks), and Go's
// internal rule keeps it from code outside the module.
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
// handler is returned as it is. Behind protocol's Middleware the writer is
// already a [Tracker], which the chain reads instead of wrapping it again.
func Chain(handlers []http.Handler) http.Handler {
	if len(handlers) == 1 {
		return handlers[0]
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw, ok := w.(*Tracker)
		if !ok {
			tw = &Tracker{ResponseWriter: w}
		}
		for _, next := range handlers {
			next.ServeHTTP(tw, r)
			if tw.Status() != 0 {
				return
			}
		}
	})
}

// Tracker is a net/http writer that records whether, and with which
// status, the handlers it is passed to answered: a written status or body,
// a flush (which sends the status, 200 when none was set) or a hijack (the
// handler answers on the connection itself; 101 Switching Protocols stands
// for that answer). An informational status (103 Early Hints; 1xx but 101)
// is not an answer: the answer is still to come.
type Tracker struct {
	http.ResponseWriter
	status int // 0 until the handler answers
}

// Status is the status of the answer written or begun, 0 for none yet.
func (t *Tracker) Status() int { return t.status }

// WriteHeader records the status, unless it is informational.
func (t *Tracker) WriteHeader(code int) {
	if t.status == 0 && !informational(code) {
		t.status = code
	}
	t.ResponseWriter.WriteHeader(code)
}

// Write records an answer with status 200 when none was set.
func (t *Tracker) Write(b []byte) (int, error) {
	if t.status == 0 {
		t.status = http.StatusOK
	}
	return t.ResponseWriter.Write(b)
}

// FlushError flushes the writer underneath; a flush sends the status, so
// it answers.
func (t *Tracker) FlushError() error {
	if t.status == 0 {
		t.status = http.StatusOK
	}
	return http.NewResponseController(t.ResponseWriter).Flush()
}

// Flush is FlushError for handlers that assert http.Flusher.
func (t *Tracker) Flush() { _ = t.FlushError() }

// Hijack hands the connection to the handler, which answers on it.
func (t *Tracker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(t.ResponseWriter).Hijack()
	if err == nil && t.status == 0 {
		t.status = http.StatusSwitchingProtocols
	}
	return conn, rw, err
}

// Unwrap gives http.ResponseController the writer underneath.
func (t *Tracker) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// Committer is the writer an adapter puts under a framework's own response
// writer when the framework counts only a write as committing the response
// (echo's Committed): a flush sends the status and a hijack takes the
// connection, so both answer, and they set *Committed too, which ends the
// chain.
type Committer struct {
	http.ResponseWriter
	Committed *bool
}

// FlushError flushes the writer underneath and commits the response.
func (w Committer) FlushError() error {
	err := http.NewResponseController(w.ResponseWriter).Flush()
	if err == nil {
		*w.Committed = true
	}
	return err
}

// Flush is FlushError for handlers that assert http.Flusher on the writer.
func (w Committer) Flush() { _ = w.FlushError() }

// Hijack hands the connection to the handler and commits the response.
func (w Committer) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		*w.Committed = true
	}
	return conn, rw, err
}

// Unwrap gives http.ResponseController the writer underneath.
func (w Committer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// informational reports whether code is a 1xx status net/http sends
// ahead of the answer (all but 101 Switching Protocols).
func informational(code int) bool {
	return code >= 100 && code < 200 && code != http.StatusSwitchingProtocols
}
