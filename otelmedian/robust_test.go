package otelmedian_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/median-go/median/otelmedian"
	"github.com/median-go/median/protocol"
)

// panicTracerProvider hands out tracers that panic when a span starts.
type panicTracerProvider struct{ tracenoop.TracerProvider }

func (panicTracerProvider) Tracer(string, ...trace.TracerOption) trace.Tracer { return panicTracer{} }

type panicTracer struct{ tracenoop.Tracer }

func (panicTracer) Start(context.Context, string, ...trace.SpanStartOption) (context.Context, trace.Span) {
	panic("tracer exploded")
}

// panicMeterProvider hands out counters that panic when they count.
type panicMeterProvider struct{ metricnoop.MeterProvider }

func (panicMeterProvider) Meter(string, ...metric.MeterOption) metric.Meter { return panicMeter{} }

type panicMeter struct{ metricnoop.Meter }

func (panicMeter) Int64Counter(string, ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	return panicCounter{}, nil
}

type panicCounter struct{ metricnoop.Int64Counter }

func (panicCounter) Add(context.Context, int64, ...metric.AddOption) { panic("counter exploded") }

// failingMeterProvider refuses to create histograms.
type failingMeterProvider struct{ metricnoop.MeterProvider }

func (failingMeterProvider) Meter(string, ...metric.MeterOption) metric.Meter { return failingMeter{} }

type failingMeter struct{ metricnoop.Meter }

func (failingMeter) Float64Histogram(string, ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	return nil, errors.New("histograms are disabled")
}

// A provider that panics never changes the answer: the call is answered
// as if nothing observed it, and the panic is logged.
func TestPanickingProvidersNeverBreakTheRequest(t *testing.T) {
	cases := []struct {
		name, panic string
		opts        []otelmedian.Option
	}{
		{"tracer", "tracer exploded", []otelmedian.Option{otelmedian.WithTracerProvider(panicTracerProvider{}), otelmedian.WithMeterProvider(metricnoop.NewMeterProvider())}},
		{"meter", "counter exploded", []otelmedian.Option{otelmedian.WithTracerProvider(tracenoop.NewTracerProvider()), otelmedian.WithMeterProvider(panicMeterProvider{})}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obs, err := otelmedian.New(tc.opts...)
			require.NoError(t, err)
			var logs bytes.Buffer
			h, err := protocol.New(protocol.Config{Keys: []string{testKey}, Tools: tools(), Observer: obs.Observe,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			require.NoError(t, err)
			e := &env{handler: h}

			rec := e.do(t, http.MethodPost, callBody("lookup_order", "call_1", orderInputJSON, protocol.RiskLow))
			assert.Equal(t, http.StatusOK, rec.Code)
			assert.JSONEq(t, `{"result":{"orderId":"`+orderID+`","status":"`+orderStatus+`"}}`, rec.Body.String())
			assert.Contains(t, logs.String(), tc.panic, "the panic is logged")

			again := e.do(t, http.MethodPost, callBody("lookup_order", "call_1", orderInputJSON, protocol.RiskLow))
			assert.Equal(t, rec.Body.String(), again.Body.String(), "the answer was kept for replays")
		})
	}
}

// A tracer that panics does not cost the metrics: they are recorded first.
func TestMetricsSurviveAPanickingTracer(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { require.NoError(t, mp.Shutdown(context.Background())) })
	obs, err := otelmedian.New(otelmedian.WithTracerProvider(panicTracerProvider{}), otelmedian.WithMeterProvider(mp))
	require.NoError(t, err)

	assert.Panics(t, func() {
		obs.Observe(context.Background(), protocol.Event{Method: http.MethodPost, Tool: "lookup_order", ToolCallID: "call_1", Risk: protocol.RiskLow, Status: http.StatusOK})
	})
	e := &env{reader: reader}
	assert.Equal(t, map[string]int64{
		set(outcome("result"), executeTool, tool("lookup_order"), riskLow, notReplayed, post): 1,
	}, e.requestCounts(t))
	assert.Len(t, e.durationCounts(t), 1)
}

// Without providers, or with nil ones, the global providers are used.
func TestGlobalProvidersByDefault(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(mp)
	t.Cleanup(func() {
		otel.SetTracerProvider(tracenoop.NewTracerProvider())
		otel.SetMeterProvider(metricnoop.NewMeterProvider())
		require.NoError(t, tp.Shutdown(context.Background()))
		require.NoError(t, mp.Shutdown(context.Background()))
	})

	byDefault, err := otelmedian.New()
	require.NoError(t, err)
	withNil, err := otelmedian.New(otelmedian.WithTracerProvider(nil), otelmedian.WithMeterProvider(nil))
	require.NoError(t, err)
	ev := protocol.Event{Method: http.MethodPost, Tool: "lookup_order", ToolCallID: "call_1", Risk: protocol.RiskLow, Status: http.StatusOK}
	byDefault.Observe(context.Background(), ev)
	withNil.Observe(context.Background(), ev)

	assert.Len(t, rec.Ended(), 2, "both observers traced with the global provider")
	e := &env{reader: reader}
	assert.Equal(t, map[string]int64{
		set(outcome("result"), executeTool, tool("lookup_order"), riskLow, notReplayed, post): 2,
	}, e.requestCounts(t))
}

// A meter provider that cannot create the instruments is reported by New.
func TestNewReportsInstrumentErrors(t *testing.T) {
	obs, err := otelmedian.New(otelmedian.WithMeterProvider(failingMeterProvider{}))
	require.Error(t, err)
	assert.Nil(t, obs)
	assert.Contains(t, err.Error(), "otelmedian")
	assert.Contains(t, err.Error(), "histograms are disabled")
}
