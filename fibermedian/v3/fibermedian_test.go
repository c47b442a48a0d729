package fibermedian_test

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
	"syscall"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	fiberrecover "github.com/gofiber/fiber/v3/middleware/recover"
	"github.com/gofiber/fiber/v3/middleware/requestid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	fibermedian "github.com/median-go/median/fibermedian/v3"
	"github.com/median-go/median/internal/testonly/adaptertest"
	"github.com/median-go/median/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, adaptertest.FasthttpGoroutines...) }

// The shared adapter table and the conformance suite run against this
// adapter in internal/testonly/adapters, also on apps that stream request bodies
// and on apps with extra RequestMethods.

// TestHeadOnGetRoutes checks that HEAD, which fiber v3 serves with a
// path's GET handlers, gets the contract's 405 when the app registers the
// Median path for GET and POST only, in both forms.
func TestHeadOnGetRoutes(t *testing.T) {
	h, _ := adaptertest.NewHandler()
	app := fiber.New()
	app.Get("/endpoint", fibermedian.New(h))
	app.Post("/endpoint", fibermedian.New(h))
	reached := false
	answer := func(c fiber.Ctx) error { reached = true; return fibermedian.Respond(c, "ok", nil) }
	app.Get("/middleware", fibermedian.Middleware(h), answer)
	app.Post("/middleware", fibermedian.Middleware(h), answer)

	for _, path := range []string{"/endpoint", "/middleware"} {
		res := do(t, app, adaptertest.NewSignedRequest(http.MethodHead, path, nil))
		assert.Equal(t, http.StatusMethodNotAllowed, res.status, path)
		assert.Equal(t, "GET, POST", res.allow, path)
		assert.Equal(t, adaptertest.ContentType, res.contentType, path)
		assert.Empty(t, res.body, "%s: a HEAD answer has no body", path)
	}
	assert.False(t, reached, "HEAD reached the handler behind the middleware")
}

// TestErrorHandlerNeverRuns checks that what a handler behind the
// middleware returns or panics with is answered by the core, and that
// fiber's ErrorHandler (here one that would answer 418) never runs on the
// Median path, even with recover.New outside, which turns a panic into an
// error for it. A repeat gets the kept answer.
func TestErrorHandlerNeverRuns(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler fiber.Handler
		want    string
	}{
		{"fiber error", func(fiber.Ctx) error { return fiber.ErrForbidden },
			""}, // not meant for the agent: the tool's name and a reference
		{"panic", func(fiber.Ctx) error { panic("boom") },
			`{"error":{"code":"execution_failed","message":"tool custom failed unexpectedly"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := adaptertest.NewHandler()
			errorHandlerRan := false
			app := fiber.New(fiber.Config{ErrorHandler: func(c fiber.Ctx, _ error) error {
				errorHandlerRan = true
				return c.SendStatus(http.StatusTeapot)
			}})
			app.Use(fiberrecover.New())
			runs := 0
			fibermedian.Mount(app, "/median", h, func(c fiber.Ctx) error {
				runs++
				return tc.handler(c)
			})
			body := adaptertest.ToolCall(adaptertest.ToolCustom, "call_error", `{}`)
			var first string
			for i := range 2 {
				res := do(t, app, adaptertest.NewSignedRequest(http.MethodPost, "/median", body))
				assert.Equal(t, http.StatusOK, res.status)
				if tc.want == "" {
					adaptertest.RequireHiddenFailure(t, adaptertest.ToolCustom, res.body)
				} else {
					assert.JSONEq(t, tc.want, string(res.body))
				}
				if i == 0 {
					first = string(res.body)
				}
				assert.Equal(t, first, string(res.body), "the repeat gets the kept answer")
			}
			assert.Equal(t, 1, runs, "the repeat gets the kept answer")
			assert.False(t, errorHandlerRan, "fiber's error handler ran on the Median path")
		})
	}
}

// TestMountChainsHandlers checks that Mount runs its handlers in order
// behind the middleware: the first can answer (a check of your own), or
// pass the call on with c.Next().
func TestMountChainsHandlers(t *testing.T) {
	h, _ := adaptertest.NewHandler()
	app := fiber.New()
	fibermedian.Mount(app, "/median", h,
		func(c fiber.Ctx) error {
			if call, _ := fibermedian.CallFrom(c); !call.Visitor.Verified {
				return fibermedian.Respond(c, protocol.Refuse("not_signed_in", "Sign in first."), nil)
			}
			return c.Next()
		},
		func(c fiber.Ctx) error {
			call, _ := fibermedian.CallFrom(c)
			return fibermedian.Respond(c, call.Tool, nil)
		})

	res := do(t, app, adaptertest.NewSignedRequest(http.MethodPost, "/median", adaptertest.ToolCall(adaptertest.ToolCustom, "call_chain", `{}`)))
	assert.JSONEq(t, `{"result":"custom"}`, string(res.body))
	anonymous := []byte(`{"tool":"custom","toolCallId":"call_anon","input":{},"context":{"conversationId":"c","risk":"low","visitor":{"verified":false}}}`)
	res = do(t, app, adaptertest.NewSignedRequest(http.MethodPost, "/median/", anonymous))
	assert.JSONEq(t, `{"result":{"ok":false,"allowed":false,"outcome":"blocked","reason":"not_signed_in","detail":"Sign in first."}}`, string(res.body))
}

// TestToolContext checks that a tool's ctx is c.Context() as earlier
// middleware set it (its values and deadline), falling back to the
// request's locals, where fiber's requestid middleware keeps its id, and
// that the locals are not read once the request is over.
func TestToolContext(t *testing.T) {
	type userKey struct{}
	var ids []string
	rid := protocol.NewTool("request_id", protocol.RiskLow, "Tells the request's id.",
		func(ctx context.Context, _ protocol.ToolCall[struct{}]) (string, error) {
			ids = append(ids, requestid.FromContext(ctx))
			return requestid.FromContext(ctx), nil
		})
	h, runs := adaptertest.NewHandler(func(cfg *protocol.Config) { cfg.Tools = append(cfg.Tools, rid) })
	deadline := time.Now().Add(time.Hour)
	app := fiber.New()
	app.Use(requestid.New())
	app.Use(func(c fiber.Ctx) error {
		ctx, cancel := context.WithDeadline(context.WithValue(c.Context(), userKey{}, "from-context"), deadline)
		defer cancel()
		c.SetContext(ctx)
		c.Locals(adaptertest.ValueKey, "from-locals")
		return c.Next()
	})
	fibermedian.Mount(app, "/median", h)

	req := adaptertest.NewSignedRequest(http.MethodPost, "/median", adaptertest.ToolCall("request_id", "call_rid", `{}`))
	req.Header.Set("X-Request-Id", "req-42")
	assert.JSONEq(t, `{"result":"req-42"}`, string(do(t, app, req).body))
	assert.Equal(t, []string{"req-42"}, ids)

	res := do(t, app, adaptertest.NewSignedRequest(http.MethodPost, "/median", adaptertest.ToolCall(adaptertest.ToolValue, "call_value", `{}`)))
	assert.JSONEq(t, `{"result":{"value":"from-locals"}}`, string(res.body))
	ctxs := runs.Contexts()
	require.Len(t, ctxs, 1)
	assert.Equal(t, "from-context", ctxs[0].Value(userKey{}))
	got, ok := ctxs[0].Deadline()
	assert.True(t, ok)
	assert.True(t, deadline.Equal(got), "the tool's deadline is the one the middleware set")
	assert.Nil(t, ctxs[0].Value(adaptertest.ValueKey), "the locals are not read after the request")
}

// TestDo checks the in-memory request function on a signed call and on a
// body of unknown length, and that it leaves the caller's request alone.
func TestDo(t *testing.T) {
	h, runs := adaptertest.NewHandler()
	app := fiber.New()
	fibermedian.Mount(app, "/median", h)

	req := adaptertest.NewSignedRequest(http.MethodPost, "/median", adaptertest.ToolCall(adaptertest.ToolEcho, "call_do", `{"text":"do"}`))
	res := do(t, app, req)
	assert.Equal(t, http.StatusOK, res.status)
	assert.JSONEq(t, `{"result":{"text":"do","visitor":"user_7"}}`, string(res.body))
	assert.Equal(t, int64(1), runs.Echo.Load())
	assert.Empty(t, req.Header.Get("Content-Length"), "Do must not change the caller's request")

	over := adaptertest.Padded(adaptertest.ToolCall(adaptertest.ToolEcho, "call_over", `{}`), adaptertest.MaxBodyBytes+1)
	req = adaptertest.NewSignedRequest(http.MethodPost, "/median", over)
	req.Body, req.ContentLength = io.NopCloser(io.MultiReader(bytes.NewReader(over))), -1
	res = do(t, app, req)
	assert.Equal(t, http.StatusRequestEntityTooLarge, res.status)
	assert.Contains(t, string(res.body), `"code":"invalid_body"`)
}

// TestKeptCallsUnderConcurrency keeps every call (and its Body and
// RawInput) past its handler while concurrent requests over a real
// listener make fasthttp reuse its request buffers, then checks each one
// against what was sent. It fails if anything the core keeps aliases
// fasthttp's buffers.
func TestKeptCallsUnderConcurrency(t *testing.T) {
	const n = 64
	h, _ := adaptertest.NewHandler()
	kept := make(chan *protocol.Call, n)
	app := fiber.New()
	app.Post(adaptertest.Path, fibermedian.Middleware(h), func(c fiber.Ctx) error {
		call, _ := fibermedian.CallFrom(c)
		kept <- call // read only after every handler has returned
		return fibermedian.Respond(c, "ok", nil)
	})
	c := adaptertest.Start(t, serve(app))

	bodies := make(map[string][]byte, n) // by toolCallId
	for i := range n {
		id := fmt.Sprintf("call_%03d_%s", i, strings.Repeat(string(rune('a'+i%26)), i))
		bodies[id] = adaptertest.ToolCall(adaptertest.ToolCustom, id, fmt.Sprintf(`{"text":%q}`, strings.Repeat(string(rune('A'+i%26)), 10+i)))
	}
	var wg sync.WaitGroup
	for _, body := range bodies {
		wg.Go(func() {
			assert.Equal(t, http.StatusOK, c.Do(t, adaptertest.Signed(http.MethodPost, body)).Status)
		})
	}
	wg.Wait()
	// More requests on the same connections (refused unsigned), so the
	// buffers are overwritten once more before the kept calls are read.
	for i := range 8 {
		got := c.Do(t, adaptertest.Unsigned(http.MethodPost, adaptertest.ToolCall(adaptertest.ToolCustom, fmt.Sprintf("later_%d", i), `{"z":"`+strings.Repeat("z", 200)+`"}`)))
		require.Equal(t, http.StatusUnauthorized, got.Status)
	}
	close(kept)
	for call := range kept {
		body, ok := bodies[call.ToolCallID]
		require.True(t, ok, "a kept call has an id that was never sent: %q", call.ToolCallID)
		assert.Equal(t, string(body), string(call.Body), "Body of %s", call.ToolCallID)
		assert.Contains(t, string(body), string(call.RawInput), "RawInput of %s", call.ToolCallID)
		delete(bodies, call.ToolCallID)
	}
	assert.Empty(t, bodies, "every call reached the handler once")
}

// TestStreamedBodyLeftUnreadClosesTheConnection checks that when the core
// answers before reading a streamed body to its end, the connection is
// closed after the answer: fasthttp would otherwise read the rest of the
// body as the next request and answer it with its own 400 page.
func TestStreamedBodyLeftUnreadClosesTheConnection(t *testing.T) {
	h, _ := adaptertest.NewHandler()
	app := fiber.New(fiber.Config{StreamRequestBody: true})
	fibermedian.Mount(app, adaptertest.Path, h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(serve(app)(ln))

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
			// written (the point of the first two cases), so a read that TCP
			// resets before the answer arrives is tried again: a race of the
			// transport, not of the server.
			for attempt := 0; ; attempt++ {
				res, err := sendChunked(ln.Addr().String(), tc.sig, tc.body)
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
// reads the answer, and returns the answer with its body read.
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
	written := make(chan error, 1)
	go func() { written <- req.Write(conn) }()
	res, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err == nil {
		_, err = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	conn.Close() // ends a write still blocked on a server that stopped reading
	<-written
	return res, err
}

// reply is what came back from do.
type reply struct {
	status      int
	contentType string
	allow       string
	body        []byte
}

// do sends req through app in memory with Do.
func do(t *testing.T, app *fiber.App, req *http.Request) reply {
	t.Helper()
	res, err := fibermedian.Do(app)(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return reply{res.StatusCode, res.Header.Get("Content-Type"), res.Header.Get("Allow"), body}
}

// serve returns a Starter that serves app with fasthttp, without its
// startup message.
func serve(app *fiber.App) adaptertest.Starter {
	return adaptertest.ServeListener(func(ln net.Listener) error {
		return app.Listener(ln, fiber.ListenConfig{DisableStartupMessage: true})
	}, app.Shutdown)
}

// TestStreamRequestBodyLiftsBodyLimit pins what the package doc says of
// fiber.Config.StreamRequestBody, which the adapter leaves to the app:
// fiber's BodyLimit refuses a large body on any route without it, and
// limits no route's c.Body() with it.
func TestStreamRequestBodyLiftsBodyLimit(t *testing.T) {
	const limit, size = 1 << 10, 64 << 10
	for stream, want := range map[bool]string{false: "413 Request Entity Too Large", true: fmt.Sprint("200 ", size)} {
		t.Run(fmt.Sprint("StreamRequestBody ", stream), func(t *testing.T) {
			app := fiber.New(fiber.Config{BodyLimit: limit, StreamRequestBody: stream})
			app.Post("/upload", func(c fiber.Ctx) error { return c.SendString(fmt.Sprint(len(c.Body()))) })
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			defer serve(app)(ln)()
			conn, err := net.Dial("tcp", ln.Addr().String())
			require.NoError(t, err)
			written := make(chan struct{})
			go func() { // fasthttp may answer 413 and close before it is all written
				defer close(written)
				_, _ = fmt.Fprintf(conn, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", size, strings.Repeat("x", size))
			}()
			defer func() { conn.Close(); <-written }()
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			require.NoError(t, err)
			defer res.Body.Close()
			got, _ := io.ReadAll(res.Body)
			// Streamed, c.Body() read the whole body, past BodyLimit.
			assert.Equal(t, want, fmt.Sprint(res.StatusCode, " ", string(got)))
		})
	}
}
