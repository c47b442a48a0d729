package adaptertest_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/go-chi/chi/v5"
	"github.com/gofiber/fiber/v2"
	"github.com/labstack/echo/v4"
	"github.com/valyala/fasthttp"

	"github.com/median-go/median/chimedian"
	"github.com/median-go/median/echomedian"
	"github.com/median-go/median/fibermedian"
	"github.com/median-go/median/ginmedian"
	"github.com/median-go/median/internal/adaptertest"
	"github.com/median-go/median/protocol"
)

// BenchmarkAdapters measures one request through each adapter in memory,
// with no network, so the numbers compare what each framework and its
// adapter add to the core (the "net/http" row). Replay protection is off so
// that every iteration runs the tool.
//
//	go test -run '^$' -bench Adapters -benchmem ./internal/adaptertest
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
		{"gin", benchGin(h)},
		{"echo", benchEcho(h)},
		{"chi", benchChi(h)},
	}
	for _, s := range scenarios {
		b.Run(s.name, func(b *testing.B) {
			for _, fw := range handlers {
				b.Run(fw.name, func(b *testing.B) { benchNetHTTP(b, fw.handler, s.req, s.status) })
			}
			b.Run("fiber", func(b *testing.B) { benchFiber(b, h, s.req, s.status) })
		})
	}
}

func benchGin(h *protocol.Handler) http.Handler {
	r := gin.New()
	ginmedian.Mount(r, adaptertest.Path, h)
	return r
}

func benchEcho(h *protocol.Handler) http.Handler {
	e := echo.New()
	echomedian.Mount(e, adaptertest.Path, h)
	return e
}

func benchChi(h *protocol.Handler) http.Handler {
	r := chi.NewRouter()
	chimedian.Mount(r, adaptertest.Path, h)
	return r
}

// benchNetHTTP sends r to handler b.N times, reusing the request and a
// writer that discards the body.
func benchNetHTTP(b *testing.B, handler http.Handler, r adaptertest.Request, status int) {
	body := bytes.NewReader(r.Body)
	req, err := http.NewRequest(r.Method, adaptertest.Path, nil)
	if err != nil {
		b.Fatal(err)
	}
	if r.Signature != nil {
		req.Header.Set(protocol.SignatureHeader, *r.Signature)
	}
	w := &discardWriter{header: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
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

// benchFiber sends r through a fiber app's fasthttp handler b.N times.
func benchFiber(b *testing.B, h *protocol.Handler, r adaptertest.Request, status int) {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	fibermedian.Mount(app, adaptertest.Path, h)
	handler := app.Handler()
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod(r.Method)
	ctx.Request.SetRequestURI(adaptertest.Path)
	if r.Signature != nil {
		ctx.Request.Header.Set(protocol.SignatureHeader, *r.Signature)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		ctx.Request.SetBody(r.Body)
		ctx.Response.Reset()
		handler(&ctx)
		if got := ctx.Response.StatusCode(); got != status {
			b.Fatalf("status %d, want %d", got, status)
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
