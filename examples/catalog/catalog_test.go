package catalog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/examples/catalog"
	"github.com/median-go/median/examples/catalog/catalogtest"
	"github.com/median-go/median/internal/testonly/redistest"
	"github.com/median-go/median/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.DiscardHandler)

func TestOrdersCancelOnceUnderConcurrency(t *testing.T) {
	orders := catalog.NewOrders()
	const n = 32
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = orders.Cancel(t.Context(), "A-1001") })
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
			continue
		}
		var already *catalog.AlreadyCancelledError
		require.ErrorAs(t, err, &already)
		assert.Equal(t, "order A-1001 is already cancelled", err.Error())
	}
	assert.Equal(t, 1, ok, "exactly one cancel must succeed")
	status, err := orders.Status(t.Context(), "A-1001")
	require.NoError(t, err)
	assert.Equal(t, catalog.StatusCancelled, status)
}

func TestOrdersMissing(t *testing.T) {
	orders := catalog.NewOrders()
	_, err := orders.Status(t.Context(), catalog.MissingOrderID)
	var nf *catalog.NotFoundError
	require.ErrorAs(t, err, &nf)
	assert.Equal(t, "order missing not found", err.Error())
	assert.EqualError(t, orders.Cancel(t.Context(), catalog.MissingOrderID), "order missing not found")
}

func TestDispatch(t *testing.T) {
	orders := catalog.NewOrders()
	call := &protocol.Call{Tool: catalog.CancelOrderTool, RawInput: []byte(`{"orderId":"D-1"}`)}
	got, err := catalog.Dispatch(t.Context(), orders, call)
	require.NoError(t, err)
	assert.Equal(t, catalog.Cancellation{OrderID: "D-1", Cancelled: true}, got)

	call = &protocol.Call{Tool: catalog.LookupOrderTool, RawInput: []byte(`{"orderId":"D-1"}`)}
	_, err = catalog.Dispatch(t.Context(), orders, call)
	var refusal *protocol.Refusal
	require.ErrorAs(t, err, &refusal, "an anonymous visitor is refused")
	assert.Equal(t, "not_signed_in", refusal.Reason)

	call.Visitor = protocol.NewVisitor(true, "user_7", "", "")
	got, err = catalog.Dispatch(t.Context(), orders, call)
	require.NoError(t, err)
	assert.Equal(t, catalog.StatusCancelled, got.(catalog.Order).Status)
	assert.Equal(t, "/orders/D-1", got.(catalog.Order).NavigateTo)

	assert.False(t, catalog.Has("refund_order"))
	_, err = catalog.Dispatch(t.Context(), orders, &protocol.Call{Tool: "refund_order", RawInput: []byte(`{}`)})
	assert.Error(t, err)
}

func TestNewGeneratesAWarnedDevKeyWhenNoneIsSet(t *testing.T) {
	for _, key := range []string{"", "  \t"} {
		var warnings bytes.Buffer
		d, err := catalog.New(catalog.Options{Key: key, Warnings: &warnings, Logger: quiet})
		require.NoError(t, err)
		assert.True(t, d.DevKey)
		assert.Len(t, d.Key, catalog.DevKeyLength)
		_, err = protocol.ParseKey(d.Key)
		require.NoError(t, err, "the development key must be usable")
		assert.Contains(t, d.Fingerprint, "median key mk_")
		out := warnings.String()
		assert.Contains(t, out, "WARNING")
		assert.Contains(t, out, "DEVELOPMENT key")
		assert.Contains(t, out, "MEDIAN_KEY=")
		assert.Contains(t, out, d.Key)

		// The endpoint accepts calls signed with the development key.
		body := []byte(`{"op":"diagnostics"}`)
		req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		req.Header.Set(catalogtest.SignatureHeader, catalogtest.MustKey(d.Key).Sign(time.Now(), body))
		rec := httptest.NewRecorder()
		d.Handler.ServeHTTP(rec, req)
		assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		assert.Contains(t, rec.Body.String(), `"devKey":true`)
	}
	a, _ := catalog.New(catalog.Options{Warnings: &bytes.Buffer{}, Logger: quiet})
	b, _ := catalog.New(catalog.Options{Warnings: &bytes.Buffer{}, Logger: quiet})
	assert.NotEqual(t, a.Key, b.Key, "every start makes a new key")
}

func TestNewUsesTheGivenKeySilently(t *testing.T) {
	var warnings bytes.Buffer
	d, err := catalog.New(catalog.Options{Key: catalogtest.Key, Warnings: &warnings, Logger: quiet})
	require.NoError(t, err)
	assert.False(t, d.DevKey)
	assert.Empty(t, warnings.String())
	assert.Equal(t, catalogtest.MustKey(catalogtest.Key).String(), d.Fingerprint)
}

func TestNewWithAnUnusableKeyAnswers500(t *testing.T) {
	for key, code := range map[string]protocol.Code{"too short": protocol.CodeInvalidMedianKey, "": protocol.CodeMissingSecret} {
		d, err := catalog.New(catalog.Options{Key: key, NoDevKey: true, Logger: quiet})
		require.NoError(t, err, "a key problem is answered, not fatal")
		rec := httptest.NewRecorder()
		d.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		assert.Equal(t, http.StatusInternalServerError, rec.Code)
		assert.Contains(t, rec.Body.String(), string(code))
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv("MEDIAN_KEY", catalogtest.Key)
	t.Setenv("MEDIAN_REDIS_URL", "redis://127.0.0.1:6379/3")
	opts := catalog.FromEnv(quiet)
	assert.Equal(t, catalogtest.Key, opts.Key)
	assert.Equal(t, "redis://127.0.0.1:6379/3", opts.RedisURL)
	assert.Same(t, quiet, opts.Logger)
}

func TestNewRejectsABadRedisURL(t *testing.T) {
	_, err := catalog.New(catalog.Options{Key: catalogtest.Key, RedisURL: "http://not-redis", Logger: quiet})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MEDIAN_REDIS_URL")
}

func TestNewWithRedis(t *testing.T) {
	url := redistest.URL(t) // $MEDIAN_TEST_REDIS_URL, else a local server; skipped without one
	d, err := catalog.New(catalog.Options{Key: catalogtest.Key, RedisURL: url, Logger: quiet})
	require.NoError(t, err)
	defer d.Close()
	catalogtest.Run(t, conformance.HandlerTarget(d.Handler, catalogtest.MountPath, catalogtest.Key))
}

// diagnosticsReport is the demo's answer to a signed diagnostics request,
// as far as its tests read it, and the raw body.
type diagnosticsReport struct {
	Result struct {
		Keys []struct{ Fingerprint string }
		App  catalog.Diagnostics
	}
}

func requestDiagnostics(t *testing.T, h http.Handler) (diagnosticsReport, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	body := `{"op":"diagnostics"}`
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	req.Header.Set(catalogtest.SignatureHeader, catalogtest.MustKey(catalogtest.Key).Sign(time.Now(), []byte(body)))
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code, "body %s", rec.Body)
	var got diagnosticsReport
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
	return got, rec.Body.String()
}

func TestDiagnosticsShowTheFingerprintNotTheKey(t *testing.T) {
	d := catalogtest.NewDemo(t)
	got, raw := requestDiagnostics(t, d.Handler)
	require.Len(t, got.Result.Keys, 1, "body %s", raw)
	assert.Equal(t, catalogtest.MustKey(catalogtest.Key).Fingerprint(), got.Result.Keys[0].Fingerprint)
	assert.Equal(t, catalog.Diagnostics{CancelledOrders: 0, CancelledLimit: catalog.MaxCancelledOrders}, got.Result.App)
	assert.NotContains(t, raw, catalogtest.Key)

	// The app's entry follows the demo's state.
	require.NoError(t, d.Orders.Cancel(t.Context(), "A-1"))
	got, _ = requestDiagnostics(t, d.Handler)
	assert.Equal(t, 1, got.Result.App.CancelledOrders)
}

func TestAddr(t *testing.T) {
	os.Unsetenv("HOST") // t.Setenv below restores what was there
	t.Setenv("PORT", "")
	t.Setenv("MEDIAN_KEY", "")
	assert.Equal(t, "127.0.0.1:8080", catalog.Addr(), "without a key: loopback only")
	t.Setenv("PORT", "9090")
	assert.Equal(t, "127.0.0.1:9090", catalog.Addr())
	t.Setenv("MEDIAN_KEY", catalogtest.Key)
	assert.Equal(t, ":9090", catalog.Addr(), "with a key: every interface")
	t.Setenv("HOST", "0.0.0.0")
	assert.Equal(t, "0.0.0.0:9090", catalog.Addr(), "HOST chooses")
	t.Setenv("HOST", "::1")
	assert.Equal(t, "[::1]:9090", catalog.Addr())
}

func TestLoopbackOnly(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "127.0.0.2:80": true, "[::1]:8080": true, "localhost:8080": true,
		":8080": false, "0.0.0.0:8080": false, "[::]:8080": false, "192.168.1.5:80": false,
		"example.com:80": false, "garbage": false,
	} {
		assert.Equal(t, want, catalog.LoopbackOnly(addr), addr)
	}
}

// TestStartModes: docs/PROTOCOL.md §1.2, never fail open. A development
// key only on loopback; anywhere else no key is 500 missing_secret.
func TestStartModes(t *testing.T) {
	signedDiagnostics := func(key string) *http.Request {
		body := []byte(`{"op":"diagnostics"}`)
		req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		req.Header.Set(catalogtest.SignatureHeader, catalogtest.MustKey(key).Sign(time.Now(), body))
		return req
	}
	for _, addr := range []string{"127.0.0.1:8080", "[::1]:8080", "localhost:0", ""} {
		var warnings bytes.Buffer
		d, err := catalog.New(catalog.Options{Addr: addr, Warnings: &warnings, Logger: quiet})
		require.NoError(t, err)
		assert.True(t, d.DevKey, "no key on %q: a development key", addr)
		assert.Contains(t, warnings.String(), "DEVELOPMENT key")
		rec := httptest.NewRecorder()
		d.Handler.ServeHTTP(rec, signedDiagnostics(d.Key))
		assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	}
	for _, addr := range []string{":8080", "0.0.0.0:8080", "[::]:8080", "192.168.1.5:8080", "shop.example.com:443"} {
		var warnings bytes.Buffer
		d, err := catalog.New(catalog.Options{Addr: addr, Key: "   ", Warnings: &warnings, Logger: quiet})
		require.NoError(t, err, "the app still starts: its other routes work")
		assert.False(t, d.DevKey, "no key on %q: no development key", addr)
		assert.Empty(t, strings.TrimSpace(d.Key))
		out := warnings.String()
		assert.Contains(t, out, "ERROR: MEDIAN_KEY is not set")
		assert.Contains(t, out, addr)
		assert.NotContains(t, out, "DEVELOPMENT key")
		for _, key := range []string{catalogtest.Key, catalog.NewDevKey()} {
			rec := httptest.NewRecorder()
			d.Handler.ServeHTTP(rec, signedDiagnostics(key))
			assert.Equal(t, http.StatusInternalServerError, rec.Code)
			assert.Contains(t, rec.Body.String(), `"missing_secret"`)
		}
	}
	// A key in the environment is used on any address, with the retiring
	// one beside it.
	old := catalog.NewDevKey()
	d, err := catalog.New(catalog.Options{Addr: ":8080", Key: catalogtest.Key, PreviousKey: old, Warnings: io.Discard, Logger: quiet})
	require.NoError(t, err)
	assert.False(t, d.DevKey)
	for _, key := range []string{catalogtest.Key, old} {
		rec := httptest.NewRecorder()
		d.Handler.ServeHTTP(rec, signedDiagnostics(key))
		assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	}
}

func TestFromEnvReadsTheAddressAndTheRetiringKey(t *testing.T) {
	os.Unsetenv("HOST")
	t.Setenv("PORT", "9191")
	t.Setenv("MEDIAN_KEY", "")
	t.Setenv("MEDIAN_KEY_PREVIOUS", "")
	assert.Equal(t, "127.0.0.1:9191", catalog.FromEnv(quiet).Addr)
	t.Setenv("MEDIAN_KEY", catalogtest.Key)
	t.Setenv("MEDIAN_KEY_PREVIOUS", "previous-key-0123456789abcdefghijklmnop")
	opts := catalog.FromEnv(quiet)
	assert.Equal(t, ":9191", opts.Addr)
	assert.Equal(t, "previous-key-0123456789abcdefghijklmnop", opts.PreviousKey)
}

func TestNewServerSetsEveryTimeout(t *testing.T) {
	srv := catalog.NewServer(":0", http.NotFoundHandler())
	assert.Positive(t, srv.ReadHeaderTimeout)
	assert.Positive(t, srv.ReadTimeout)
	assert.Positive(t, srv.WriteTimeout)
	assert.Positive(t, srv.IdleTimeout)
}

func TestRunShutsDownWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	shutdownCalled := false
	errServe := errors.New("served until shutdown")
	go cancel()
	err := catalog.Run(ctx, func() error {
		<-stopped
		return errServe
	}, func(ctx context.Context) error {
		shutdownCalled = true
		_, hasDeadline := ctx.Deadline()
		assert.True(t, hasDeadline, "shutdown must be bounded")
		close(stopped)
		return nil
	})
	assert.True(t, shutdownCalled)
	assert.ErrorIs(t, err, errServe)
}

func TestRunReturnsWhenServeFails(t *testing.T) {
	errListen := errors.New("address already in use")
	err := catalog.Run(context.Background(), func() error { return errListen }, func(context.Context) error {
		t.Error("shutdown must not be called when serve returned by itself")
		return nil
	})
	assert.ErrorIs(t, err, errListen)
}

func TestServeStopsCleanly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.NoError(t, catalog.Serve(ctx, "127.0.0.1:0", http.NotFoundHandler()))
}

// TestCancelOrderRiskFloor: docs/PROTOCOL.md §9 on the demo catalog.
// cancel_order is declared high: a call at low, medium or reviewed risk, or
// at high without approvedBy, is refused approval_required and the order
// stays as it was; the approved call cancels it.
func TestCancelOrderRiskFloor(t *testing.T) {
	d := catalogtest.NewDemo(t)
	target := conformance.HandlerTarget(d.Handler, catalogtest.MountPath, catalogtest.Key)
	input := map[string]string{"orderId": "A-1001"}
	for _, tc := range []struct{ risk, approvedBy string }{
		{"low", ""}, {"medium", ""}, {"reviewed", "The reviewer"}, {"high", ""},
	} {
		r := conformance.CallTool[json.RawMessage](t, target, conformance.ToolSample{
			Tool: catalog.CancelOrderTool, Input: input, Risk: tc.risk, ApprovedBy: tc.approvedBy, Unapproved: tc.approvedBy == "",
		})
		require.NotNil(t, r.Refusal, "risk %s, approvedBy %q: %s", tc.risk, tc.approvedBy, r.Raw)
		assert.Equal(t, "approval_required", r.Refusal.Reason)
		assert.Equal(t, "blocked", r.Refusal.Outcome)
		status, err := d.Orders.Status(t.Context(), "A-1001")
		require.NoError(t, err)
		assert.NotEqual(t, catalog.StatusCancelled, status, "a refused call changes nothing")
	}
	r := conformance.CallTool[map[string]any](t, target, conformance.ToolSample{Tool: catalog.CancelOrderTool, Input: input, Risk: "high", ApprovedBy: "Ada"})
	require.Nil(t, r.Refusal, "%s", r.Raw)
	require.Nil(t, r.Error, "%s", r.Raw)
	status, err := d.Orders.Status(t.Context(), "A-1001")
	require.NoError(t, err)
	assert.Equal(t, catalog.StatusCancelled, status)
}

// TestToolCallsAreTraced: with an OpenTelemetry SDK installed as the global
// provider, the demo's tool calls become execute_tool spans.
func TestToolCallsAreTraced(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() {
		otel.SetTracerProvider(prev)
		_ = tp.Shutdown(context.Background())
	})
	d := catalogtest.NewDemo(t)
	target := conformance.HandlerTarget(d.Handler, catalogtest.MountPath, catalogtest.Key)
	r := conformance.CallTool[map[string]any](t, target, conformance.ToolSample{
		Tool: catalog.LookupOrderTool, Input: map[string]string{"orderId": "A-1001"}, Visitor: conformance.Visitor{Verified: true, ExternalID: "user_7"},
	})
	require.Nil(t, r.Error, "%s", r.Raw)
	var names []string
	for _, s := range rec.Ended() {
		names = append(names, s.Name())
	}
	assert.Contains(t, names, "execute_tool "+catalog.LookupOrderTool)
}

// TestRedisOutage: the example's Redis client (examples/catalog/redis.go)
// answers within the store deadline when Redis freezes or dies, runs no
// cancel_order then while the read-only lookup_order still answers, and
// recovers by itself when Redis comes back.
func TestRedisOutage(t *testing.T) {
	srv := redistest.Start(t) // skipped without a redis-server binary
	d, err := catalog.New(catalog.Options{Key: catalogtest.Key, RedisURL: "redis://" + srv.Addr + "/0", Logger: quiet})
	require.NoError(t, err)
	defer d.Close()
	target := conformance.HandlerTarget(d.Handler, catalogtest.MountPath, catalogtest.Key)
	verified := conformance.Visitor{Verified: true, ExternalID: "user_7"}
	lookup := func() conformance.Reply[map[string]any] {
		return conformance.CallTool[map[string]any](t, target, conformance.ToolSample{
			Tool: catalog.LookupOrderTool, Input: map[string]string{"orderId": "A-1001"}, Visitor: verified,
		})
	}
	orders := 0
	cancel := func() conformance.Reply[map[string]any] {
		orders++
		return conformance.CallTool[map[string]any](t, target, conformance.ToolSample{
			Tool: catalog.CancelOrderTool, Input: map[string]string{"orderId": fmt.Sprintf("O-%d", orders)}, Visitor: verified,
			Risk: "high", ApprovedBy: "A teammate",
		})
	}
	works := func(what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second) // the pool may need a moment to reconnect
		for {
			r := cancel()
			if r.Error == nil {
				assert.Equal(t, true, r.Result["cancelled"], what)
				return
			}
			require.True(t, time.Now().Before(deadline), "%s: still %s", what, r.Raw)
			time.Sleep(100 * time.Millisecond)
		}
	}
	fails := func(what string) {
		t.Helper()
		start := time.Now()
		r := cancel()
		require.NotNil(t, r.Error, "%s: %s", what, r.Raw)
		assert.Equal(t, protocol.CodeExecutionFailed, r.Error.Code)
		assert.Contains(t, r.Error.Message, "not run")
		// Bounds a hang, not a speed: the store deadline is 1 s.
		assert.Less(t, time.Since(start), 5*time.Second, what)
		status, err := d.Orders.Status(t.Context(), fmt.Sprintf("O-%d", orders))
		require.NoError(t, err)
		assert.Equal(t, catalog.StatusProcessing, status, "%s: the order was not cancelled", what)
		start = time.Now()
		l := lookup()
		require.Nil(t, l.Error, "%s: the read-only lookup_order still answers: %s", what, l.Raw)
		assert.Equal(t, "A-1001", l.Result["orderId"], what)
		assert.Less(t, time.Since(start), 5*time.Second, what)
	}
	works("before the outage")
	srv.Pause()
	fails("Redis frozen")
	srv.Resume()
	works("after SIGCONT")
	srv.Kill()
	fails("Redis killed")
	srv.Restart()
	works("after a restart")
}
