package otelmedian

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/median-go/median/protocol"
)

// scope is the instrumentation scope of the spans and metrics.
const scope = "github.com/median-go/median/otelmedian"

// Attribute keys of the project's own namespace (see the package doc).
const (
	keyRisk          = attribute.Key("median.risk")
	keyReplayed      = attribute.Key("median.replayed")
	keyRefusalReason = attribute.Key("median.refusal.reason")
	keyEvictedEarly  = attribute.Key("median.evicted_early")
	keyOutcome       = attribute.Key("median.outcome")
	keyOffContract   = attribute.Key("median.off_contract")
	keyErrorRef      = attribute.Key("median.error.ref")
	keyCheck         = attribute.Key("median.check")
)

// The values of median.outcome.
const (
	outcomeResult  = "result"
	outcomeRefusal = "refusal"
	outcomeError   = "error"
	// The app's own handler answered with a response it wrote itself
	// (protocol.Event.OffContract).
	outcomeOffContract = "off_contract"
)

// offContractStatus is the span status description of an answer outside
// the contract whose status is not 2xx. It holds nothing of the call.
const offContractStatus = "the server's own handler answered outside the contract with a non-2xx status, which Median's agent reads as the tool not answering"

// durationBuckets are the boundaries OpenTelemetry recommends for
// http.server.request.duration, in seconds.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// Observer turns the events of a protocol.Handler into spans and metrics.
// Build it with [New]; it is safe for concurrent use.
type Observer struct {
	tracer   trace.Tracer
	requests metric.Int64Counter
	duration metric.Float64Histogram
	content  bool
}

// New returns an Observer that records with the configured providers (the
// global ones by default). Pass its Observe method as
// protocol.Config.Observer. The error says which instrument the meter
// provider refused to create.
func New(opts ...Option) (*Observer, error) {
	var c config
	for _, opt := range opts {
		if opt != nil {
			opt(&c)
		}
	}
	if c.tracerProvider == nil {
		c.tracerProvider = otel.GetTracerProvider()
	}
	if c.meterProvider == nil {
		c.meterProvider = otel.GetMeterProvider()
	}
	meter := c.meterProvider.Meter(scope, metric.WithSchemaURL(semconv.SchemaURL))
	requests, err1 := meter.Int64Counter("median.requests",
		metric.WithUnit("{request}"),
		metric.WithDescription("Requests answered by the Median tool endpoint."))
	duration, err2 := meter.Float64Histogram("median.tool.call.duration",
		metric.WithUnit("s"),
		metric.WithDescription("Duration of Median tool calls, from the request reaching the handler to the answer."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("otelmedian: the meter provider could not create the instruments: %w", err)
	}
	return &Observer{
		tracer:   c.tracerProvider.Tracer(scope, trace.WithSchemaURL(semconv.SchemaURL)),
		requests: requests,
		duration: duration,
		content:  c.content,
	}, nil
}

// Observe records one answered request: it counts it and, for a tool call,
// records its duration and a span that is a child of the span on ctx. Pass
// it as protocol.Config.Observer; the Handler calls it once per answer.
func (o *Observer) Observe(ctx context.Context, ev protocol.Event) {
	attrs := metricAttributes(ev)
	o.requests.Add(ctx, 1, metric.WithAttributes(append(attrs, method(ev.Method))...))
	if ev.Tool == "" {
		return
	}
	o.duration.Record(ctx, ev.Duration.Seconds(), metric.WithAttributes(attrs...))
	o.span(ctx, ev)
}

// span records the tool call's span.
func (o *Observer) span(ctx context.Context, ev protocol.Event) {
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolName(ev.Tool),
		semconv.GenAIToolCallID(ev.ToolCallID),
		keyRisk.String(string(ev.Risk)),
		keyReplayed.Bool(ev.Replayed),
	}
	if ev.Code != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(string(ev.Code)))
	}
	if ev.ErrorRef != "" {
		attrs = append(attrs, keyErrorRef.String(ev.ErrorRef))
	}
	if ev.Refusal != "" {
		attrs = append(attrs, keyRefusalReason.String(ev.Refusal))
	}
	if ev.EvictedEarly > 0 {
		attrs = append(attrs, keyEvictedEarly.Int(ev.EvictedEarly))
	}
	if ev.Check {
		attrs = append(attrs, keyCheck.Bool(true))
	}
	failed := ev.Code != ""
	if ev.OffContract {
		attrs = append(attrs, keyOffContract.Bool(true), semconv.HTTPResponseStatusCode(ev.Status))
		if failed = !success(ev.Status); failed {
			attrs = append(attrs, statusErrorType(ev.Status))
		}
	}
	var answer answerBody
	if o.content {
		if len(ev.Input) > 0 {
			attrs = append(attrs, semconv.GenAIToolCallArgumentsKey.String(string(ev.Input)))
		}
		_ = json.Unmarshal(ev.Answer, &answer) // an answer the core wrote is JSON; anything else records nothing
		if ev.Code == "" && len(answer.Result) > 0 {
			attrs = append(attrs, semconv.GenAIToolCallResultKey.String(string(answer.Result)))
		}
	}
	_, span := o.tracer.Start(ctx, "execute_tool "+ev.Tool,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(ev.Start),
		trace.WithAttributes(attrs...))
	switch {
	case ev.Code != "":
		span.SetStatus(codes.Error, answer.Error.Message)
	case failed:
		span.SetStatus(codes.Error, offContractStatus)
	}
	span.End(trace.WithTimestamp(ev.Start.Add(ev.Duration)))
}

// answerBody is the shape of an answer: a result or an error.
type answerBody struct {
	Result json.RawMessage `json:"result"`
	Error  struct {
		Message string `json:"message"`
	} `json:"error"`
}

// metricAttributes are the low-cardinality attributes of both instruments.
func metricAttributes(ev protocol.Event) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 8)
	switch {
	case ev.OffContract:
		attrs = append(attrs, keyOutcome.String(outcomeOffContract))
		if !success(ev.Status) {
			attrs = append(attrs, statusErrorType(ev.Status))
		}
	case ev.Code != "":
		attrs = append(attrs, keyOutcome.String(outcomeError), semconv.ErrorTypeKey.String(string(ev.Code)))
	case ev.Refusal != "":
		attrs = append(attrs, keyOutcome.String(outcomeRefusal), keyRefusalReason.String(ev.Refusal))
	default:
		attrs = append(attrs, keyOutcome.String(outcomeResult))
	}
	if ev.Check {
		attrs = append(attrs, keyCheck.Bool(true))
	}
	if ev.Tool != "" {
		attrs = append(attrs,
			semconv.GenAIOperationNameExecuteTool,
			semconv.GenAIToolName(ev.Tool),
			keyRisk.String(string(ev.Risk)),
			keyReplayed.Bool(ev.Replayed))
	}
	return attrs
}

// method is http.request.method, with methods other than the two Median
// sends folded into _OTHER: the method of a refused request is whatever the
// client sent, and must not grow the metrics without bound.
func method(m string) attribute.KeyValue {
	switch m {
	case http.MethodGet:
		return semconv.HTTPRequestMethodGet
	case http.MethodPost:
		return semconv.HTTPRequestMethodPost
	}
	return semconv.HTTPRequestMethodOther
}

// success reports whether an HTTP status is 2xx: Median's agent reads any
// other as the tool not answering (PROTOCOL.md §11).
func success(status int) bool { return status >= 200 && status < 300 }

// statusErrorType is error.type for an answer outside the contract whose
// status is not 2xx: the status as a string, as OpenTelemetry's HTTP
// conventions set it, or _OTHER when no status is known.
func statusErrorType(status int) attribute.KeyValue {
	if status <= 0 {
		return semconv.ErrorTypeOther
	}
	return semconv.ErrorTypeKey.String(strconv.Itoa(status))
}
