package otelmedian_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/ratelimit"
)

// A call over its rate limit is counted as a refusal with reason
// rate_limited, like any refusal result.
func TestRateLimitedIsARefusal(t *testing.T) {
	limit, err := ratelimit.New(ratelimit.Config{Limit: ratelimit.Limit{Calls: 1, Per: time.Minute}})
	require.NoError(t, err)
	e := newEnv(t, protocol.Config{Interceptors: []protocol.Interceptor{limit}})
	e.do(t, http.MethodPost, callBody("lookup_order", "call_1", orderInputJSON, protocol.RiskLow))
	rec := e.do(t, http.MethodPost, callBody("lookup_order", "call_2", orderInputJSON, protocol.RiskLow))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Body.String(), `"reason":"rate_limited"`)

	limited := []attribute.KeyValue{outcome("refusal"), attribute.String("median.refusal.reason", "rate_limited"), executeTool, tool("lookup_order"), riskLow, notReplayed}
	assert.Equal(t, int64(1), e.requestCounts(t)[set(append(limited, post)...)], "counted: %v", e.requestCounts(t))
	assert.Equal(t, uint64(1), e.durationCounts(t)[set(limited...)])
}
