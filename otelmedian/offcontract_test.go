package otelmedian_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/median-go/median/otelmedian"
	"github.com/median-go/median/protocol"
)

// offContractEnv serves, behind the Handler's middleware, an app whose
// handler refuses refund_order with a plain 403, answers ping_store with
// a plain 202 of its own and answers lookup_order with Respond.
func offContractEnv(t *testing.T, opts ...otelmedian.Option) *env {
	t.Helper()
	declared := []*protocol.Tool{
		protocol.DeclareTool[orderInput]("refund_order", protocol.RiskLow, "Refund an order."),
		protocol.DeclareTool[orderInput]("ping_store", protocol.RiskLow, "Ping the store."),
		protocol.DeclareTool[orderInput]("lookup_order", protocol.RiskLow, "Look up an order."),
	}
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call, _ := protocol.CallFrom(r.Context())
		switch call.Tool {
		case "refund_order":
			http.Error(w, "forbidden", http.StatusForbidden)
		case "ping_store":
			w.WriteHeader(http.StatusAccepted)
		default:
			protocol.Respond(w, r, orderResult{OrderID: orderID, Status: orderStatus}, nil)
		}
	})
	return newMountedEnv(t, protocol.Config{Tools: declared}, func(h *protocol.Handler) http.Handler {
		mux := http.NewServeMux()
		h.Mount(mux, "/api/median", app)
		return mux
	}, opts...)
}

// A response the app's handler wrote itself is traced as what was sent:
// median.off_contract, the status it wrote, and, outside 2xx, error.type
// that status and the span's status Error; not execution_failed. Its
// repeat is answered execution_failed from the replay store, and traced so.
func TestOffContractSpan(t *testing.T) {
	e := offContractEnv(t, otelmedian.WithInputAndResult())
	forbidden := callBody("refund_order", "call_403", orderInputJSON, protocol.RiskLow)
	require.Equal(t, http.StatusForbidden, e.do(t, http.MethodPost, forbidden).Code)
	require.Equal(t, http.StatusAccepted, e.do(t, http.MethodPost, callBody("ping_store", "call_202", orderInputJSON, protocol.RiskLow)).Code)
	repeat := e.do(t, http.MethodPost, forbidden)
	require.Contains(t, repeat.Body.String(), "execution_failed")

	spans := e.toolSpans()
	require.Len(t, spans, 3)
	a := attrs(spans[0].Attributes())
	assert.Equal(t, "true", a["median.off_contract"])
	assert.Equal(t, "403", a["http.response.status_code"])
	assert.Equal(t, "403", a["error.type"], "the status the agent got, not execution_failed")
	assert.Equal(t, codes.Error, spans[0].Status().Code, "a non-2xx answer is the tool not answering")
	assert.Contains(t, spans[0].Status().Description, "outside the contract")
	assert.NotContains(t, a, "gen_ai.tool.call.result", "the answer was not seen")
	assert.Equal(t, orderInputJSON, a["gen_ai.tool.call.arguments"])

	a = attrs(spans[1].Attributes())
	assert.Equal(t, "true", a["median.off_contract"])
	assert.Equal(t, "202", a["http.response.status_code"])
	assert.NotContains(t, a, "error.type")
	assert.Equal(t, codes.Unset, spans[1].Status().Code, "a 2xx answer is not an error")

	a = attrs(spans[2].Attributes())
	assert.NotContains(t, a, "median.off_contract", "the repeat got the kept answer")
	assert.NotContains(t, a, "http.response.status_code")
	assert.Equal(t, "execution_failed", a["error.type"])
	assert.Equal(t, "true", a["median.replayed"])
	assert.Equal(t, codes.Error, spans[2].Status().Code)
}

// The same answers in the metrics: outcome off_contract, error.type the
// status outside 2xx; an answer through Respond is a result as usual.
func TestOffContractMetrics(t *testing.T) {
	e := offContractEnv(t)
	forbidden := callBody("refund_order", "call_403", orderInputJSON, protocol.RiskLow)
	e.do(t, http.MethodPost, forbidden)
	e.do(t, http.MethodPost, forbidden)
	e.do(t, http.MethodPost, callBody("ping_store", "call_202", orderInputJSON, protocol.RiskLow))
	e.do(t, http.MethodPost, callBody("lookup_order", "call_ok", orderInputJSON, protocol.RiskLow))

	refund := []attribute.KeyValue{executeTool, tool("refund_order"), riskLow}
	off403 := append([]attribute.KeyValue{outcome("off_contract"), errorType("403"), notReplayed}, refund...)
	repeat := append([]attribute.KeyValue{outcome("error"), errorType("execution_failed"), replayed}, refund...)
	off202 := []attribute.KeyValue{outcome("off_contract"), executeTool, tool("ping_store"), riskLow, notReplayed}
	result := []attribute.KeyValue{outcome("result"), executeTool, tool("lookup_order"), riskLow, notReplayed}
	assert.Equal(t, map[string]int64{
		set(append(off403, post)...): 1,
		set(append(repeat, post)...): 1,
		set(append(off202, post)...): 1,
		set(append(result, post)...): 1,
	}, e.requestCounts(t))
	assert.Equal(t, map[string]uint64{
		set(off403...): 1,
		set(repeat...): 1,
		set(off202...): 1,
		set(result...): 1,
	}, e.durationCounts(t))
}
