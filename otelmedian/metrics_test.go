package otelmedian_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/median-go/median/protocol"
)

// Attributes of the metric points, as the package doc lists them.
var (
	executeTool = attribute.String("gen_ai.operation.name", "execute_tool")
	post        = attribute.String("http.request.method", "POST")
	get         = attribute.String("http.request.method", "GET")
	other       = attribute.String("http.request.method", "_OTHER")
	riskLow     = attribute.String("median.risk", "low")
	riskMedium  = attribute.String("median.risk", "medium")
	notReplayed = attribute.Bool("median.replayed", false)
	replayed    = attribute.Bool("median.replayed", true)
)

func outcome(v string) attribute.KeyValue   { return attribute.String("median.outcome", v) }
func tool(v string) attribute.KeyValue      { return attribute.String("gen_ai.tool.name", v) }
func errorType(v string) attribute.KeyValue { return attribute.String("error.type", v) }

// Every answered request is counted by outcome; tool calls by tool too,
// and their durations recorded, with the same low-cardinality attributes.
func TestMetrics(t *testing.T) {
	e := newEnv(t, protocol.Config{})
	ok := callBody("lookup_order", "call_ok", orderInputJSON, protocol.RiskLow)
	e.do(t, http.MethodPost, ok)
	e.do(t, http.MethodPost, ok)
	e.do(t, http.MethodPost, callBody("charge_card", "call_err", orderInputJSON, protocol.RiskMedium))
	e.do(t, http.MethodPost, callBody("cancel_order", "call_ref", orderInputJSON, protocol.RiskLow))
	e.do(t, http.MethodPost, callBody("lookup_order", "call_bad", `{}`, protocol.RiskLow))
	e.do(t, http.MethodGet, "")
	e.do(t, http.MethodPost, `{"op":"diagnostics"}`)

	require.Equal(t, http.StatusUnauthorized, e.doUnsigned(t, http.MethodPost, ok).Code)
	require.Equal(t, http.StatusMethodNotAllowed, e.doUnsigned(t, "PATCH", "").Code)

	result := []attribute.KeyValue{outcome("result"), executeTool, tool("lookup_order"), riskLow}
	failed := []attribute.KeyValue{outcome("error"), errorType("execution_failed"), executeTool, tool("charge_card"), riskMedium, notReplayed}
	refused := []attribute.KeyValue{outcome("refusal"), attribute.String("median.refusal.reason", "not_signed_in"), executeTool, tool("cancel_order"), riskLow, notReplayed}
	invalid := []attribute.KeyValue{outcome("error"), errorType("invalid_input"), executeTool, tool("lookup_order"), riskLow, notReplayed}

	assert.Equal(t, map[string]int64{
		set(append(result, notReplayed, post)...):                     1,
		set(append(result, replayed, post)...):                        1,
		set(append(failed, post)...):                                  1,
		set(append(refused, post)...):                                 1,
		set(append(invalid, post)...):                                 1,
		set(outcome("result"), get):                                   1, // the manifest
		set(outcome("result"), post):                                  1, // the diagnostics report
		set(outcome("error"), errorType("missing_signature"), post):   1,
		set(outcome("error"), errorType("method_not_allowed"), other): 1,
	}, e.requestCounts(t))

	assert.Equal(t, map[string]uint64{
		set(append(result, notReplayed)...): 1,
		set(append(result, replayed)...):    1,
		set(failed...):                      1,
		set(refused...):                     1,
		set(invalid...):                     1,
	}, e.durationCounts(t), "only tool calls have a duration, without the method")
}

// The histogram's buckets suit calls of milliseconds to seconds.
func TestDurationBuckets(t *testing.T) {
	e := newEnv(t, protocol.Config{})
	e.do(t, http.MethodPost, callBody("lookup_order", "call_1", orderInputJSON, protocol.RiskLow))
	m := findMetric(t, e.collect(t), "median.tool.call.duration")
	h := m.Data.(metricdata.Histogram[float64])
	require.Len(t, h.DataPoints, 1)
	dp := h.DataPoints[0]
	assert.Equal(t, []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}, dp.Bounds)
	assert.GreaterOrEqual(t, dp.Sum, 0.0)
	assert.Less(t, dp.Sum, 60.0, "the duration is in seconds")
	assert.Equal(t, "https://opentelemetry.io/schemas/1.41.0", e.collect(t).ScopeMetrics[0].Scope.SchemaURL)
}

// Calls answered at once are each counted and traced once.
func TestConcurrentCalls(t *testing.T) {
	e := newEnv(t, protocol.Config{})
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			e.do(t, http.MethodPost, callBody("lookup_order", "call_c"+string(rune('a'+i)), orderInputJSON, protocol.RiskLow))
		})
	}
	wg.Wait()
	assert.Len(t, e.toolSpans(), n)
	assert.Equal(t, map[string]int64{
		set(outcome("result"), executeTool, tool("lookup_order"), riskLow, notReplayed, post): n,
	}, e.requestCounts(t))
}
