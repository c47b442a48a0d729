package otelmedian

import (
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Option configures [New].
type Option func(*config)

type config struct {
	tracerProvider trace.TracerProvider
	meterProvider  metric.MeterProvider
	content        bool
}

// WithTracerProvider sets the provider the tool call spans are created
// with. Without it, or with nil, the global provider (otel.GetTracerProvider)
// is used.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tracerProvider = tp }
}

// WithMeterProvider sets the provider the metrics are recorded with.
// Without it, or with nil, the global provider (otel.GetMeterProvider) is
// used.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.meterProvider = mp }
}

// WithInputAndResult records each call's input and, on success, its result
// on the call's span (gen_ai.tool.call.arguments and gen_ai.tool.call.result,
// as JSON strings), and an error answer's message (what the agent read) as
// the span status description.
// Turn it on only where your traces may hold what customers typed and what
// your tools answered: both may be personal data. Metrics never carry them.
// An input may be as long as the request body (1 MiB by default): bound
// attribute values with your SDK's span limits
// (OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT) if your backend cannot take that.
func WithInputAndResult() Option {
	return func(c *config) { c.content = true }
}
