package adapters_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	hertzapp "github.com/cloudwego/hertz/pkg/app"
	hertzserver "github.com/cloudwego/hertz/pkg/app/server"
	hertzroute "github.com/cloudwego/hertz/pkg/route"
	"github.com/gin-gonic/gin"
	"github.com/go-chi/chi/v5"
	"github.com/gofiber/fiber/v2"
	"github.com/labstack/echo/v4"
	"github.com/valyala/fasthttp"

	"github.com/median-go/median/chimedian"
	"github.com/median-go/median/echomedian"
	"github.com/median-go/median/fibermedian"
	"github.com/median-go/median/ginmedian"
	"github.com/median-go/median/hertzmedian"
	"github.com/median-go/median/internal/testonly/adaptertest"
	"github.com/median-go/median/protocol"
)

// BenchmarkAdapters measures one request through each adapter in memory,
// with no network, so the numbers compare what each framework and its
// adapter add to the core (the "net/http" row). Replay protection is off so
// that every iteration runs the tool.
//
//	go test -run '^$' -bench Adapters -benchmem ./internal/adapters
func BenchmarkAdapters(b *testing.B) {
	h, _ := adaptertest.NewHandler(func(cfg *protocol.Config) { cfg.DisableReplayProtection = true })
	call := adaptertest.ToolCall(adaptertest.ToolEcho, "call_bench", `{"text":"bench"}`)
	scenarios := []struct {
		name   string
		req    adaptertest.Request
		status int
	}{
		{"tool_call", adaptertest.Signed(http.MethodPost, call), http.StatusOK},
		{"manifest", adaptertest.Signed(http.MethodGet, nil), http.StatusOK},
		{"unsigned", adaptertest.Unsigned(http.MethodPost, call), http.StatusUnauthorized},
	}
	handlers := []struct {
		name    string
		handler http.Handler
	}{
		{"net/http", h},
		{"gin", endpointGin(h)},
		{"echo", endpointEcho(h)},
		{"chi", endpointChi(h)},
	}
	for _, s := range scenarios {
		b.Run(s.name, func(b *testing.B) {
			for _, fw := range handlers {
				b.Run(fw.name, func(b *testing.B) { benchNetHTTP(b, fw.handler, s.req, s.status) })
			}
			b.Run("fiber", func(b *testing.B) { benchFiberHandler(b, endpointFiberV2(h), s.req, s.status) })
			b.Run("hertz", func(b *testing.B) { benchLoop(b, hertzSender(b, endpointHertz(h), s.req, s.status)) })
		})
	}
}

// BenchmarkMiddleware measures one verified call through each adapter's
// Mount with a handler of the app's own (middleware mode): the handler
// binds the input and answers with the adapter's Respond. Replay
// protection is off, so every iteration reaches the handler.
//
//	go test -run '^$' -bench Middleware -benchmem ./internal/adapters
func BenchmarkMiddleware(b *testing.B) {
	h, _ := adaptertest.NewHandler(func(cfg *protocol.Config) { cfg.DisableReplayProtection = true })
	req := adaptertest.Signed(http.MethodPost, adaptertest.ToolCall(adaptertest.ToolEcho, "call_bench", `{"text":"bench"}`))
	answer := func(call *protocol.Call) (any, error) {
		var in adaptertest.EchoIn
		if err := call.BindInput(&in); err != nil {
			return nil, err
		}
		return adaptertest.EchoOut{Text: in.Text}, nil
	}

	g := gin.New()
	ginmedian.Mount(g, adaptertest.Path, h, func(c *gin.Context) {
		call, _ := ginmedian.CallFrom(c)
		out, err := answer(call)
		ginmedian.Respond(c, out, err)
	})
	e := echo.New()
	echomedian.Mount(e, adaptertest.Path, h, func(c echo.Context) error {
		call, _ := echomedian.CallFrom(c)
		out, err := answer(call)
		return echomedian.Respond(c, out, err)
	})
	r := chi.NewRouter()
	chimedian.Mount(r, adaptertest.Path, h, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call, _ := chimedian.CallFrom(r)
		out, err := answer(call)
		chimedian.Respond(w, r, out, err)
	}))
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	fibermedian.Mount(app, adaptertest.Path, h, func(c *fiber.Ctx) error {
		call, _ := fibermedian.CallFrom(c)
		out, err := answer(call)
		return fibermedian.Respond(c, out, err)
	})

	for _, fw := range []struct {
		name    string
		handler http.Handler
	}{{"net/http", h.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call, _ := protocol.CallFrom(r.Context())
		out, err := answer(call)
		protocol.Respond(w, r, out, err)
	}))}, {"gin", g}, {"echo", e}, {"chi", r}} {
		b.Run(fw.name, func(b *testing.B) { benchNetHTTP(b, fw.handler, req, http.StatusOK) })
	}
	b.Run("fiber", func(b *testing.B) { benchFiberHandler(b, app.Handler(), req, http.StatusOK) })
	hz := hertzserver.New(hertzserver.WithDisablePrintRoute(true))
	hertzmedian.Mount(hz, adaptertest.Path, h, func(ctx context.Context, c *hertzapp.RequestContext) {
		call, _ := hertzmedian.CallFrom(ctx)
		out, err := answer(call)
		hertzmedian.Respond(ctx, c, out, err)
	})
	b.Run("hertz", func(b *testing.B) { benchLoop(b, hertzSender(b, hz.Engine, req, http.StatusOK)) })
}

// endpointHertz is the endpoint mounted with hertzmedian on a Hertz engine.
func endpointHertz(h *protocol.Handler) *hertzroute.Engine {
	hz := hertzserver.New(hertzserver.WithDisablePrintRoute(true))
	hertzmedian.Mount(hz, adaptertest.Path, h)
	return hz.Engine
}

// hertzSender returns a function that sends r through a Hertz engine's
// handlers (its ServeHTTP, as Hertz's server and its ut helper call it),
// reusing one RequestContext, and fails b unless the answer has status.
func hertzSender(b *testing.B, engine *hertzroute.Engine, r adaptertest.Request, status int) func() {
	c := engine.NewContext()
	return func() {
		c.ResetWithoutConn()
		c.Request.Header.SetMethod(r.Method)
		c.Request.SetRequestURI(adaptertest.Path)
		c.Request.Header.SetHost("example.test")
		if r.Signature != nil {
			c.Request.Header.Set(adaptertest.SignatureHeader, *r.Signature)
		}
		c.Request.SetBody(r.Body)
		engine.ServeHTTP(context.Background(), c)
		if got := c.Response.StatusCode(); got != status {
			b.Fatalf("status %d, want %d", got, status)
		}
	}
}

// benchNetHTTP sends r to handler b.N times (see netHTTPSender).
func benchNetHTTP(b *testing.B, handler http.Handler, r adaptertest.Request, status int) {
	benchLoop(b, netHTTPSender(b, handler, r, status))
}

// benchLoop calls send b.N times and reports the allocations.
func benchLoop(b *testing.B, send func()) {
	b.ReportAllocs()
	for b.Loop() {
		send()
	}
}

// netHTTPSender returns a function that sends r to handler, reusing the
// request and a writer that discards the body, and fails b unless the
// answer has status.
func netHTTPSender(b *testing.B, handler http.Handler, r adaptertest.Request, status int) func() {
	body := bytes.NewReader(r.Body)
	req, err := http.NewRequest(r.Method, adaptertest.Path, nil)
	if err != nil {
		b.Fatal(err)
	}
	if r.Signature != nil {
		req.Header.Set(adaptertest.SignatureHeader, *r.Signature)
	}
	w := &discardWriter{header: http.Header{}}
	return func() {
		body.Reset(r.Body)
		req.Body, req.ContentLength = io.NopCloser(body), int64(len(r.Body))
		clear(w.header)
		w.status = 0
		handler.ServeHTTP(w, req)
		if w.status != status {
			b.Fatalf("status %d, want %d", w.status, status)
		}
	}
}

// discardWriter is an http.ResponseWriter that keeps only the status.
type discardWriter struct {
	header http.Header
	status int
}

func (w *discardWriter) Header() http.Header { return w.header }

func (w *discardWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *discardWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return len(p), nil
}

// checkSame fails the benchmark unless every handler answers r with want
// and application/json: the handlers compared must do the same visible work.
func checkSame(b *testing.B, name string, want []byte, r adaptertest.Request, handlers map[string]http.Handler) {
	for impl, handler := range handlers {
		req := httptest.NewRequest(r.Method, adaptertest.Path, bytes.NewReader(r.Body))
		req.Header.Set(adaptertest.SignatureHeader, *r.Signature)
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, req)
		if w.Code != http.StatusOK || !bytes.Equal(w.Body.Bytes(), want) || w.Header().Get("Content-Type") != adaptertest.ContentType {
			b.Fatalf("%s %s answers %d %q %s, want 200 application/json %s", name, impl, w.Code, w.Header().Get("Content-Type"), w.Body.Bytes(), want)
		}
	}
}

// fiberAnswer sends r once through a fasthttp handler and returns the body.
func fiberAnswer(handler fasthttp.RequestHandler, r adaptertest.Request) []byte {
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod(r.Method)
	ctx.Request.SetRequestURI(adaptertest.Path)
	ctx.Request.Header.Set(adaptertest.SignatureHeader, *r.Signature)
	ctx.Request.SetBody(r.Body)
	handler(&ctx)
	return bytes.Clone(ctx.Response.Body())
}

// benchFiberHandler sends r through a fasthttp handler b.N times (see
// fiberSender).
func benchFiberHandler(b *testing.B, handler fasthttp.RequestHandler, r adaptertest.Request, status int) {
	benchLoop(b, fiberSender(b, handler, r, status))
}

// fiberSender returns a function that sends r through a fasthttp handler,
// reusing one RequestCtx, and fails b unless the answer has status.
func fiberSender(b *testing.B, handler fasthttp.RequestHandler, r adaptertest.Request, status int) func() {
	ctx := new(fasthttp.RequestCtx)
	ctx.Request.Header.SetMethod(r.Method)
	ctx.Request.SetRequestURI(adaptertest.Path)
	if r.Signature != nil {
		ctx.Request.Header.Set(adaptertest.SignatureHeader, *r.Signature)
	}
	return func() {
		ctx.Request.SetBody(r.Body)
		ctx.Response.Reset()
		handler(ctx)
		if got := ctx.Response.StatusCode(); got != status {
			b.Fatalf("status %d, want %d", got, status)
		}
	}
}
