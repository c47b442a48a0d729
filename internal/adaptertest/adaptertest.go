// Package adaptertest is the test kit shared by the four framework adapters
// (ginmedian, echomedian, chimedian, fibermedian): one table of cases, run
// over a real loopback connection against each adapter by [Run], and the
// [Adapter] descriptions the parity test and benchmarks reuse.
//
// An adapter only moves bytes between its framework and protocol.Handler,
// so every case here asks one question: does the answer that reaches the
// client match the contract (docs/PROTOCOL.md), and does it match what net/http
// answers ([NetHTTP])?
package adaptertest

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/median-go/median/protocol"
)

// Path is where every [Adapter] mounts the endpoint: the route "/median"
// inside a group (or sub-router) at "/api", so that mounting on a group is
// exercised too.
const Path = "/api/median"

// Seen is what the handler behind an adapter's middleware found on its
// request.
type Seen struct {
	Call        *protocol.Call   // the adapter's CallFrom; nil when it found none
	ContextCall *protocol.Call   // protocol.CallFrom on the request's context.Context
	Visitor     protocol.Visitor // the adapter's VisitorFrom
	VisitorOK   bool
	Body        []byte // the whole request body, as the handler read it
	BodyErr     error  // the error reading it, if any
}

// Answer is what the handler behind an adapter's middleware does with what
// it found on the request; it returns what the adapter's Respond answers.
type Answer func(Seen) (any, error)

// Starter serves an app on ln and returns a function that stops it and
// waits until it has stopped.
type Starter func(ln net.Listener) (stop func())

// Adapter tells the kit how one framework mounts a protocol.Handler.
type Adapter struct {
	Name string
	// Endpoint serves h with the adapter's Mount(r, route, h) at Path, on a
	// group or sub-router.
	Endpoint func(h *protocol.Handler) Starter
	// Middleware serves h with the adapter's Mount(r, route, h, handler) at
	// Path, where handler calls answer and writes its values with the
	// adapter's Respond; the framework's standard recovery middleware runs
	// outside.
	Middleware func(h *protocol.Handler, answer Answer) Starter
	// Bare serves a handler at Path that calls answer and the adapter's
	// Respond with no middleware in front of it.
	Bare func(answer Answer) Starter
	// Values serves h with the adapter's Mount at Path, behind a middleware
	// that stores the request's X-Request-Id header under ValueKey in the
	// framework's own store (gin's c.Set, echo's c.Set, fiber's c.Locals,
	// the request's context for net/http and chi).
	Values func(h *protocol.Handler) Starter
	// ValuesOutliveRequest is true when the framework's store is the
	// request's context itself (net/http, chi): a tool's ctx then still holds
	// the value after the request. Stores the framework reuses are read only
	// while the request is served.
	ValuesOutliveRequest bool
	// ExtraMethods are the methods beyond the nine standard ones (GET, HEAD,
	// POST, PUT, PATCH, DELETE, CONNECT, OPTIONS, TRACE) that reach the
	// Handler through Mount and get the contract's 405.
	ExtraMethods []string
	// Foreign is a method the framework does not route to Mount's routes,
	// and ForeignStatus the status the framework answers it with itself, as
	// each adapter documents; "" when every method reaches the Handler.
	Foreign       string
	ForeignStatus int
}

// ServeHTTP returns a Starter that serves handler with net/http.
func ServeHTTP(handler http.Handler) Starter {
	return func(ln net.Listener) func() {
		srv := &http.Server{Handler: handler}
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = srv.Serve(ln)
		}()
		return func() {
			_ = srv.Close()
			<-done
		}
	}
}

// Reply is an answer as the client received it.
type Reply struct {
	Status      int
	ContentType string
	Allow       string
	Body        []byte
}

// Client sends requests to one started app.
type Client struct {
	base string
	http *http.Client
}

// Start serves the app on a loopback port until the test ends.
func Start(t testing.TB, s Starter) *Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	stop := s(ln)
	transport := &http.Transport{}
	t.Cleanup(func() {
		transport.CloseIdleConnections()
		stop()
	})
	return &Client{base: "http://" + ln.Addr().String(), http: &http.Client{Transport: transport}}
}

// Do sends r to the app and reads the whole answer.
func (c *Client) Do(t testing.TB, r Request) Reply {
	t.Helper()
	var body io.Reader
	if r.Body != nil {
		body = strings.NewReader(string(r.Body))
		if r.Chunked {
			body = io.MultiReader(body) // hides the length: sent chunked
		}
	}
	path := Path
	if r.Path != "" {
		path = r.Path
	}
	if r.Query != "" {
		path += "?" + r.Query
	}
	req, err := http.NewRequest(r.Method, c.base+path, body)
	require.NoError(t, err)
	if r.Chunked {
		req.ContentLength = -1
	}
	if r.Signature != nil {
		req.Header.Set(SignatureHeader, *r.Signature)
	}
	if r.RequestID != "" {
		req.Header.Set(RequestIDHeader, r.RequestID)
	}
	res, err := c.http.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	got, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return Reply{Status: res.StatusCode, ContentType: res.Header.Get("Content-Type"), Allow: res.Header.Get("Allow"), Body: got}
}

// errNoCall is what the kit's Answer returns when the adapter gave the
// handler no call.
var errNoCall = errors.New("the handler found no call")
