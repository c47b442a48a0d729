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

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/median-go/median/fibermedian"
	"github.com/median-go/median/internal/testonly/adaptertest"
	"github.com/median-go/median/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, adaptertest.FasthttpGoroutines...) }

// The shared adapter table and the conformance suite run against this
// adapter in internal/testonly/adapters, also on apps that stream request bodies
// and on apps with extra RequestMethods.

// TestValuesOutliveTheRequest checks that nothing the adapter hands out
// aliases fasthttp's buffers, which are reused for the next request on the
// connection: a call kept by the handler and the methods the observer saw
// must read the same after later requests.
func TestValuesOutliveTheRequest(t *testing.T) {
	var (
		mu      sync.Mutex
		kept    []*protocol.Call
		methods []string
	)
	h, _ := adaptertest.NewHandler(func(cfg *protocol.Config) {
		cfg.Tools = append(cfg.Tools, adaptertest.AppTool("first_tool"), adaptertest.AppTool("second_tool_with_a_longer_name"))
		cfg.Observer = func(_ context.Context, ev protocol.Event) {
			mu.Lock()
			defer mu.Unlock()
			methods = append(methods, ev.Method)
		}
	})
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.All(adaptertest.Path, fibermedian.Middleware(h), func(c *fiber.Ctx) error {
		call, ok := fibermedian.CallFrom(c)
		require.True(t, ok)
		mu.Lock()
		kept = append(kept, call)
		mu.Unlock()
		return fibermedian.Respond(c, "ok", nil)
	})
	c := adaptertest.Start(t, serve(app))

	first := adaptertest.ToolCall("first_tool", "call_first", `{"a":"AAAA"}`)
	second := adaptertest.ToolCall("second_tool_with_a_longer_name", "call_second_0123456789", `{"b":"BBBBBBBBBBBBBBBB","c":[1,2,3]}`)
	for _, step := range []struct {
		req    adaptertest.Request
		status int
	}{
		{adaptertest.Signed(http.MethodPost, first), http.StatusOK},
		{adaptertest.Signed(http.MethodPost, second), http.StatusOK},
		{adaptertest.Signed(http.MethodGet, nil), http.StatusOK},
		{adaptertest.Signed(http.MethodPut, second), http.StatusMethodNotAllowed},
	} {
		require.Equal(t, step.status, c.Do(t, step.req).Status, "%s request", step.req.Method)
	}

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, kept, 2)
	assert.Equal(t, "first_tool", kept[0].Tool)
	assert.Equal(t, "call_first", kept[0].ToolCallID)
	assert.JSONEq(t, `{"a":"AAAA"}`, string(kept[0].RawInput))
	assert.Equal(t, "second_tool_with_a_longer_name", kept[1].Tool)
	// Respond reports the two answered calls as POST; Verify reports GET and PUT.
	assert.Equal(t, []string{http.MethodPost, http.MethodPost, http.MethodGet, http.MethodPut}, methods)
}

// TestDo checks the in-memory request function on a signed call, on a
// body of unknown length, and that it leaves the caller's request alone.
func TestDo(t *testing.T) {
	h, runs := adaptertest.NewHandler()
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	fibermedian.Mount(app, "/median", h)
	do := fibermedian.Do(app)

	body := adaptertest.ToolCall(adaptertest.ToolEcho, "call_do", `{"text":"do"}`)
	req := adaptertest.NewSignedRequest(http.MethodPost, "/median", body)
	res, err := do(req)
	require.NoError(t, err)
	got, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.JSONEq(t, `{"result":{"text":"do","visitor":"user_7"}}`, string(got))
	assert.Equal(t, int64(1), runs.Echo.Load())
	assert.Empty(t, req.Header.Get("Content-Length"), "Do must not change the caller's request")

	over := adaptertest.Padded(adaptertest.ToolCall(adaptertest.ToolEcho, "call_over", `{}`), adaptertest.MaxBodyBytes+1)
	req = adaptertest.NewSignedRequest(http.MethodPost, "/median", over)
	req.Body, req.ContentLength = io.NopCloser(io.MultiReader(bytes.NewReader(over))), -1
	res, err = do(req)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	assert.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode)
}

// TestKeptCallsUnderConcurrency keeps every call (and its Body and
// RawInput) past its handler while 64 concurrent requests over a real
// listener make fasthttp reuse its request buffers, then checks each one
// against what was sent. It fails if anything the core keeps aliases
// fasthttp's buffers.
func TestKeptCallsUnderConcurrency(t *testing.T) {
	const n = 64
	h, _ := adaptertest.NewHandler()
	kept := make(chan *protocol.Call, n)
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Post(adaptertest.Path, fibermedian.Middleware(h), func(c *fiber.Ctx) error {
		call, ok := fibermedian.CallFrom(c)
		if !ok {
			return fibermedian.Respond(c, nil, nil)
		}
		kept <- call // read only after every handler has returned
		return fibermedian.Respond(c, "ok", nil)
	})
	c := adaptertest.Start(t, serve(app))

	bodies := make(map[string][]byte, n) // by toolCallId
	inputs := make(map[string]string, n)
	for i := range n {
		id := fmt.Sprintf("call_%03d_%s", i, strings.Repeat(string(rune('a'+i%26)), i))
		inputs[id] = fmt.Sprintf(`{"text":%q,"i":%d}`, strings.Repeat(string(rune('A'+i%26)), 10+i), i)
		bodies[id] = adaptertest.ToolCall(adaptertest.ToolCustom, id, inputs[id])
	}
	var wg sync.WaitGroup
	statuses := make(chan int, n)
	for _, body := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses <- c.Do(t, adaptertest.Signed(http.MethodPost, body)).Status
		}()
	}
	wg.Wait()
	close(statuses)
	for s := range statuses {
		require.Equal(t, http.StatusOK, s)
	}
	// More requests on the same connections (refused unsigned, so they never
	// reach the handler), so the buffers are overwritten once more before
	// the kept calls are read.
	for i := range 8 {
		got := c.Do(t, adaptertest.Unsigned(http.MethodPost, adaptertest.ToolCall(adaptertest.ToolCustom, fmt.Sprintf("later_%d", i), `{"zzzzzzzzzzzzzzzzzzzz":"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"}`)))
		require.Equal(t, http.StatusUnauthorized, got.Status)
	}
	close(kept)

	seen := 0
	for call := range kept {
		seen++
		body, ok := bodies[call.ToolCallID]
		require.True(t, ok, "a kept call has an id that was never sent: %q", call.ToolCallID)
		assert.Equal(t, adaptertest.ToolCustom, call.Tool)
		assert.Equal(t, string(body), string(call.Body), "Body of %s", call.ToolCallID)
		assert.Equal(t, inputs[call.ToolCallID], string(call.RawInput), "RawInput of %s", call.ToolCallID)
		assert.Equal(t, "conv_42", call.ConversationID)
		id, _ := call.Visitor.ExternalID()
		assert.Equal(t, "user_7", id)
		delete(bodies, call.ToolCallID)
	}
	assert.Equal(t, n, seen, "every call reached the handler once")
}

// TestStreamedBodyLeftUnreadClosesTheConnection checks that when the core
// answers before reading a streamed body to its end, the connection is
// closed after the answer: fasthttp would otherwise read the rest of the
// body as the next request and answer it with its own 400 page.
func TestStreamedBodyLeftUnreadClosesTheConnection(t *testing.T) {
	h, _ := adaptertest.NewHandler()
	app := fiber.New(fiber.Config{DisableStartupMessage: true, StreamRequestBody: true})
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
			// written (that is the point of the first two cases), so the
			// request is written beside the read, a failed write is expected
			// there, and a read that TCP resets before the answer arrives is
			// tried again: a race of the transport, not of the server.
			for attempt := 0; ; attempt++ {
				res, writeErr, err := sendChunked(ln.Addr().String(), tc.sig, tc.body)
				if err != nil && attempt < 20 && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
					continue
				}
				require.NoError(t, err)
				assert.Equal(t, tc.status, res.StatusCode)
				assert.Equal(t, adaptertest.ContentType, res.Header.Get("Content-Type"))
				assert.Equal(t, tc.close, res.Close, "Connection: close on the answer")
				if !tc.close {
					assert.NoError(t, writeErr, "a body the server reads must be written whole")
				}
				return
			}
		})
	}
}

// sendChunked writes one chunked, signed POST on a new connection while it
// reads the answer, and returns the answer (its body read), the error of the
// write (once the connection is closed) and the error of the read.
func sendChunked(addr, sig string, body []byte) (*http.Response, error, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+adaptertest.Path, io.MultiReader(bytes.NewReader(body)))
	if err != nil {
		conn.Close()
		return nil, nil, err
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
	if res != nil && !res.Close && err == nil {
		// The server keeps the connection: the whole request was read, so
		// the write has finished or is about to.
		writeErr := <-written
		conn.Close()
		return res, writeErr, nil
	}
	conn.Close()
	return res, <-written, err
}

// TestReturnedErrorIsTheAnswer checks that an error the handlers after
// Middleware return is answered through the core, so fiber's error handler
// never writes its own page on the Median path, and that the answer is kept
// for replays.
func TestReturnedErrorIsTheAnswer(t *testing.T) {
	h, _ := adaptertest.NewHandler()
	errorHandlerRan := false
	app := fiber.New(fiber.Config{DisableStartupMessage: true, ErrorHandler: func(c *fiber.Ctx, err error) error {
		errorHandlerRan = true
		return c.Status(http.StatusTeapot).SendString("fiber's page")
	}})
	runs := 0
	fibermedian.Mount(app, adaptertest.Path, h, func(c *fiber.Ctx) error {
		runs++
		return fiber.ErrUnauthorized
	})
	body := adaptertest.ToolCall(adaptertest.ToolCustom, "call_err", `{}`)
	var first string
	for i := range 2 {
		req := adaptertest.NewSignedRequest(http.MethodPost, adaptertest.Path, body)
		res, err := fibermedian.Do(app)(req)
		require.NoError(t, err)
		got, _ := io.ReadAll(res.Body)
		require.NoError(t, res.Body.Close())
		assert.Equal(t, http.StatusOK, res.StatusCode)
		// fiber's error is not meant for the agent: it reads the tool's
		// name and a reference.
		adaptertest.RequireHiddenFailure(t, adaptertest.ToolCustom, got)
		if i == 0 {
			first = string(got)
		}
		assert.Equal(t, first, string(got), "the repeat gets the kept answer")
	}
	assert.Equal(t, 1, runs, "the repeat gets the kept answer")
	assert.False(t, errorHandlerRan)
}

// TestToolSeesTheUserContext checks that the tool's ctx is the user
// context an earlier middleware set (its deadline and values), falling
// back to fiber's locals, and is cancelled with it.
func TestToolSeesTheUserContext(t *testing.T) {
	type userKey struct{}
	h, runs := adaptertest.NewHandler()
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), userKey{}, "from-user-context"), time.Hour)
	defer cancel()
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Use(func(c *fiber.Ctx) error {
		c.SetUserContext(ctx)
		c.Locals(adaptertest.ValueKey, "from-locals")
		return c.Next()
	})
	fibermedian.Mount(app, adaptertest.Path, h)

	body := adaptertest.ToolCall(adaptertest.ToolValue, "call_user_ctx", `{}`)
	req := adaptertest.NewSignedRequest(http.MethodPost, adaptertest.Path, body)
	res, err := fibermedian.Do(app)(req)
	require.NoError(t, err)
	got, _ := io.ReadAll(res.Body)
	require.NoError(t, res.Body.Close())
	assert.JSONEq(t, `{"result":{"value":"from-locals"}}`, string(got))

	ctxs := runs.Contexts()
	require.Len(t, ctxs, 1)
	assert.Equal(t, "from-user-context", ctxs[0].Value(userKey{}))
	want, _ := ctx.Deadline()
	deadline, ok := ctxs[0].Deadline()
	assert.True(t, ok)
	assert.Equal(t, want, deadline)
	cancel()
	assert.ErrorIs(t, ctxs[0].Err(), context.Canceled, "the tool's ctx is cancelled with the user context")
}

// serve returns a Starter that serves app with fasthttp.
func serve(app *fiber.App) adaptertest.Starter {
	return adaptertest.ServeListener(app.Listener, app.Shutdown)
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
			app.Post("/upload", func(c *fiber.Ctx) error { return c.SendString(fmt.Sprint(len(c.Body()))) })
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
