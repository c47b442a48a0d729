// Package adaptertest is the test kit of the framework adapters
// (ginmedian, echomedian, echomedian/v5, chimedian, fibermedian,
// fibermedian/v3, hertzmedian). It imports no framework, so an adapter's own tests can
// use it and still load only their own framework:
//
//   - the fixture: a protocol.Handler with known tools on a fixed clock
//     ([NewHandler]) and the calls it accepts ([ToolCall], [Signed], ...);
//   - loopback helpers: [Start] serves an app on 127.0.0.1 and returns a
//     [Client] for it, from a [Starter] ([ServeHTTP], [ServeListener]);
//   - the shared adapter table: [Run] checks one [Adapter] description for
//     what the conformance suite cannot see from outside, such as the values
//     the adapter hands to the handler behind its middleware ([Seen]).
//
// The contract itself (signatures, timestamps, bodies, methods, the
// manifest, replays, ...) is checked by the conformance suite, which
// internal/testonly/adapters runs against every adapter; the Adapter descriptions of
// every framework live there too, as they name every framework.
//
// It is a harness of the module's own tests (internal/testonly): only test
// files and other harnesses import it, never shipped code
// (internal/testonly/surface checks).
package adaptertest

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/median-go/median/protocol"
)

// Path is where every [Adapter] mounts the endpoint: the route "/median"
// inside a group (or sub-router) at "/api", so that mounting on a group is
// exercised too.
const Path = "/api/median"

// Seen is what the handler behind an adapter's middleware found on its
// request.
type Seen struct {
	Call        *protocol.Call // the adapter's CallFrom; nil when it found none
	ContextCall *protocol.Call // protocol.CallFrom on the request's context.Context
	Body        []byte         // the whole request body, as the handler read it
	BodyErr     error          // the error reading it, if any
	// Parts of the request Median does not sign, read the framework's way:
	Target string // the request target, path and query (net/http's RequestURI, fiber's c.OriginalURL())
	Tenant string // the query parameter "tenant" (r.FormValue, c.Query, c.QueryParam)
	User   string // the header X-User
}

// Answer is what the handler behind an adapter's middleware does with what
// it found on the request; it returns what the adapter's Respond answers.
type Answer func(Seen) (any, error)

// Starter serves an app on ln and returns a function that stops it and
// waits until it has stopped.
type Starter func(ln net.Listener) (stop func())

// Adapter tells the kit how one framework mounts a protocol.Handler. The
// descriptions of every adapter are in internal/testonly/adapters.
type Adapter struct {
	Name string
	// Endpoint serves h with the adapter's Mount(r, route, h) at Path, on a
	// group or sub-router, beside another route as an app has. The
	// conformance suite runs against it too.
	Endpoint func(h *protocol.Handler) Starter
	// Middleware serves h with the adapter's Mount(r, route, h, handler) at
	// Path, where handler calls answer and writes its values with the
	// adapter's Respond; the framework's standard recovery middleware runs
	// outside.
	Middleware func(h *protocol.Handler, answer Answer) Starter
	// Chain serves h with the adapter's Mount(r, route, h, handlers...) at
	// Path, one handler per step, behind the framework's recovery
	// middleware. Each handler calls ran with its index when it starts.
	Chain func(h *protocol.Handler, steps []Step, ran func(i int)) Starter
	// Abort is what the framework's abort is, as the adapter documents it
	// ("c.Abort()"), and AbortAnswer the answer the core gives a call
	// ended that way; Abort is "" when the framework has none (net/http,
	// chi), and the Abort step is then not run.
	Abort       string
	AbortAnswer Want
	// Flush is how a handler flushes the response on the framework
	// ("http.NewResponseController(w).Flush()"), for the Flush step; ""
	// when its handlers have no flush (fiber), and the step is then not
	// run.
	Flush string
	// Hijack is how a handler takes the connection on the framework
	// ("http.NewResponseController(w).Hijack()"), for the Hijack step; ""
	// when its handlers cannot, and the step is then not run.
	Hijack string
	// Bare serves a handler at Path that calls answer and the adapter's
	// Respond with no middleware in front of it.
	Bare func(answer Answer) Starter
	// Values serves h with the adapter's Mount at Path, behind a middleware
	// that stores the request's X-Request-Id header under ValueKey in the
	// framework's own store (gin's, echo's and Hertz's c.Set, fiber's
	// c.Locals, the request's context for net/http and chi).
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
	// ReservesDeclaredBody says why, when the framework itself reserves a
	// request's declared body before any handler runs (fiber without
	// StreamRequestBody): what the keyless-client case measures is then the
	// framework's, and the case is skipped with this reason. "" runs it.
	ReservesDeclaredBody string
	// NoMiddleware says why the adapter has no middleware mode (Lambda's:
	// the function is the endpoint); Middleware, Chain and Bare are then
	// nil, and the table's steps that need them are skipped with this
	// reason. "" for an adapter with one. An adapter without Values skips
	// the steps that need it too.
	NoMiddleware string
	// LastHeaderLine says why the mount passes on only the last line of a
	// header sent as several (an ALB target group without multi-value
	// headers, as AWS builds it): the cases that send the median-signature
	// header as several lines (Request.Signatures) are then skipped with
	// this reason, the conformance suite's too. "" for every other mount.
	LastHeaderLine string
	// MaxBodyBytes is the Handler's body limit the mount needs when the
	// platform's own limit is below the contract's default of 1 MiB (an
	// ALB's 1 MB): the Handler behind the mount must be configured below
	// it, as its docs tell users, and the conformance run builds it with
	// this limit. 0 for every other mount.
	MaxBodyBytes int64
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

// ServeListener returns a Starter for a server that is not an
// http.Handler, such as a fiber app on fasthttp: serve runs it on the
// listener until shutdown stops it. For fiber v2,
// ServeListener(app.Listener, app.Shutdown).
func ServeListener(serve func(net.Listener) error, shutdown func() error) Starter {
	return func(ln net.Listener) func() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = serve(ln)
		}()
		return func() {
			_ = shutdown()
			// fasthttp's Shutdown misses a listener it has not started
			// serving yet (an app stopped before any request): closing it
			// ends Serve.
			_ = ln.Close()
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
	base string // "http://" + host
	host string // the listener's address
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
	host := ln.Addr().String()
	return &Client{base: "http://" + host, host: host, http: &http.Client{Transport: transport}}
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
	for _, v := range r.Signatures {
		req.Header.Add(SignatureHeader, v)
	}
	if r.RequestID != "" {
		req.Header.Set(RequestIDHeader, r.RequestID)
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	res, err := c.http.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	got, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return Reply{Status: res.StatusCode, ContentType: res.Header.Get("Content-Type"), Allow: res.Header.Get("Allow"), Body: got}
}

// Forward sends req to the app whatever host its URL names, as a reverse
// proxy would, and returns the answer (its body for the caller to close).
// It is a func(*http.Request) (*http.Response, error): the suite can address the app as
// "http://example.test/api/median" while each app runs on its own port.
func (c *Client) Forward(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host = "http", c.host
	out.Host = ""
	out.RequestURI = ""
	return c.http.Do(out)
}

// errNoCall is what the kit's Answer returns when the adapter gave the
// handler no call.
var errNoCall = errors.New("the handler found no call")

// FasthttpGoroutines are the goroutines fasthttp leaves behind by design,
// for goleak: the server-date ticker lives for the process, and a stopped
// worker pool's cleaner notices the stop only at its next 10-second tick.
// Neither belongs to an adapter. Named as strings, they need no fasthttp.
var FasthttpGoroutines = []goleak.Option{
	goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
	goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
}

// HertzGoroutines are the goroutines Hertz leaves behind by design, for
// goleak: its default transport's pollers (netpoll) and the server-date
// ticker live for the process. Neither belongs to an adapter.
var HertzGoroutines = []goleak.Option{
	goleak.IgnoreAnyFunction("github.com/cloudwego/netpoll.(*defaultPoll).Wait"),
	goleak.IgnoreAnyFunction("github.com/cloudwego/hertz/pkg/protocol.UpdateServerDate.func1"),
}
