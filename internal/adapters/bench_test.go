package adapters_test

import (
	"bytes"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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
		req.Header.Set(adaptertest.SignatureHeader, *r.Signature)
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
	benchFiberHandler(b, app.Handler(), r, status)
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

// BenchmarkEndpoint puts each adapter's endpoint (Mount, a signed tool call
// whose tool echoes its input, replay protection off) beside two handlers
// of the same framework:
//
//   - impl=bare reads the body and writes the same answer bytes as
//     application/json: the framework's own cost, with no work at all;
//   - impl=byhand does by hand the least any endpoint answering this call
//     must do — check the HMAC of "<t>.<body>" with crypto/hmac, decode the
//     body with encoding/json and encode the answer — and none of the rest
//     (no window, no field checks, no schema, no error answers).
//
// The pairs run interleaved, so that a noisy machine hurts all alike:
//
//	go test -run '^$' -bench Endpoint -benchmem -count 8 ./internal/adapters > endpoint.txt
//	go run golang.org/x/perf/cmd/benchstat@latest -row /fw -col /impl endpoint.txt
func BenchmarkEndpoint(b *testing.B) {
	h, _ := adaptertest.NewHandler(func(cfg *protocol.Config) { cfg.DisableReplayProtection = true })
	body := adaptertest.ToolCall(adaptertest.ToolEcho, "call_bench", `{"text":"bench"}`)
	req := adaptertest.Signed(http.MethodPost, body)
	answer := []byte(`{"result":{"text":"bench","visitor":"user_7"}}`)
	secret, err := hkdf.Key(sha256.New, []byte(adaptertest.Key), nil, "median tool signing v1", 32)
	if err != nil {
		b.Fatal(err)
	}

	netHTTP := []struct {
		name                  string
		median, plain, byHand http.Handler
	}{
		{"gin", benchGin(h), bareGin(answer), byHandGin(secret)},
		{"echo", benchEcho(h), bareEcho(answer), byHandEcho(secret)},
		{"chi", benchChi(h), bareChi(answer), byHandChi(secret)},
	}
	for _, fw := range netHTTP {
		checkSame(b, fw.name, answer, req, map[string]http.Handler{"median": fw.median, "bare": fw.plain, "byhand": fw.byHand})
		b.Run("fw="+fw.name+"/impl=median", func(b *testing.B) { benchNetHTTP(b, fw.median, req, http.StatusOK) })
		b.Run("fw="+fw.name+"/impl=bare", func(b *testing.B) { benchNetHTTP(b, fw.plain, req, http.StatusOK) })
		b.Run("fw="+fw.name+"/impl=byhand", func(b *testing.B) { benchNetHTTP(b, fw.byHand, req, http.StatusOK) })
	}
	median := fiber.New(fiber.Config{DisableStartupMessage: true})
	fibermedian.Mount(median, adaptertest.Path, h)
	bare := fiber.New(fiber.Config{DisableStartupMessage: true})
	bare.Post(adaptertest.Path, func(c *fiber.Ctx) error {
		_ = c.Body()
		c.Set(fiber.HeaderContentType, adaptertest.ContentType)
		return c.Send(answer)
	})
	byHand := fiber.New(fiber.Config{DisableStartupMessage: true})
	byHand.Post(adaptertest.Path, func(c *fiber.Ctx) error {
		out, status := answerByHand(secret, c.Get(adaptertest.SignatureHeader), c.Body())
		c.Set(fiber.HeaderContentType, adaptertest.ContentType)
		return c.Status(status).Send(out)
	})
	for name, app := range map[string]*fiber.App{"median": median, "bare": bare, "byhand": byHand} {
		if got := fiberAnswer(app.Handler(), req); !bytes.Equal(got, answer) {
			b.Fatalf("fiber %s answers %s, want %s", name, got, answer)
		}
	}
	b.Run("fw=fiber/impl=median", func(b *testing.B) { benchFiberHandler(b, median.Handler(), req, http.StatusOK) })
	b.Run("fw=fiber/impl=bare", func(b *testing.B) { benchFiberHandler(b, bare.Handler(), req, http.StatusOK) })
	b.Run("fw=fiber/impl=byhand", func(b *testing.B) { benchFiberHandler(b, byHand.Handler(), req, http.StatusOK) })
}

// byHandCall is the part of the echo tool's call a hand-written endpoint reads.
type byHandCall struct {
	Input struct {
		Text string `json:"text"`
	} `json:"input"`
	Context struct {
		Visitor struct {
			ExternalID string `json:"externalId"`
		} `json:"visitor"`
	} `json:"context"`
}

type byHandAnswer struct {
	Result struct {
		Text    string `json:"text"`
		Visitor string `json:"visitor"`
	} `json:"result"`
}

// answerByHand is the least an endpoint answering the echo call must do:
// one HMAC check, one decode, one encode.
func answerByHand(secret []byte, header string, body []byte) ([]byte, int) {
	ts, v1, _ := strings.Cut(strings.TrimPrefix(header, "t="), ",v1=")
	want, err := hex.DecodeString(v1)
	if err != nil {
		return nil, http.StatusUnauthorized
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	if !hmac.Equal(mac.Sum(nil), want) {
		return nil, http.StatusUnauthorized
	}
	var call byHandCall
	if err := json.Unmarshal(body, &call); err != nil {
		return nil, http.StatusBadRequest
	}
	var out byHandAnswer
	out.Result.Text, out.Result.Visitor = call.Input.Text, call.Context.Visitor.ExternalID
	answer, err := json.Marshal(out)
	if err != nil {
		return nil, http.StatusInternalServerError
	}
	return answer, http.StatusOK
}

func byHandGin(secret []byte) http.Handler {
	r := gin.New()
	r.POST(adaptertest.Path, func(c *gin.Context) {
		body, err := io.ReadAll(c.Request.Body)
		if err != nil {
			c.Status(http.StatusBadRequest)
			return
		}
		out, status := answerByHand(secret, c.GetHeader(adaptertest.SignatureHeader), body)
		c.Data(status, adaptertest.ContentType, out)
	})
	return r
}

func byHandEcho(secret []byte) http.Handler {
	e := echo.New()
	e.POST(adaptertest.Path, func(c echo.Context) error {
		body, err := io.ReadAll(c.Request().Body)
		if err != nil {
			return err
		}
		out, status := answerByHand(secret, c.Request().Header.Get(adaptertest.SignatureHeader), body)
		return c.Blob(status, adaptertest.ContentType, out)
	})
	return e
}

func byHandChi(secret []byte) http.Handler {
	r := chi.NewRouter()
	r.Post(adaptertest.Path, func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		out, status := answerByHand(secret, r.Header.Get(adaptertest.SignatureHeader), body)
		w.Header().Set("Content-Type", adaptertest.ContentType)
		w.WriteHeader(status)
		_, _ = w.Write(out)
	})
	return r
}

func bareGin(answer []byte) http.Handler {
	r := gin.New()
	r.POST(adaptertest.Path, func(c *gin.Context) {
		if _, err := io.ReadAll(c.Request.Body); err != nil {
			c.Status(http.StatusBadRequest)
			return
		}
		c.Data(http.StatusOK, adaptertest.ContentType, answer)
	})
	return r
}

func bareEcho(answer []byte) http.Handler {
	e := echo.New()
	e.POST(adaptertest.Path, func(c echo.Context) error {
		if _, err := io.ReadAll(c.Request().Body); err != nil {
			return err
		}
		return c.Blob(http.StatusOK, adaptertest.ContentType, answer)
	})
	return e
}

func bareChi(answer []byte) http.Handler {
	r := chi.NewRouter()
	r.Post(adaptertest.Path, func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", adaptertest.ContentType)
		_, _ = w.Write(answer)
	})
	return r
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

// benchFiberHandler sends r through a fasthttp handler b.N times.
func benchFiberHandler(b *testing.B, handler fasthttp.RequestHandler, r adaptertest.Request, status int) {
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod(r.Method)
	ctx.Request.SetRequestURI(adaptertest.Path)
	if r.Signature != nil {
		ctx.Request.Header.Set(adaptertest.SignatureHeader, *r.Signature)
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
