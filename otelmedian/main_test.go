package otelmedian_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/median-go/median/otelmedian"
	"github.com/median-go/median/protocol"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testKey signs every request of the tests.
const testKey = "mk_test_otelmedian_0123456789abcdefghijkl"

// Markers of personal data in the requests and answers: none may reach a
// span or a metric unless the operator opted in.
const (
	visitorID    = "visitor-ext-7731"
	visitorEmail = "jane.secret@example.com"
	visitorName  = "Jane Secretname"
	orderID      = "ORDER-SECRET-4242"
	orderStatus  = "STATUS-SECRET-shipped"
	conversation = "conv-secret-99"
)

type orderInput struct {
	OrderID string `json:"orderId" jsonschema:"minLength=1"`
}

type orderResult struct {
	OrderID string `json:"orderId"`
	Status  string `json:"status"`
}

// tools are the tools of every test Handler: one that answers, one that
// fails, one that refuses.
func tools() []*protocol.Tool {
	return []*protocol.Tool{
		protocol.NewTool("lookup_order", protocol.RiskLow, "Look up an order.",
			func(_ context.Context, call protocol.ToolCall[orderInput]) (orderResult, error) {
				return orderResult{OrderID: call.Input.OrderID, Status: orderStatus}, nil
			}),
		protocol.NewTool("charge_card", protocol.RiskMedium, "Charge the card.",
			func(context.Context, protocol.ToolCall[orderInput]) (orderResult, error) {
				// Marked for the agent, so the answer carries its message, and
				// with it a marker of personal data.
				return orderResult{}, protocol.AgentErrorf("payment gateway unreachable for %s", orderID)
			}),
		protocol.NewTool("cancel_order", protocol.RiskLow, "Cancel an order.",
			func(context.Context, protocol.ToolCall[orderInput]) (orderResult, error) {
				return orderResult{}, protocol.Refuse("not_signed_in", "Ask the customer to sign in.")
			}),
	}
}

// callBody is a ToolCall as Median sends it, with a verified visitor whose
// details must never be recorded.
func callBody(tool, id, input string, risk protocol.Risk) string {
	return `{"tool":"` + tool + `","toolCallId":"` + id + `","input":` + input + `,` +
		`"context":{"conversationId":"` + conversation + `","risk":"` + string(risk) + `",` +
		`"visitor":{"verified":true,"externalId":"` + visitorID + `","email":"` + visitorEmail + `","name":"` + visitorName + `"}}}`
}

// orderInputJSON is a valid input of the test tools.
const orderInputJSON = `{"orderId":"` + orderID + `"}`

// env is a Handler observed by otelmedian, served under an HTTP server span
// the way tracing middleware serves it.
type env struct {
	spans   *tracetest.SpanRecorder
	reader  *sdkmetric.ManualReader
	handler http.Handler
}

// newEnv builds an env with recording providers, shut down when the test
// ends. cfg's Keys, Tools and Observer are filled in.
func newEnv(t *testing.T, cfg protocol.Config, opts ...otelmedian.Option) *env {
	t.Helper()
	return newMountedEnv(t, cfg, nil, opts...)
}

// newMountedEnv is newEnv where mount, when not nil, mounts the Handler
// (behind its middleware, say) instead of serving it directly.
func newMountedEnv(t *testing.T, cfg protocol.Config, mount func(h *protocol.Handler) http.Handler, opts ...otelmedian.Option) *env {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() {
		require.NoError(t, tp.Shutdown(context.Background()))
		require.NoError(t, mp.Shutdown(context.Background()))
	})
	obs, err := otelmedian.New(append([]otelmedian.Option{otelmedian.WithTracerProvider(tp), otelmedian.WithMeterProvider(mp)}, opts...)...)
	require.NoError(t, err)
	cfg.Keys = []string{testKey}
	if cfg.Tools == nil {
		cfg.Tools = tools()
	}
	cfg.Observer = obs.Observe
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	h, err := protocol.New(cfg)
	require.NoError(t, err)
	var served http.Handler = h
	if mount != nil {
		served = mount(h)
	}
	return &env{spans: rec, reader: reader, handler: withServerSpan(tp, served)}
}

// withServerSpan starts an HTTP server span around next and puts it on the
// request's context, as otelhttp and the frameworks' tracing middleware do.
func withServerSpan(tp trace.TracerProvider, next http.Handler) http.Handler {
	tracer := tp.Tracer("test/http")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := tracer.Start(r.Context(), r.Method+" /api/median", trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// do sends a request signed with testKey and returns the answer.
func (e *env) do(t *testing.T, method, body string) *httptest.ResponseRecorder {
	t.Helper()
	k, err := protocol.ParseKey(testKey)
	require.NoError(t, err)
	req := httptest.NewRequest(method, "/api/median", strings.NewReader(body))
	req.Header.Set("median-signature", k.Sign(time.Now(), []byte(body)))
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req)
	return rec
}

// doUnsigned sends a request without a signature.
func (e *env) doUnsigned(t *testing.T, method, body string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, httptest.NewRequest(method, "/api/median", strings.NewReader(body)))
	return rec
}

// toolSpans returns the ended execute_tool spans, in order.
func (e *env) toolSpans() []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range e.spans.Ended() {
		if strings.HasPrefix(s.Name(), "execute_tool") {
			out = append(out, s)
		}
	}
	return out
}

// httpSpans returns the ended HTTP server spans, in order.
func (e *env) httpSpans() []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range e.spans.Ended() {
		if s.SpanKind() == trace.SpanKindServer {
			out = append(out, s)
		}
	}
	return out
}

// onlyToolSpan returns the one execute_tool span, failing otherwise.
func (e *env) onlyToolSpan(t *testing.T) sdktrace.ReadOnlySpan {
	t.Helper()
	spans := e.toolSpans()
	require.Len(t, spans, 1, "want exactly one execute_tool span")
	return spans[0]
}

// attrs returns a span's attributes as key → emitted value.
func attrs(kvs []attribute.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// collect reads the metrics recorded so far.
func (e *env) collect(t *testing.T) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, e.reader.Collect(context.Background(), &rm))
	return rm
}

// findMetric returns the metric called name, failing when it is missing.
func findMetric(t *testing.T, rm metricdata.ResourceMetrics, name string) metricdata.Metrics {
	t.Helper()
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m
			}
		}
	}
	t.Fatalf("metric %s was not recorded", name)
	return metricdata.Metrics{}
}

// key encodes an attribute set as "k=v,k=v" sorted by key.
func key(set attribute.Set) string { return set.Encoded(attribute.DefaultEncoder()) }

// requestCounts returns median.requests by attribute set.
func (e *env) requestCounts(t *testing.T) map[string]int64 {
	t.Helper()
	m := findMetric(t, e.collect(t), "median.requests")
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "median.requests is a %T, want an int64 sum", m.Data)
	require.True(t, sum.IsMonotonic, "median.requests must be a counter")
	out := map[string]int64{}
	for _, dp := range sum.DataPoints {
		out[key(dp.Attributes)] = dp.Value
	}
	return out
}

// durationCounts returns how many durations median.tool.call.duration
// recorded by attribute set.
func (e *env) durationCounts(t *testing.T) map[string]uint64 {
	t.Helper()
	m := findMetric(t, e.collect(t), "median.tool.call.duration")
	require.Equal(t, "s", m.Unit)
	h, ok := m.Data.(metricdata.Histogram[float64])
	require.True(t, ok, "median.tool.call.duration is a %T, want a float64 histogram", m.Data)
	out := map[string]uint64{}
	for _, dp := range h.DataPoints {
		out[key(dp.Attributes)] = dp.Count
	}
	return out
}

// set builds the encoded attribute set of a metric point.
func set(kvs ...attribute.KeyValue) string { return key(attribute.NewSet(kvs...)) }
