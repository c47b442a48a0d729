package hertzmedian_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/app/middlewares/server/recovery"
	"github.com/cloudwego/hertz/pkg/app/server"
	"github.com/cloudwego/hertz/pkg/common/config"
	"github.com/cloudwego/hertz/pkg/common/hlog"
	"github.com/cloudwego/hertz/pkg/common/ut"
	"github.com/cloudwego/hertz/pkg/network"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/median-go/median/hertzmedian"
	"github.com/median-go/median/internal/testonly/adaptertest"
	"github.com/median-go/median/internal/testonly/hertztest"
	"github.com/median-go/median/protocol"
)

func TestMain(m *testing.M) {
	hlog.SetLevel(hlog.LevelWarn)
	goleak.VerifyTestMain(m, adaptertest.HertzGoroutines...)
}

// The shared adapter table, the parity test and the conformance suite (over
// a listener and in process through Do) run against this adapter in
// internal/testonly/adapters.

// newTestServer builds a Hertz server quiet about its routes, for Do or for
// serve.
func newTestServer(opts ...config.Option) *server.Hertz {
	return server.New(append([]config.Option{server.WithDisablePrintRoute(true), server.WithExitWaitTime(time.Second)}, opts...)...)
}

// start serves a Hertz server built with opts on a loopback port until the
// test ends, after routes registered its routes, and returns a client for
// it and its address.
func start(t *testing.T, routes func(hz *server.Hertz), opts ...config.Option) (*adaptertest.Client, string) {
	t.Helper()
	var addr string
	c := adaptertest.Start(t, func(ln net.Listener) func() {
		addr = ln.Addr().String()
		hz := newTestServer(append(opts, server.WithListener(ln))...)
		routes(hz)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = hz.Run()
		}()
		return func() { hertztest.Stop(hz, ln, done) }
	})
	return c, addr
}

// perform sends a signed POST of body to path through Hertz's own test
// helper and returns the status and body.
func perform(hz *server.Hertz, path string, body []byte) (int, string) {
	rec := ut.PerformRequest(hz.Engine, http.MethodPost, path, &ut.Body{Body: bytes.NewReader(body), Len: len(body)},
		ut.Header{Key: "Host", Value: "example.test"},
		ut.Header{Key: adaptertest.SignatureHeader, Value: adaptertest.MustKey(adaptertest.Key).Sign(adaptertest.Now, body)})
	return rec.Code, rec.Body.String()
}

// TestUnderHertzsTestHelper checks both modes under ut.PerformRequest
// itself, where a request has no connection (the net/http bridge panics
// there): the endpoint and the middleware answer, c.Set values reach the
// tool.
func TestUnderHertzsTestHelper(t *testing.T) {
	h, runs := adaptertest.NewHandler()
	hz := newTestServer()
	hz.Use(func(ctx context.Context, c *app.RequestContext) {
		c.Set(adaptertest.ValueKey, "from-c.Set")
		c.Next(ctx)
	})
	hertzmedian.Mount(hz.Group("/api"), "/median", h)
	hertzmedian.Mount(hz, "/mw", h, func(ctx context.Context, c *app.RequestContext) {
		call, ok := hertzmedian.CallFrom(ctx)
		if !assert.True(t, ok) {
			return
		}
		hertzmedian.Respond(ctx, c, adaptertest.Dispatched(call), nil)
	})

	status, body := perform(hz, "/api/median", adaptertest.ToolCall(adaptertest.ToolEcho, "ut_echo", `{"text":"ut"}`))
	assert.Equal(t, http.StatusOK, status)
	assert.JSONEq(t, `{"result":{"text":"ut","visitor":"user_7"}}`, body)
	status, body = perform(hz, "/api/median/", adaptertest.ToolCall(adaptertest.ToolValue, "ut_value", `{}`))
	assert.Equal(t, http.StatusOK, status)
	assert.JSONEq(t, `{"result":{"value":"from-c.Set"}}`, body)
	assert.Equal(t, int64(1), runs.Echo.Load())

	status, body = perform(hz, "/mw", adaptertest.ToolCall(adaptertest.ToolCustom, "ut_mw", `{"a":1}`))
	assert.Equal(t, http.StatusOK, status)
	assert.Contains(t, body, `"tool":"custom"`)
}

// TestDo checks the in-memory request function: a signed call, a body of
// unknown length over the limit, HEAD without a body, and the headers
// passed on and back.
func TestDo(t *testing.T) {
	h, runs := adaptertest.NewHandler()
	hz := newTestServer()
	hertzmedian.Mount(hz, "/median", h)
	do := hertzmedian.Do(hz.Engine)

	body := adaptertest.ToolCall(adaptertest.ToolEcho, "call_do", `{"text":"do"}`)
	res, err := do(adaptertest.NewSignedRequest(http.MethodPost, "/median", body))
	require.NoError(t, err)
	got, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, adaptertest.ContentType, res.Header.Get("Content-Type"))
	assert.JSONEq(t, `{"result":{"text":"do","visitor":"user_7"}}`, string(got))
	assert.Equal(t, int64(1), runs.Echo.Load())

	over := adaptertest.Padded(adaptertest.ToolCall(adaptertest.ToolEcho, "call_over", `{}`), adaptertest.MaxBodyBytes+1)
	req := adaptertest.NewSignedRequest(http.MethodPost, "/median", over)
	req.Body, req.ContentLength = io.NopCloser(io.MultiReader(bytes.NewReader(over))), -1
	res, err = do(req)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	assert.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode)

	res, err = do(adaptertest.NewSignedRequest(http.MethodHead, "/median/", nil))
	require.NoError(t, err)
	got, _ = io.ReadAll(res.Body)
	require.NoError(t, res.Body.Close())
	assert.Equal(t, http.StatusMethodNotAllowed, res.StatusCode)
	assert.Equal(t, adaptertest.AllowHeader, res.Header.Get("Allow"))
	assert.Empty(t, got, "a HEAD answer has no body")
}

// TestKeptCallsUnderConcurrency keeps every call (and its Body and
// RawInput) past its handler while concurrent requests over a real
// listener make Hertz reuse its request buffers, then checks each one
// against what was sent. It fails if anything the core keeps aliases
// Hertz's buffers.
func TestKeptCallsUnderConcurrency(t *testing.T) {
	const n = 64
	h, _ := adaptertest.NewHandler()
	kept := make(chan *protocol.Call, n)
	c, _ := start(t, func(hz *server.Hertz) {
		hz.POST(adaptertest.Path, hertzmedian.Middleware(h), func(ctx context.Context, c *app.RequestContext) {
			call, ok := hertzmedian.CallFrom(ctx)
			if ok {
				kept <- call // read only after every handler has returned
			}
			hertzmedian.Respond(ctx, c, "ok", nil)
		})
	})

	bodies := make(map[string][]byte, n) // by toolCallId
	inputs := make(map[string]string, n)
	for i := range n {
		id := fmt.Sprintf("call_%03d_%s", i, strings.Repeat(string(rune('a'+i%26)), i))
		inputs[id] = fmt.Sprintf(`{"text":%q,"i":%d}`, strings.Repeat(string(rune('A'+i%26)), 10+i), i)
		bodies[id] = adaptertest.ToolCall(adaptertest.ToolCustom, id, inputs[id])
	}
	var wg sync.WaitGroup
	var failed atomic.Int64
	for _, body := range bodies {
		wg.Go(func() {
			if c.Do(t, adaptertest.Signed(http.MethodPost, body)).Status != http.StatusOK {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	require.Zero(t, failed.Load(), "every call is answered 200")
	// More requests on the same connections (refused unsigned, so they never
	// reach the handler) overwrite the buffers once more.
	for i := range 8 {
		got := c.Do(t, adaptertest.Unsigned(http.MethodPost, adaptertest.ToolCall(adaptertest.ToolCustom, fmt.Sprintf("later_%d", i), `{"zzzzzzzzzzzzzzzzzzzz":"`+strings.Repeat("z", 200)+`"}`)))
		require.Equal(t, http.StatusUnauthorized, got.Status)
	}
	close(kept)

	seen := 0
	for call := range kept {
		seen++
		body, ok := bodies[call.ToolCallID]
		require.True(t, ok, "a kept call has an id that was never sent: %q", call.ToolCallID)
		assert.Equal(t, string(body), string(call.Body), "Body of %s", call.ToolCallID)
		assert.Equal(t, inputs[call.ToolCallID], string(call.RawInput), "RawInput of %s", call.ToolCallID)
		delete(bodies, call.ToolCallID)
	}
	assert.Equal(t, n, seen, "every call reached the handler once")
}

// TestStreamedBodyLeftUnreadClosesTheConnection checks that with
// server.WithStreamBody, when the core answers before reading the body to
// its end, the connection is closed after the answer, and kept when the
// body was read.
func TestStreamedBodyLeftUnreadClosesTheConnection(t *testing.T) {
	h, _ := adaptertest.NewHandler()
	_, addr := start(t, func(hz *server.Hertz) { hertzmedian.Mount(hz, adaptertest.Path, h) }, server.WithStreamBody(true))

	over := adaptertest.Padded(adaptertest.ToolCall(adaptertest.ToolEcho, "call_over", `{"text":"o"}`), adaptertest.MaxBodyBytes+100)
	ok := adaptertest.ToolCall(adaptertest.ToolEcho, "call_ok", `{"text":"o"}`)
	key := adaptertest.MustKey(adaptertest.Key)
	for _, tc := range []struct {
		name   string
		body   []byte
		sig    string
		status int
		close  bool
	}{
		{"body over the limit", over, key.Sign(adaptertest.Now, over), http.StatusRequestEntityTooLarge, true},
		{"stale signature, body never read", over, key.Sign(adaptertest.Now.Add(-time.Hour), over), http.StatusUnauthorized, true},
		{"body read to the end", ok, key.Sign(adaptertest.Now, ok), http.StatusOK, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The server may answer and close while the body is still being
			// written, so a read that TCP resets before the answer arrives
			// is tried again: a race of the transport, not of the server.
			for attempt := 0; ; attempt++ {
				res, err := sendChunked(addr, tc.sig, tc.body)
				if err != nil && attempt < 20 && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
					continue
				}
				require.NoError(t, err)
				assert.Equal(t, tc.status, res.StatusCode)
				assert.Equal(t, adaptertest.ContentType, res.Header.Get("Content-Type"))
				assert.Equal(t, tc.close, res.Close, "Connection: close on the answer")
				return
			}
		})
	}
}

// sendChunked writes one chunked, signed POST on a new connection while it
// reads the answer, and returns the answer (its body read).
func sendChunked(addr, sig string, body []byte) (*http.Response, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+adaptertest.Path, io.MultiReader(bytes.NewReader(body)))
	if err != nil {
		return nil, err
	}
	req.ContentLength = -1 // chunked
	req.Header.Set(adaptertest.SignatureHeader, sig)
	go func() { _ = req.Write(conn) }()
	res, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err == nil {
		_, err = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	return res, err
}

// TestToolSeesTheHandlersContext checks that the tool's ctx is the ctx an
// earlier middleware passed on with c.Next (its values and deadline),
// falling back to c.Set, and is cancelled with it; and that the fallback
// ends with the request.
func TestToolSeesTheHandlersContext(t *testing.T) {
	type userKey struct{}
	h, runs := adaptertest.NewHandler()
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), userKey{}, "from-ctx"), time.Hour)
	defer cancel()
	hz := newTestServer()
	hz.Use(func(_ context.Context, c *app.RequestContext) {
		c.Set(adaptertest.ValueKey, "from-c.Set")
		c.Next(ctx)
	})
	hertzmedian.Mount(hz, adaptertest.Path, h)

	status, body := perform(hz, adaptertest.Path, adaptertest.ToolCall(adaptertest.ToolValue, "call_ctx", `{}`))
	assert.Equal(t, http.StatusOK, status)
	assert.JSONEq(t, `{"result":{"value":"from-c.Set"}}`, body)

	ctxs := runs.Contexts()
	require.Len(t, ctxs, 1)
	assert.Equal(t, "from-ctx", ctxs[0].Value(userKey{}))
	assert.Nil(t, ctxs[0].Value(adaptertest.ValueKey), "c.Set is read only while the request is served")
	assert.Nil(t, ctxs[0].Value(42), "a key that is not a string finds nothing in c.Set")
	want, _ := ctx.Deadline()
	deadline, ok := ctxs[0].Deadline()
	assert.True(t, ok)
	assert.Equal(t, want, deadline)
	cancel()
	assert.ErrorIs(t, ctxs[0].Err(), context.Canceled, "the tool's ctx is cancelled with the handler's")
}

// TestPanicAbortsTheChain checks that after a handler behind Middleware
// panics, on a route of your own behind Hertz's recovery middleware, the
// core answers and no handler after it runs.
func TestPanicAbortsTheChain(t *testing.T) {
	h, _ := adaptertest.NewHandler()
	hz := newTestServer()
	hz.Use(recovery.Recovery())
	var after atomic.Int64
	hz.POST("/median", hertzmedian.Middleware(h),
		func(context.Context, *app.RequestContext) { panic("boom") },
		func(context.Context, *app.RequestContext) { after.Add(1) })
	status, body := perform(hz, "/median", adaptertest.ToolCall(adaptertest.ToolCustom, "call_panic", `{}`))
	assert.Equal(t, http.StatusOK, status)
	assert.Contains(t, body, `"code":"execution_failed"`)
	assert.Zero(t, after.Load(), "no handler runs after the one that panicked")
}

// TestRespondEndsAChainOfYourOwn checks that Respond aborts Hertz's chain,
// so the handler after it never runs on a route of your own.
func TestRespondEndsAChainOfYourOwn(t *testing.T) {
	h, _ := adaptertest.NewHandler()
	hz := newTestServer()
	var after atomic.Int64
	hz.POST("/median", hertzmedian.Middleware(h),
		func(ctx context.Context, c *app.RequestContext) { hertzmedian.Respond(ctx, c, "first", nil) },
		func(context.Context, *app.RequestContext) { after.Add(1) })
	status, body := perform(hz, "/median", adaptertest.ToolCall(adaptertest.ToolCustom, "call_respond", `{}`))
	assert.Equal(t, http.StatusOK, status)
	assert.JSONEq(t, `{"result":"first"}`, body)
	assert.Zero(t, after.Load())
}

// TestHijackEndsTheChain checks that a handler that hijacks the
// connection answers: Hertz sends the response it set, no handler after it
// runs, and the observer reports that answer as the handler's own.
func TestHijackEndsTheChain(t *testing.T) {
	events := make(chan protocol.Event, 1)
	h, _ := adaptertest.NewHandler(func(cfg *protocol.Config) {
		cfg.Observer = func(_ context.Context, ev protocol.Event) { events <- ev }
	})
	var after atomic.Int64
	c, _ := start(t, func(hz *server.Hertz) {
		hertzmedian.Mount(hz, adaptertest.Path, h, func(_ context.Context, c *app.RequestContext) {
			c.SetStatusCode(http.StatusAccepted)
			c.Hijack(func(conn network.Conn) {})
		}, func(context.Context, *app.RequestContext) { after.Add(1) })
	})
	got := c.Do(t, adaptertest.Signed(http.MethodPost, adaptertest.ToolCall(adaptertest.ToolCustom, "call_hijack", `{}`)))
	assert.Equal(t, http.StatusAccepted, got.Status)
	assert.Empty(t, got.Body)
	assert.Zero(t, after.Load())
	select {
	case ev := <-events:
		assert.True(t, ev.OffContract)
		assert.Equal(t, http.StatusAccepted, ev.Status)
	case <-time.After(5 * time.Second):
		t.Fatal("the observer got no event")
	}
}
