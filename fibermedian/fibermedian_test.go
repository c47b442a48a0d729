package fibermedian_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/median-go/median/fibermedian"
	"github.com/median-go/median/internal/adaptertest"
	"github.com/median-go/median/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, adaptertest.FasthttpGoroutines...) }

// TestConformance runs the shared adapter cases (internal/adaptertest).
func TestConformance(t *testing.T) {
	adaptertest.Run(t, adaptertest.Fiber)
}

// TestConformanceStreamingBody runs the shared cases on apps that stream
// request bodies, where the core reads the body itself up to its limit.
func TestConformanceStreamingBody(t *testing.T) {
	adaptertest.Run(t, adaptertest.FiberWith(fiber.Config{StreamRequestBody: true}))
}

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
		cfg.Observer = func(ev protocol.Event) {
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
	c := adaptertest.Start(t, adaptertest.ServeFiber(app))

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
	req := httptest.NewRequest(http.MethodPost, "/median", strings.NewReader(string(body)))
	req.Header.Set(protocol.SignatureHeader, protocol.MustParseKey(adaptertest.Key).Sign(adaptertest.Now, body))
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
	req = httptest.NewRequest(http.MethodPost, "/median", io.MultiReader(strings.NewReader(string(over))))
	req.ContentLength = -1
	req.Header.Set(protocol.SignatureHeader, protocol.MustParseKey(adaptertest.Key).Sign(adaptertest.Now, over))
	res, err = do(req)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	assert.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode)
}
