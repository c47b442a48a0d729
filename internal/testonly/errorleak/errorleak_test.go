package errorleak

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/median-go/median/otelmedian"
	"github.com/median-go/median/protocol"
)

// testKey signs every request of the test.
const testKey = "mk_test_errorleak_0123456789abcdefghijklmn"

// Secrets of the test's errors: none may leave the server but by its log.
const (
	dbUser     = "leak_user_q7"
	dbPassword = "leak-pass-Z9x"
	dbName     = "leak_db_q7"
	urlUser    = "svc_q7"
	urlPass    = "url-pass-K4w"
	urlHost    = "orders-q7.internal"
	urlPort    = "8443"
	dirName    = "leak-dir-q7"
)

// closedPort returns a loopback port nothing listens on: one the kernel
// just gave and took back.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// leak is one tool's error and what of it must stay in the server.
type leak struct {
	tool    string
	err     error
	secrets []string
}

// realErrors makes each error for real, where it can be: pgx connecting
// to a closed port with a password in its connection string, a dial to a
// closed port inside a *url.Error whose URL holds a password (net/http
// would strip it, an app building its own *url.Error might not), and
// opening a file that is not there. Each comes plain and wrapped.
func realErrors(t *testing.T) []leak {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	pgPort := strconv.Itoa(closedPort(t))
	pool, err := pgxpool.New(ctx, "postgres://"+dbUser+":"+dbPassword+"@127.0.0.1:"+pgPort+"/"+dbName+"?sslmode=disable&connect_timeout=5")
	require.NoError(t, err, "pgxpool.New connects lazily")
	defer pool.Close()
	var status string
	pgErr := pool.QueryRow(ctx, "SELECT status FROM orders WHERE id = $1", "A-1").Scan(&status)
	require.Error(t, pgErr)
	for _, s := range []string{dbUser, dbName, "127.0.0.1", pgPort} {
		require.Contains(t, pgErr.Error(), s, "the premise: pgx's error names the connection's %s", s)
	}

	dialPort := strconv.Itoa(closedPort(t))
	_, dialErr := net.DialTimeout("tcp", "127.0.0.1:"+dialPort, 5*time.Second)
	require.Error(t, dialErr)
	urlErr := &url.Error{Op: "Get", URL: "https://" + urlUser + ":" + urlPass + "@" + urlHost + ":" + urlPort + "/v1/orders/A-1", Err: dialErr}
	require.Contains(t, urlErr.Error(), urlPass, "the premise: the URL's password is in the error")

	path := filepath.Join(t.TempDir(), dirName, "orders.json")
	_, pathErr := os.Open(path)
	var pe *os.PathError
	require.ErrorAs(t, pathErr, &pe)
	require.Contains(t, pathErr.Error(), path)

	pgSecrets := []string{dbUser, dbPassword, dbName, "127.0.0.1", pgPort}
	urlSecrets := []string{urlUser, urlPass, urlHost, urlPort, "127.0.0.1", dialPort}
	pathSecrets := []string{path, dirName, filepath.Dir(path)}
	return []leak{
		{"pg_down", pgErr, pgSecrets},
		{"pg_down_wrapped", fmt.Errorf("lookup order A-1: %w", pgErr), pgSecrets},
		{"url_error", urlErr, urlSecrets},
		{"url_error_wrapped", fmt.Errorf("warehouse stock: %w", urlErr), urlSecrets},
		{"path_error", pathErr, pathSecrets},
		{"path_error_wrapped", fmt.Errorf("read the order export: %w", pathErr), pathSecrets},
	}
}

// events collects the Handler's events; safe for concurrent use.
type events struct {
	mu  sync.Mutex
	all []protocol.Event
}

func (e *events) add(_ context.Context, ev protocol.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ev.Answer = bytes.Clone(ev.Answer)
	e.all = append(e.all, ev)
}

// hidden is the message the agent reads of an error not meant for it.
var hidden = regexp.MustCompile(`^tool ([a-z_]+) failed \(reference ([0-9a-f]{8})\); the server's log has the details$`)

// TestInfrastructureErrorsReachOnlyTheLog: each real error is answered
// execution_failed with the tool's name and a reference, the same message
// is the report's lastFailure and the span's, the Event and the span carry
// the reference, and the log holds the error's whole text under it.
// Nothing of the error is in the answer, the report, a span or a metric.
func TestInfrastructureErrorsReachOnlyTheLog(t *testing.T) {
	leaks := realErrors(t)

	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(lockedWriter{&logMu, &logs}, nil))
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	// With the content option on, so that any message would reach the span.
	obs, err := otelmedian.New(otelmedian.WithTracerProvider(tp), otelmedian.WithMeterProvider(mp), otelmedian.WithInputAndResult())
	require.NoError(t, err)
	evs := &events{}
	var tools []*protocol.Tool
	for _, l := range leaks {
		tools = append(tools, protocol.NewTool(l.tool, protocol.RiskLow, "Fails with a real error.",
			func(context.Context, protocol.ToolCall[struct{}]) (any, error) { return nil, l.err }))
	}
	h, err := protocol.New(protocol.Config{
		Keys: []string{testKey}, Tools: tools, Logger: logger,
		Observer: func(ctx context.Context, ev protocol.Event) { evs.add(ctx, ev); obs.Observe(ctx, ev) },
	})
	require.NoError(t, err)
	key, err := protocol.ParseKey(testKey)
	require.NoError(t, err)
	post := func(body string) []byte {
		req := httptest.NewRequest(http.MethodPost, "/api/median", strings.NewReader(body))
		req.Header.Set("median-signature", key.Sign(time.Now(), []byte(body)))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		require.Equal(t, http.StatusOK, rec.Code, "body %s", rec.Body)
		return rec.Body.Bytes()
	}

	refs := map[string]string{}
	messages := map[string]string{}
	answers := map[string][]byte{}
	for _, l := range leaks {
		body := post(`{"tool":"` + l.tool + `","toolCallId":"call_` + l.tool + `","input":{},"context":{"conversationId":"c","risk":"low","visitor":{"verified":false}}}`)
		var a struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		require.NoError(t, json.Unmarshal(body, &a), "body %s", body)
		assert.Equal(t, string(protocol.CodeExecutionFailed), a.Error.Code, l.tool)
		m := hidden.FindStringSubmatch(a.Error.Message)
		require.NotNil(t, m, "%s: the agent reads the tool's name and a reference, got %q", l.tool, a.Error.Message)
		assert.Equal(t, l.tool, m[1])
		refs[l.tool], messages[l.tool], answers[l.tool] = m[2], a.Error.Message, body
	}

	// The report as Median gets it (cut to 2,000 characters, so it may
	// leave tools out) and whole, as Handler.Report returns it.
	reportBody := post(`{"op":"diagnostics"}`)
	report := h.Report(context.Background())
	wholeReport, err := json.Marshal(report)
	require.NoError(t, err)

	var logLines []map[string]any
	logMu.Lock()
	for line := range strings.Lines(logs.String()) {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "log line %q", line)
		logLines = append(logLines, m)
	}
	logMu.Unlock()

	spanText := map[string]string{}
	for _, s := range spans.Ended() {
		var b strings.Builder
		b.WriteString(s.Name() + "|" + s.Status().Description + "|")
		for _, kv := range s.Attributes() {
			b.WriteString(string(kv.Key) + "=" + kv.Value.Emit() + "|")
		}
		for _, ev := range s.Events() {
			b.WriteString(ev.Name + "|")
			for _, kv := range ev.Attributes {
				b.WriteString(string(kv.Key) + "=" + kv.Value.Emit() + "|")
			}
		}
		spanText[strings.TrimPrefix(s.Name(), "execute_tool ")] = b.String()
	}
	metrics := metricText(t, reader)

	for _, l := range leaks {
		t.Run(l.tool, func(t *testing.T) {
			ref := refs[l.tool]
			assert.Equal(t, messages[l.tool], report.Tools[l.tool].LastFailure.Message, "the report's lastFailure is the answered message")

			var ev *protocol.Event
			for i := range evs.all {
				if evs.all[i].Tool == l.tool {
					ev = &evs.all[i]
				}
			}
			require.NotNil(t, ev, "an event for the call")
			assert.Equal(t, ref, ev.ErrorRef, "the Event carries the reference")

			span, ok := spanText[l.tool]
			require.True(t, ok, "a span for the call")
			assert.Contains(t, span, "median.error.ref="+ref+"|", "the span carries the reference")
			assert.Contains(t, span, "|"+messages[l.tool]+"|", "the span's status is the answered message")

			for _, s := range l.secrets {
				assert.NotContains(t, string(answers[l.tool]), s, "the answer")
				assert.NotContains(t, string(ev.Answer), s, "the Event's answer")
				assert.NotContains(t, string(reportBody), s, "the report")
				assert.NotContains(t, string(wholeReport), s, "the whole report")
				assert.NotContains(t, span, s, "the span")
				assert.NotContains(t, metrics, s, "the metrics")
			}

			var logged []map[string]any
			for _, line := range logLines {
				if line["errorRef"] == ref {
					logged = append(logged, line)
				}
			}
			require.Len(t, logged, 1, "one log line under the reference")
			assert.Equal(t, l.err.Error(), logged[0]["error"], "the log has the error's whole text")
			assert.Equal(t, l.tool, logged[0]["tool"])
			assert.Equal(t, "ERROR", logged[0]["level"])
		})
	}
}

// lockedWriter serializes writes to a buffer.
type lockedWriter struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// metricText is every attribute of every metric point, as one string.
func metricText(t *testing.T, reader *sdkmetric.ManualReader) string {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	var b strings.Builder
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range data.DataPoints {
					b.WriteString(dp.Attributes.Encoded(nil) + "|")
				}
			case metricdata.Histogram[float64]:
				for _, dp := range data.DataPoints {
					b.WriteString(dp.Attributes.Encoded(nil) + "|")
				}
			default:
				t.Fatalf("unexpected metric data %T for %s", data, m.Name)
			}
		}
	}
	if b.Len() == 0 {
		t.Fatal("no metric was recorded; the check itself is broken")
	}
	return b.String()
}
