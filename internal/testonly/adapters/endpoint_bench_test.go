package adapters_test

import (
	"bytes"
	"context"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	hertzapp "github.com/cloudwego/hertz/pkg/app"
	hertzserver "github.com/cloudwego/hertz/pkg/app/server"
	hertzroute "github.com/cloudwego/hertz/pkg/route"
	"github.com/gin-gonic/gin"
	"github.com/go-chi/chi/v5"
	fiberv2 "github.com/gofiber/fiber/v2"
	fiberv3 "github.com/gofiber/fiber/v3"
	echov4 "github.com/labstack/echo/v4"
	echov5 "github.com/labstack/echo/v5"
	"github.com/valyala/fasthttp"

	"github.com/median-go/median/chimedian"
	"github.com/median-go/median/echomedian"
	echov5median "github.com/median-go/median/echomedian/v5"
	"github.com/median-go/median/fibermedian"
	fiberv3median "github.com/median-go/median/fibermedian/v3"
	"github.com/median-go/median/ginmedian"
	"github.com/median-go/median/internal/testonly/adaptertest"
	"github.com/median-go/median/internal/testonly/testsupport"
	"github.com/median-go/median/protocol"
)

// BenchmarkEndpoint puts each of the eight mounts (a signed tool call
// whose tool echoes its input, through Mount, replay protection off:
// impl=median) beside a handler written by hand for the same framework
// (impl=byhand): it reads the body the framework's way, checks the HMAC of
// "<t>.<body>" with crypto/hmac under the key set up once (pooled HMAC
// state, as the core keeps), decodes the body and encodes the answer with
// encoding/json, and does none of the rest (no window, no field checks, no
// schema, no error answers). Both answer the same bytes (checked before
// timing). Interleave the pairs and read the ratio per framework:
//
//	go test -c -o adapters.test ./internal/adapters
//	for i in $(seq 8); do ./adapters.test -test.run '^$' -test.bench 'Endpoint$' -test.benchmem -test.count 1; done > endpoint.txt
//	benchstat -row /fw -col /impl endpoint.txt
//
// BenchmarkEndpointPaired times the same pairs in alternating blocks.
func BenchmarkEndpoint(b *testing.B) {
	for _, e := range endpoints(b) {
		for _, impl := range []struct {
			name   string
			sender func(*testing.B) func()
		}{{"median", e.median}, {"byhand", e.byHand}} {
			b.Run("fw="+e.name+"/impl="+impl.name, func(b *testing.B) { benchLoop(b, impl.sender(b)) })
		}
	}
}

// BenchmarkEndpointPaired times each mount of BenchmarkEndpoint and its
// by-hand handler as a paired comparison (testsupport.Paired): alternating
// blocks of 64 calls, each block timed on its own. It reports
// median-ns/op, byhand-ns/op and their ratio, median/byhand, for each
// framework:
//
//	for i in $(seq 8); do ./adapters.test -test.run '^$' -test.bench EndpointPaired -test.count 1; done > paired.txt
//	benchstat -filter '.unit:median/byhand' -row /fw paired.txt
func BenchmarkEndpointPaired(b *testing.B) {
	for _, e := range endpoints(b) {
		b.Run("fw="+e.name, func(b *testing.B) {
			median, byHand := e.median(b), e.byHand(b)
			testsupport.Paired(b, 64, [2]string{"median", "byhand"}, [2]func(int){func(int) { median() }, func(int) { byHand() }}, nil)
		})
	}
}

// endpoint is one mount of BenchmarkEndpoint: for the benchmark that runs
// it, a function that sends the signed call through the core (median) or
// through the by-hand handler (byHand) and fails the benchmark unless it
// is answered 200.
type endpoint struct {
	name           string
	median, byHand func(*testing.B) func()
}

// endpoints returns the eight mounts of BenchmarkEndpoint, each checked to
// answer the same bytes through the core and by hand.
func endpoints(b *testing.B) []endpoint {
	h, _ := adaptertest.NewHandler(func(cfg *protocol.Config) { cfg.DisableReplayProtection = true })
	req := adaptertest.Signed(http.MethodPost, adaptertest.ToolCall(adaptertest.ToolEcho, "call_bench", `{"text":"bench"}`))
	answer := []byte(`{"result":{"text":"bench","visitor":"user_7"}}`)
	secret, err := hkdf.Key(sha256.New, []byte(adaptertest.Key), nil, "median tool signing v1", 32)
	if err != nil {
		b.Fatal(err)
	}
	k := newByHandKey(secret)
	netHTTP := func(handler http.Handler) func(*testing.B) func() {
		return func(b *testing.B) func() { return netHTTPSender(b, handler, req, http.StatusOK) }
	}
	fiber := func(handler fasthttp.RequestHandler) func(*testing.B) func() {
		return func(b *testing.B) func() { return fiberSender(b, handler, req, http.StatusOK) }
	}
	var out []endpoint
	for _, fw := range []struct {
		name           string
		median, byHand http.Handler
	}{
		{"net-http", endpointServeMux(h), k.serveMux()},
		{"gin", endpointGin(h), k.gin()},
		{"echo-v4", endpointEcho(h), k.echoV4()},
		{"echo-v5", endpointEchoV5(h), k.echoV5()},
		{"chi", endpointChi(h), k.chi()},
	} {
		checkSame(b, fw.name, answer, req, map[string]http.Handler{"median": fw.median, "byhand": fw.byHand})
		out = append(out, endpoint{fw.name, netHTTP(fw.median), netHTTP(fw.byHand)})
	}
	for _, fw := range []struct {
		name           string
		median, byHand fasthttp.RequestHandler
	}{
		{"fiber-v2", endpointFiberV2(h), k.fiberV2()},
		{"fiber-v3", endpointFiberV3(h), k.fiberV3()},
	} {
		for impl, handler := range map[string]fasthttp.RequestHandler{"median": fw.median, "byhand": fw.byHand} {
			if got := fiberAnswer(handler, req); !bytes.Equal(got, answer) {
				b.Fatalf("%s %s answers %s, want %s", fw.name, impl, got, answer)
			}
		}
		out = append(out, endpoint{fw.name, fiber(fw.median), fiber(fw.byHand)})
	}
	hertzMedian, hertzByHand := endpointHertz(h), k.hertz()
	for impl, engine := range map[string]*hertzroute.Engine{"median": hertzMedian, "byhand": hertzByHand} {
		if got := hertzAnswer(engine, req); !bytes.Equal(got, answer) {
			b.Fatalf("hertz %s answers %s, want %s", impl, got, answer)
		}
	}
	hertz := func(engine *hertzroute.Engine) func(*testing.B) func() {
		return func(b *testing.B) func() { return hertzSender(b, engine, req, http.StatusOK) }
	}
	return append(out, endpoint{"hertz", hertz(hertzMedian), hertz(hertzByHand)})
}

// The endpoint-mode mounts the benchmarks measure: each adapter's
// Mount(app, adaptertest.Path, h) on a new app of its framework.

func endpointServeMux(h *protocol.Handler) http.Handler {
	mux := http.NewServeMux()
	h.Mount(mux, adaptertest.Path)
	return mux
}

func endpointGin(h *protocol.Handler) http.Handler {
	r := gin.New()
	ginmedian.Mount(r, adaptertest.Path, h)
	return r
}

func endpointEcho(h *protocol.Handler) http.Handler {
	e := echov4.New()
	echomedian.Mount(e, adaptertest.Path, h)
	return e
}

func endpointChi(h *protocol.Handler) http.Handler {
	r := chi.NewRouter()
	chimedian.Mount(r, adaptertest.Path, h)
	return r
}

func endpointEchoV5(h *protocol.Handler) http.Handler {
	e := echov5.New()
	echov5median.Mount(e, adaptertest.Path, h)
	return e
}

func endpointFiberV2(h *protocol.Handler) fasthttp.RequestHandler {
	app := fiberv2.New(fiberv2.Config{DisableStartupMessage: true})
	fibermedian.Mount(app, adaptertest.Path, h)
	return app.Handler()
}

func endpointFiberV3(h *protocol.Handler) fasthttp.RequestHandler {
	app := fiberv3.New()
	fiberv3median.Mount(app, adaptertest.Path, h)
	return app.Handler()
}

// byHandKey is the by-hand endpoints' key, set up once: the derived secret
// and pooled HMAC state under it.
type byHandKey struct{ macs sync.Pool }

func newByHandKey(secret []byte) *byHandKey {
	k := &byHandKey{}
	k.macs.New = func() any { return hmac.New(sha256.New, secret) }
	return k
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

// answer is the least an endpoint answering the echo call must do: one
// HMAC check, one decode, one encode.
func (k *byHandKey) answer(header string, body []byte) ([]byte, int) {
	ts, v1, _ := strings.Cut(strings.TrimPrefix(header, "t="), ",v1=")
	var want [sha256.Size]byte
	if len(v1) != 2*len(want) {
		return nil, http.StatusUnauthorized
	}
	if _, err := hex.Decode(want[:], []byte(v1)); err != nil {
		return nil, http.StatusUnauthorized
	}
	mac := k.macs.Get().(hash.Hash)
	mac.Reset()
	mac.Write([]byte(ts))
	mac.Write([]byte{'.'})
	mac.Write(body)
	var sum [sha256.Size]byte
	ok := hmac.Equal(mac.Sum(sum[:0]), want[:])
	k.macs.Put(mac)
	if !ok {
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

// writeNetHTTP answers on a net/http writer.
func (k *byHandKey) writeNetHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	out, status := k.answer(r.Header.Get(adaptertest.SignatureHeader), body)
	w.Header().Set("Content-Type", adaptertest.ContentType)
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

func (k *byHandKey) serveMux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(adaptertest.Path, k.writeNetHTTP)
	return mux
}

func (k *byHandKey) chi() http.Handler {
	r := chi.NewRouter()
	r.Post(adaptertest.Path, k.writeNetHTTP)
	return r
}

func (k *byHandKey) gin() http.Handler {
	r := gin.New()
	r.POST(adaptertest.Path, func(c *gin.Context) {
		body, err := io.ReadAll(c.Request.Body)
		if err != nil {
			c.Status(http.StatusBadRequest)
			return
		}
		out, status := k.answer(c.GetHeader(adaptertest.SignatureHeader), body)
		c.Data(status, adaptertest.ContentType, out)
	})
	return r
}

func (k *byHandKey) echoV4() http.Handler {
	e := echov4.New()
	e.POST(adaptertest.Path, func(c echov4.Context) error {
		body, err := io.ReadAll(c.Request().Body)
		if err != nil {
			return err
		}
		out, status := k.answer(c.Request().Header.Get(adaptertest.SignatureHeader), body)
		return c.Blob(status, adaptertest.ContentType, out)
	})
	return e
}

func (k *byHandKey) echoV5() http.Handler {
	e := echov5.New()
	e.POST(adaptertest.Path, func(c *echov5.Context) error {
		body, err := io.ReadAll(c.Request().Body)
		if err != nil {
			return err
		}
		out, status := k.answer(c.Request().Header.Get(adaptertest.SignatureHeader), body)
		return c.Blob(status, adaptertest.ContentType, out)
	})
	return e
}

func (k *byHandKey) fiberV2() fasthttp.RequestHandler {
	app := fiberv2.New(fiberv2.Config{DisableStartupMessage: true})
	app.Post(adaptertest.Path, func(c *fiberv2.Ctx) error {
		out, status := k.answer(c.Get(adaptertest.SignatureHeader), c.Body())
		c.Set(fiberv2.HeaderContentType, adaptertest.ContentType)
		return c.Status(status).Send(out)
	})
	return app.Handler()
}

func (k *byHandKey) hertz() *hertzroute.Engine {
	hz := hertzserver.New(hertzserver.WithDisablePrintRoute(true))
	hz.POST(adaptertest.Path, func(_ context.Context, c *hertzapp.RequestContext) {
		out, status := k.answer(string(c.GetHeader(adaptertest.SignatureHeader)), c.Request.Body())
		c.Data(status, adaptertest.ContentType, out)
	})
	return hz.Engine
}

// hertzAnswer sends r through engine once and returns the answer's body.
func hertzAnswer(engine *hertzroute.Engine, r adaptertest.Request) []byte {
	c := engine.NewContext()
	c.Request.Header.SetMethod(r.Method)
	c.Request.SetRequestURI(adaptertest.Path)
	c.Request.Header.SetHost("example.test")
	c.Request.Header.Set(adaptertest.SignatureHeader, *r.Signature)
	c.Request.SetBody(r.Body)
	engine.ServeHTTP(context.Background(), c)
	return bytes.Clone(c.Response.Body())
}

func (k *byHandKey) fiberV3() fasthttp.RequestHandler {
	app := fiberv3.New()
	app.Post(adaptertest.Path, func(c fiberv3.Ctx) error {
		out, status := k.answer(c.Get(adaptertest.SignatureHeader), c.Body())
		c.Set(fiberv3.HeaderContentType, adaptertest.ContentType)
		return c.Status(status).Send(out)
	})
	return app.Handler()
}
