package ginmedian_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/median-go/median/ginmedian"
	"github.com/median-go/median/internal/testonly/adaptertest"
)

// TestMain runs the tests with gin in release mode, as apps run it (the
// tests of debug mode switch it on themselves), and fails them on leaked
// goroutines. The shared adapter table and the conformance suite run
// against ginmedian in internal/testonly/adapters.
func TestMain(m *testing.M) {
	gin.SetMode(gin.ReleaseMode)
	goleak.VerifyTestMain(m)
}

// debugMode runs fn in gin's debug mode with gin's debug output captured,
// and returns the output.
func debugMode(fn func()) string {
	var out bytes.Buffer
	writer, mode := gin.DefaultWriter, gin.Mode()
	gin.DefaultWriter = &out
	gin.SetMode(gin.DebugMode)
	defer func() {
		gin.DefaultWriter = writer
		gin.SetMode(mode)
	}()
	fn()
	return out.String()
}

// TestMountPrintsOneLineInDebugMode checks that Mount in gin's debug mode
// prints one summary line where gin would print one per method and path,
// that the routes are all registered, and that gin's own lines for other
// routes are untouched.
func TestMountPrintsOneLineInDebugMode(t *testing.T) {
	h, _ := adaptertest.NewHandler()
	var r *gin.Engine
	for name, mount := range map[string]func(g gin.IRoutes){
		"endpoint": func(g gin.IRoutes) { ginmedian.Mount(g, "/median", h) },
		"middleware": func(g gin.IRoutes) {
			ginmedian.Mount(g, "/median", h, func(c *gin.Context) { ginmedian.Respond(c, "ok", nil) })
		},
	} {
		t.Run(name, func(t *testing.T) {
			out := debugMode(func() {
				r = gin.New()
				r.GET("/healthz", func(c *gin.Context) {})
				mount(r.Group("/api"))
			})
			var median []string
			for line := range strings.Lines(out) {
				if strings.Contains(line, "/api/median") {
					median = append(median, line)
				}
			}
			require.Len(t, median, 1, "debug output:\n%s", out)
			assert.Contains(t, median[0], "[GIN-debug] median endpoint at /api/median and /api/median/, every method --> ")
			assert.Contains(t, out, "/healthz", "other routes keep gin's own line")
			assert.Nil(t, gin.DebugPrintRouteFunc, "Mount restores gin.DebugPrintRouteFunc")
			assert.Len(t, r.Routes(), 1+2*9, "every method of gin's Any on both paths")
		})
	}
}

// TestMountCallsYourRoutePrinter checks that a gin.DebugPrintRouteFunc of
// the app's own is called once per path, and restored.
func TestMountCallsYourRoutePrinter(t *testing.T) {
	h, _ := adaptertest.NewHandler()
	var printed []string
	gin.DebugPrintRouteFunc = func(method, path, _ string, _ int) { printed = append(printed, method+" "+path) }
	defer func() { gin.DebugPrintRouteFunc = nil }()
	debugMode(func() { ginmedian.Mount(gin.New().Group("/api"), "/median/", h) })
	assert.Equal(t, []string{"ANY /api/median", "ANY /api/median/"}, printed)
	assert.NotNil(t, gin.DebugPrintRouteFunc)
}

// TestMountRestoresTheRoutePrinterWhenGinPanics checks that a route gin
// refuses (registered twice) leaves gin.DebugPrintRouteFunc as it was.
func TestMountRestoresTheRoutePrinterWhenGinPanics(t *testing.T) {
	h, _ := adaptertest.NewHandler()
	debugMode(func() {
		r := gin.New()
		ginmedian.Mount(r, "/median", h)
		assert.Panics(t, func() { ginmedian.Mount(r, "/median", h) })
	})
	assert.Nil(t, gin.DebugPrintRouteFunc)
}

// TestMountOutsideDebugModePrintsNothing checks release mode stays silent.
func TestMountOutsideDebugModePrintsNothing(t *testing.T) {
	h, _ := adaptertest.NewHandler()
	var out bytes.Buffer
	writer := gin.DefaultWriter
	gin.DefaultWriter = &out
	defer func() { gin.DefaultWriter = writer }()
	ginmedian.Mount(gin.New(), "/median", h)
	assert.Empty(t, out.String())
}

// TestToolSeesTheRequestsDeadline checks that the tool's ctx keeps the
// request context's deadline while it falls back to gin's keys.
func TestToolSeesTheRequestsDeadline(t *testing.T) {
	h, runs := adaptertest.NewHandler()
	r := gin.New()
	r.Use(func(c *gin.Context) { c.Set(adaptertest.ValueKey, "from-gin") })
	ginmedian.Mount(r, adaptertest.Path, h)

	body := adaptertest.ToolCall(adaptertest.ToolValue, "call_deadline", `{}`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	req := adaptertest.NewSignedRequest(http.MethodPost, adaptertest.Path, body).WithContext(ctx)
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	assert.JSONEq(t, `{"result":{"value":"from-gin"}}`, w.Body.String())

	ctxs := runs.Contexts()
	require.Len(t, ctxs, 1)
	want, _ := ctx.Deadline()
	got, ok := ctxs[0].Deadline()
	assert.True(t, ok)
	assert.Equal(t, want, got)
	cancel()
	assert.ErrorIs(t, ctxs[0].Err(), context.Canceled, "the tool's ctx is cancelled with the request's")
}

// TestPanicAbortsTheChain checks that after a handler behind Middleware
// panics, the core's answer stands and the handlers after it do not run
// (gin would otherwise go on with the chain once the core recovered).
func TestPanicAbortsTheChain(t *testing.T) {
	h, _ := adaptertest.NewHandler()
	r := gin.New()
	r.Use(gin.Recovery())
	after := false
	ginmedian.Mount(r, adaptertest.Path, h,
		func(*gin.Context) { panic("boom") },
		func(c *gin.Context) { after = true; ginmedian.Respond(c, "late", nil) })

	body := adaptertest.ToolCall(adaptertest.ToolCustom, "call_panic_chain", `{}`)
	req := adaptertest.NewSignedRequest(http.MethodPost, adaptertest.Path, body)
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	assert.Equal(t, http.StatusOK, w.Code)
	assert.JSONEq(t, `{"error":{"code":"execution_failed","message":"tool custom failed unexpectedly"}}`, w.Body.String())
	assert.False(t, after, "the handlers after the panic do not run")
}

// TestRespondEndsAChainOfYourOwn checks that Respond aborts gin's chain, so
// that behind Middleware on a route of your own, too, no handler runs
// after the one that answered.
func TestRespondEndsAChainOfYourOwn(t *testing.T) {
	h, _ := adaptertest.NewHandler()
	r := gin.New()
	after := 0
	r.POST(adaptertest.Path, ginmedian.Middleware(h),
		func(c *gin.Context) { ginmedian.Respond(c, nil, adaptertest.Refusal) },
		func(c *gin.Context) { after++; ginmedian.Respond(c, "ran", nil) })
	body := adaptertest.ToolCall(adaptertest.ToolCustom, "call_own_chain", `{}`)
	req := adaptertest.NewSignedRequest(http.MethodPost, adaptertest.Path, body)
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	assert.Equal(t, http.StatusOK, w.Code)
	assert.JSONEq(t, `{"result":{"ok":false,"allowed":false,"outcome":"blocked","reason":"not_signed_in","detail":"Sign in to see your orders."}}`, w.Body.String())
	assert.Zero(t, after, "the handler after the one that answered ran")
}
