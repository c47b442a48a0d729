package otelmedian_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/median-go/median/otelmedian"
	"github.com/median-go/median/protocol"
)

// sendEveryKind sends a result, an error, a refusal and a replay, each
// carrying the personal-data markers in the input, the visitor, the
// conversation or the answer.
func sendEveryKind(t *testing.T, e *env) {
	t.Helper()
	ok := callBody("lookup_order", "call_ok", orderInputJSON, protocol.RiskLow)
	require.Contains(t, e.do(t, http.MethodPost, ok).Body.String(), orderStatus, "the result carries the marker")
	require.Contains(t, e.do(t, http.MethodPost, callBody("charge_card", "call_err", orderInputJSON, protocol.RiskMedium)).Body.String(), orderID, "the error message carries the marker")
	e.do(t, http.MethodPost, callBody("cancel_order", "call_ref", orderInputJSON, protocol.RiskLow))
	e.do(t, http.MethodPost, ok)
}

// recorded is everything the spans and metrics hold, as one string.
func (e *env) recorded(t *testing.T) (spans, metrics string) {
	t.Helper()
	var s strings.Builder
	for _, span := range e.spans.Ended() {
		s.WriteString(span.Name() + "|" + span.Status().Description + "|")
		for _, kv := range span.Attributes() {
			s.WriteString(string(kv.Key) + "=" + kv.Value.String() + "|")
		}
		for _, ev := range span.Events() {
			s.WriteString(ev.Name + "|")
			for _, kv := range ev.Attributes {
				s.WriteString(string(kv.Key) + "=" + kv.Value.String() + "|")
			}
		}
	}
	var m strings.Builder
	for _, sm := range e.collect(t).ScopeMetrics {
		for _, metric := range sm.Metrics {
			switch data := metric.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range data.DataPoints {
					m.WriteString(key(dp.Attributes) + "|")
				}
			case metricdata.Histogram[float64]:
				for _, dp := range data.DataPoints {
					m.WriteString(key(dp.Attributes) + "|")
				}
			default:
				t.Fatalf("unexpected metric data %T for %s", data, metric.Name)
			}
		}
	}
	return s.String(), m.String()
}

// By default nothing a customer typed, nothing about the visitor and no
// answer reaches the telemetry; toolCallIds reach spans only.
func TestNothingSensitiveByDefault(t *testing.T) {
	e := newEnv(t, protocol.Config{})
	sendEveryKind(t, e)
	require.Len(t, e.toolSpans(), 4)

	spans, metrics := e.recorded(t)
	for _, marker := range []string{visitorID, visitorEmail, visitorName, orderID, orderStatus, conversation, "payment gateway"} {
		assert.NotContains(t, spans, marker, "spans must not carry personal data by default")
		assert.NotContains(t, metrics, marker, "metrics must not carry personal data")
	}
	assert.NotContains(t, spans, "gen_ai.tool.call.arguments")
	assert.NotContains(t, spans, "gen_ai.tool.call.result")
	assert.Contains(t, spans, "gen_ai.tool.call.id=call_ok", "spans do carry the toolCallId")
	assert.NotContains(t, metrics, "call_", "a toolCallId in a metric attribute makes one series per call")
	assert.NotContains(t, metrics, "gen_ai.tool.call.id")
}

// With WithInputAndResult the span carries the input, the result of a
// successful call and an error's message; metrics still carry none of it,
// and the visitor is never recorded.
func TestInputAndResultOptIn(t *testing.T) {
	e := newEnv(t, protocol.Config{}, otelmedian.WithInputAndResult())
	sendEveryKind(t, e)
	spans := e.toolSpans()
	require.Len(t, spans, 4)

	ok := attrs(spans[0].Attributes())
	assert.JSONEq(t, orderInputJSON, ok["gen_ai.tool.call.arguments"])
	assert.JSONEq(t, `{"orderId":"`+orderID+`","status":"`+orderStatus+`"}`, ok["gen_ai.tool.call.result"], "the result, without the answer's envelope")

	failed := attrs(spans[1].Attributes())
	assert.JSONEq(t, orderInputJSON, failed["gen_ai.tool.call.arguments"])
	assert.NotContains(t, failed, "gen_ai.tool.call.result", "a failed call has no result")
	assert.Contains(t, spans[1].Status().Description, "payment gateway unreachable", "the error's message describes the status")

	refused := attrs(spans[2].Attributes())
	assert.Contains(t, refused["gen_ai.tool.call.result"], `"reason":"not_signed_in"`, "a refusal is the tool's result")

	replayed := attrs(spans[3].Attributes())
	assert.Equal(t, ok["gen_ai.tool.call.result"], replayed["gen_ai.tool.call.result"], "a replay answers the stored result")

	all, metrics := e.recorded(t)
	for _, marker := range []string{visitorID, visitorEmail, visitorName, conversation} {
		assert.NotContains(t, all, marker, "the visitor and the conversation are never recorded")
	}
	for _, marker := range []string{orderID, orderStatus, "call_"} {
		assert.NotContains(t, metrics, marker, "metrics never carry content or ids")
	}
}

// An error the tool did not mark for the agent reaches the telemetry as
// the answer's safe message and its reference, never as its text: the
// span carries the reference by default (the log has the error under
// it); metrics carry neither, as a reference is one series per failure.
func TestHiddenErrorIsItsReference(t *testing.T) {
	const secret = "dial tcp 10.9.8.7:5432: password authentication failed for user shop_admin"
	for _, opts := range [][]otelmedian.Option{nil, {otelmedian.WithInputAndResult()}} {
		var logs strings.Builder
		e := newEnv(t, protocol.Config{
			Logger: slog.New(slog.NewTextHandler(&logs, nil)),
			Tools: []*protocol.Tool{protocol.NewTool("lookup_order", protocol.RiskLow, "Look up an order.",
				func(context.Context, protocol.ToolCall[orderInput]) (orderResult, error) {
					return orderResult{}, fmt.Errorf("lookup order: %w", errors.New(secret))
				})},
		}, opts...)
		var a struct {
			Error struct{ Message string } `json:"error"`
		}
		require.NoError(t, json.Unmarshal(e.do(t, http.MethodPost, callBody("lookup_order", "call_hidden", orderInputJSON, protocol.RiskLow)).Body.Bytes(), &a))
		m := regexp.MustCompile(`^tool lookup_order failed \(reference ([0-9a-f]{8})\)`).FindStringSubmatch(a.Error.Message)
		require.NotNil(t, m, "the answer names the tool and a reference: %q", a.Error.Message)
		ref := m[1]

		span := e.onlyToolSpan(t)
		assert.Equal(t, ref, attrs(span.Attributes())["median.error.ref"])
		if len(opts) > 0 {
			assert.Equal(t, a.Error.Message, span.Status().Description, "with content, the status is the message the agent read")
		}
		spans, metrics := e.recorded(t)
		for _, marker := range []string{"10.9.8.7", "5432", "password", "shop_admin", "lookup order:"} {
			assert.NotContains(t, spans, marker)
			assert.NotContains(t, metrics, marker)
		}
		assert.NotContains(t, metrics, ref, "a reference is not a metric attribute")
		assert.Contains(t, logs.String(), "errorRef="+ref, "the log has the reference")
		assert.Contains(t, logs.String(), "shop_admin", "and the error")
	}
}
