package errorleak

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/median-go/median/internal/testonly/testsupport"
	"github.com/median-go/median/otelmedian"
	"github.com/median-go/median/protocol"
)

// testKey signs every request Check sends.
const testKey = "mk_test_errorleak_0123456789abcdefghijklmn"

// Leak is one tool's error and what of it must stay in the server.
type Leak struct {
	Tool    string   // the tool that returns Err: a name of its own per Leak
	Err     error    // made for real where it can be
	Secrets []string // substrings of Err's text that only the log may hold
}

// ClosedPort returns a loopback port nothing listens on: one the kernel
// just gave and took back.
func ClosedPort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// hidden is the message the agent reads of an error not meant for it.
var hidden = regexp.MustCompile(`^tool ([a-zA-Z0-9_-]+) failed \(reference ([0-9a-f]{8})\); the server's log has the details$`)

// Check serves one signed call of a tool per leak, on a Handler observed
// by otelmedian with the content option on (so that any message would
// reach the span), and asserts for each: the answer is execution_failed
// naming the tool and a reference; the report's lastFailure (as Median
// gets it and whole, as Handler.Report returns it) and the span's status
// are that message; the Event and the span carry the reference; none of
// the leak's secrets is in the answer, the Event's answer, the report, the
// span or the metrics; and one log line, at level ERROR, holds the error's
// whole text under the reference.
func Check(t *testing.T, leaks []Leak) {
	t.Helper()
	for _, l := range leaks {
		for _, s := range l.Secrets {
			require.Contains(t, l.Err.Error(), s, "the premise: %s's error holds %q", l.Tool, s)
		}
	}
	e := newEnv(t, leaks)
	refs, messages, answers := map[string]string{}, map[string]string{}, map[string][]byte{}
	for _, l := range leaks {
		body := e.post(t, `{"tool":"`+l.Tool+`","toolCallId":"call_`+l.Tool+`","input":{},"context":{"conversationId":"c","risk":"low","visitor":{"verified":false}}}`)
		var a struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		require.NoError(t, json.Unmarshal(body, &a), "body %s", body)
		assert.Equal(t, string(protocol.CodeExecutionFailed), a.Error.Code, l.Tool)
		m := hidden.FindStringSubmatch(a.Error.Message)
		require.NotNil(t, m, "%s: the agent reads the tool's name and a reference, got %q", l.Tool, a.Error.Message)
		assert.Equal(t, l.Tool, m[1])
		refs[l.Tool], messages[l.Tool], answers[l.Tool] = m[2], a.Error.Message, body
	}

	// The report as Median gets it (cut to 2,000 characters, so it may
	// leave tools out) and whole.
	reportBody := e.post(t, `{"op":"diagnostics"}`)
	report := e.h.Report(context.Background())
	wholeReport, err := json.Marshal(report)
	require.NoError(t, err)
	logLines := e.logLines(t)
	spans := e.spanTexts()
	metrics := e.metricText(t)

	for _, l := range leaks {
		t.Run(l.Tool, func(t *testing.T) {
			ref := refs[l.Tool]
			assert.Equal(t, messages[l.Tool], report.Tools[l.Tool].LastFailure.Message, "the report's lastFailure is the answered message")
			ev, ok := e.event(l.Tool)
			require.True(t, ok, "an event for the call")
			assert.Equal(t, ref, ev.ErrorRef, "the Event carries the reference")
			span, ok := spans[l.Tool]
			require.True(t, ok, "a span for the call")
			assert.Contains(t, span, "median.error.ref="+ref+"|", "the span carries the reference")
			assert.Contains(t, span, "|"+messages[l.Tool]+"|", "the span's status is the answered message")
			for _, s := range l.Secrets {
				assert.NotContains(t, string(answers[l.Tool]), s, "the answer")
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
			assert.Equal(t, l.Err.Error(), logged[0]["error"], "the log has the error's whole text")
			assert.Equal(t, l.Tool, logged[0]["tool"])
			assert.Equal(t, "ERROR", logged[0]["level"])
		})
	}
}

// env is a Handler whose tools fail with the leaks' errors, and what it
// records: its log, its events, spans and metrics.
type env struct {
	h      *protocol.Handler
	key    protocol.Key
	logs   testsupport.Buffer
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	mu     sync.Mutex
	events []protocol.Event
}

func newEnv(t *testing.T, leaks []Leak) *env {
	t.Helper()
	e := &env{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(e.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(e.reader))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	obs, err := otelmedian.New(otelmedian.WithTracerProvider(tp), otelmedian.WithMeterProvider(mp), otelmedian.WithInputAndResult())
	require.NoError(t, err)
	var tools []*protocol.Tool
	for _, l := range leaks {
		tools = append(tools, protocol.NewTool(l.Tool, protocol.RiskLow, "Fails with a real error.",
			func(context.Context, protocol.ToolCall[struct{}]) (any, error) { return nil, l.Err }))
	}
	e.h, err = protocol.New(protocol.Config{
		Keys: []string{testKey}, Tools: tools, Logger: slog.New(slog.NewJSONHandler(&e.logs, nil)),
		Observer: func(ctx context.Context, ev protocol.Event) {
			e.mu.Lock()
			ev.Answer = bytes.Clone(ev.Answer)
			e.events = append(e.events, ev)
			e.mu.Unlock()
			obs.Observe(ctx, ev)
		},
	})
	require.NoError(t, err)
	e.key, err = protocol.ParseKey(testKey)
	require.NoError(t, err)
	return e
}

// post sends body signed now and returns the 200 answer's body.
func (e *env) post(t *testing.T, body string) []byte {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/api/median", strings.NewReader(body))
	req.Header.Set("median-signature", e.key.Sign(time.Now(), []byte(body)))
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code, "body %s", rec.Body)
	return rec.Body.Bytes()
}

// event returns the last event of a call of tool.
func (e *env) event(tool string) (protocol.Event, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := len(e.events) - 1; i >= 0; i-- {
		if e.events[i].Tool == tool {
			return e.events[i], true
		}
	}
	return protocol.Event{}, false
}

// logLines decodes every JSON log line.
func (e *env) logLines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(e.logs.String()) {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "log line %q", line)
		out = append(out, m)
	}
	return out
}

// spanTexts is everything each tool's span holds (name, status,
// attributes, events), as one string per tool.
func (e *env) spanTexts() map[string]string {
	out := map[string]string{}
	for _, s := range e.spans.Ended() {
		var b strings.Builder
		b.WriteString(s.Name() + "|" + s.Status().Description + "|")
		for _, kv := range s.Attributes() {
			b.WriteString(string(kv.Key) + "=" + kv.Value.String() + "|")
		}
		for _, ev := range s.Events() {
			b.WriteString(ev.Name + "|")
			for _, kv := range ev.Attributes {
				b.WriteString(string(kv.Key) + "=" + kv.Value.String() + "|")
			}
		}
		out[strings.TrimPrefix(s.Name(), "execute_tool ")] = b.String()
	}
	return out
}

// metricText is every attribute of every metric point, as one string.
func (e *env) metricText(t *testing.T) string {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, e.reader.Collect(context.Background(), &rm))
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
	require.NotZero(t, b.Len(), "no metric was recorded; the check itself is broken")
	return b.String()
}
