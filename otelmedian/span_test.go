package otelmedian_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/median-go/median/otelmedian"
	"github.com/median-go/median/protocol"
)

// A tool call becomes an execute_tool span, a child of the HTTP span, with
// the GenAI attributes and nothing else.
func TestToolCallSpan(t *testing.T) {
	e := newEnv(t, protocol.Config{})
	rec := e.do(t, http.MethodPost, callBody("lookup_order", "call_1", orderInputJSON, protocol.RiskLow))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())

	span := e.onlyToolSpan(t)
	assert.Equal(t, "execute_tool lookup_order", span.Name())
	assert.Equal(t, trace.SpanKindInternal, span.SpanKind())
	assert.Equal(t, map[string]string{
		"gen_ai.operation.name": "execute_tool",
		"gen_ai.tool.name":      "lookup_order",
		"gen_ai.tool.call.id":   "call_1",
		"median.risk":           "low",
		"median.replayed":       "false",
	}, attrs(span.Attributes()))
	assert.Equal(t, codes.Unset, span.Status().Code, "a result is not an error")
	assert.Equal(t, "github.com/median-go/median/otelmedian", span.InstrumentationScope().Name)
	assert.Equal(t, "https://opentelemetry.io/schemas/1.41.0", span.InstrumentationScope().SchemaURL)

	https := e.httpSpans()
	require.Len(t, https, 1)
	parent := https[0]
	assert.Equal(t, parent.SpanContext().TraceID(), span.SpanContext().TraceID(), "the tool span is in the request's trace")
	assert.Equal(t, parent.SpanContext().SpanID(), span.Parent().SpanID(), "the tool span is a child of the HTTP span")
	assert.False(t, span.StartTime().Before(parent.StartTime()), "the tool span starts inside the HTTP span")
	assert.False(t, span.EndTime().After(parent.EndTime()), "the tool span ends inside the HTTP span")
	assert.False(t, span.EndTime().Before(span.StartTime()))
}

// The span runs from the event's Start for its Duration, not from when the
// observer happened to be called.
func TestSpanTimesComeFromTheEvent(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
	obs, err := otelmedian.New(otelmedian.WithTracerProvider(tp))
	require.NoError(t, err)

	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	obs.Observe(context.Background(), protocol.Event{Method: http.MethodPost, Tool: "lookup_order", ToolCallID: "call_9",
		Risk: protocol.RiskHigh, Status: http.StatusOK, Start: start, Duration: 1500 * time.Millisecond, EvictedEarly: 3})

	spans := rec.Ended()
	require.Len(t, spans, 1)
	assert.Equal(t, start, spans[0].StartTime().UTC())
	assert.Equal(t, start.Add(1500*time.Millisecond), spans[0].EndTime().UTC())
	assert.Equal(t, "3", attrs(spans[0].Attributes())["median.evicted_early"], "answers dropped early are reported")
	assert.False(t, spans[0].Parent().IsValid(), "without a span on ctx the tool span is a root")
}

// Every error answer to a tool call sets error.type to the contract's code
// and the span status to Error, without the message by default.
func TestErrorSpans(t *testing.T) {
	cases := []struct {
		name, body string
		status     int
		code       string
	}{
		{"execution_failed", callBody("charge_card", "call_f", orderInputJSON, protocol.RiskMedium), http.StatusOK, "execution_failed"},
		{"invalid_input", callBody("lookup_order", "call_i", `{"orderId":""}`, protocol.RiskLow), http.StatusBadRequest, "invalid_input"},
		{"unknown_tool", callBody("no_such_tool", "call_u", `{}`, protocol.RiskLow), http.StatusNotFound, "unknown_tool"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, protocol.Config{})
			rec := e.do(t, http.MethodPost, tc.body)
			require.Equal(t, tc.status, rec.Code, rec.Body.String())
			require.Contains(t, rec.Body.String(), tc.code)

			span := e.onlyToolSpan(t)
			a := attrs(span.Attributes())
			assert.Equal(t, tc.code, a["error.type"])
			assert.Equal(t, codes.Error, span.Status().Code)
			assert.Empty(t, span.Status().Description, "the error's message may hold personal data: recorded only with WithInputAndResult")
			assert.NotContains(t, a, "median.refusal.reason")
		})
	}
}

// A refusal is a result, not an error: its reason is recorded and the span
// status stays unset.
func TestRefusalSpan(t *testing.T) {
	e := newEnv(t, protocol.Config{})
	rec := e.do(t, http.MethodPost, callBody("cancel_order", "call_r", orderInputJSON, protocol.RiskLow))
	require.Equal(t, http.StatusOK, rec.Code)

	span := e.onlyToolSpan(t)
	a := attrs(span.Attributes())
	assert.Equal(t, "not_signed_in", a["median.refusal.reason"])
	assert.NotContains(t, a, "error.type")
	assert.Equal(t, codes.Unset, span.Status().Code)
}

// The risk floor's refusal (a medium tool called at low risk) is recorded
// with its reason and the risk Median sent.
func TestRiskFloorRefusalSpan(t *testing.T) {
	e := newEnv(t, protocol.Config{})
	e.do(t, http.MethodPost, callBody("charge_card", "call_floor", orderInputJSON, protocol.RiskLow))

	a := attrs(e.onlyToolSpan(t).Attributes())
	assert.Equal(t, "approval_required", a["median.refusal.reason"])
	assert.Equal(t, "low", a["median.risk"])
}

// A repeated toolCallId is answered from the replay store and its span
// says so.
func TestReplayedSpan(t *testing.T) {
	e := newEnv(t, protocol.Config{})
	body := callBody("lookup_order", "call_twice", orderInputJSON, protocol.RiskLow)
	first := e.do(t, http.MethodPost, body)
	second := e.do(t, http.MethodPost, body)
	require.Equal(t, first.Body.String(), second.Body.String())

	spans := e.toolSpans()
	require.Len(t, spans, 2)
	assert.Equal(t, "false", attrs(spans[0].Attributes())["median.replayed"])
	assert.Equal(t, "true", attrs(spans[1].Attributes())["median.replayed"])
	assert.Equal(t, "call_twice", attrs(spans[1].Attributes())["gen_ai.tool.call.id"])
}

// Requests that are not tool calls get no span of their own.
func TestNoSpanForOtherRequests(t *testing.T) {
	e := newEnv(t, protocol.Config{Diagnostics: func(context.Context) (any, error) { return map[string]bool{"ok": true}, nil }})
	assert.Equal(t, http.StatusOK, e.do(t, http.MethodGet, "").Code, "manifest")
	assert.Equal(t, http.StatusOK, e.do(t, http.MethodPost, `{"op":"diagnostics"}`).Code, "diagnostics")
	assert.Equal(t, http.StatusBadRequest, e.do(t, http.MethodPost, `{"tool":`).Code, "a body that does not decode")

	assert.Empty(t, e.toolSpans())
	assert.Len(t, e.httpSpans(), 3, "the requests were served under their HTTP spans")
}

// The span is a child of the HTTP span when the call is answered by the
// app's own handler behind Handler.Middleware.
func TestSpanBehindMiddleware(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
	obs, err := otelmedian.New(otelmedian.WithTracerProvider(tp))
	require.NoError(t, err)
	// The app's handler answers app_tool; the Handler declares it.
	appTool := protocol.DeclareTool[struct{}]("app_tool", protocol.RiskLow, "Answered by the app's handler.")
	h, err := protocol.New(protocol.Config{Keys: []string{testKey}, Tools: []*protocol.Tool{appTool}, Observer: obs.Observe})
	require.NoError(t, err)
	mux := http.NewServeMux()
	h.Mount(mux, "/api/median", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		protocol.Respond(w, r, map[string]string{"status": "done"}, nil)
	}))
	e := &env{spans: rec, handler: withServerSpan(tp, mux)}

	resp := e.do(t, http.MethodPost, callBody("app_tool", "call_mw", `{}`, protocol.RiskLow))
	require.Equal(t, http.StatusOK, resp.Code, resp.Body.String())

	span := e.onlyToolSpan(t)
	assert.Equal(t, "execute_tool app_tool", span.Name())
	require.Len(t, e.httpSpans(), 1)
	assert.Equal(t, e.httpSpans()[0].SpanContext().SpanID(), span.Parent().SpanID())
}

// A check's call (marked with Key.CheckMark, as the conformance suite and
// mediancheck mark theirs) carries median.check on its span and metrics,
// so dashboards can leave checks out; Median's calls carry none.
func TestCheckIsMarked(t *testing.T) {
	e := newEnv(t, protocol.Config{})
	k, err := protocol.ParseKey(testKey)
	require.NoError(t, err)
	body := callBody("lookup_order", "call_check", orderInputJSON, protocol.RiskLow)
	req := httptest.NewRequest(http.MethodPost, "/api/median", strings.NewReader(body))
	now := time.Now()
	req.Header.Set("median-signature", k.Sign(now, []byte(body)))
	req.Header.Set("Median-Check", k.CheckMark(now))
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	e.do(t, http.MethodPost, callBody("lookup_order", "call_median", orderInputJSON, protocol.RiskLow))

	spans := e.toolSpans()
	require.Len(t, spans, 2)
	assert.Equal(t, "true", attrs(spans[0].Attributes())["median.check"])
	assert.NotContains(t, attrs(spans[1].Attributes()), "median.check")

	marked := attribute.Bool("median.check", true)
	result := []attribute.KeyValue{outcome("result"), executeTool, tool("lookup_order"), riskLow, notReplayed}
	assert.Equal(t, map[string]int64{
		set(append(result, marked, post)...): 1,
		set(append(result, post)...):         1,
	}, e.requestCounts(t))
	assert.Equal(t, map[string]uint64{
		set(append(result, marked)...): 1,
		set(result...):                 1,
	}, e.durationCounts(t))
}
