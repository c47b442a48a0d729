package catalog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/examples/catalog"
	"github.com/median-go/median/examples/catalog/catalogtest"
	"github.com/median-go/median/protocol"
)

// clock is a fake clock for the demo's core and limiter.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// demoCall serves one call of tool in conversation, signed at the clock's
// time, and returns the decoded result.
func demoCall(t *testing.T, d *catalog.Demo, c *clock, tool, id, conversation string) map[string]any {
	t.Helper()
	ctx := map[string]any{"conversationId": conversation, "risk": "low", "visitor": catalogtest.Verified}
	if tool == catalog.CancelOrderTool {
		ctx["risk"], ctx["approvedBy"] = "high", catalogtest.ApprovedBy
	}
	body, err := json.Marshal(map[string]any{"tool": tool, "toolCallId": id, "input": map[string]string{"orderId": "A-1001"}, "context": ctx})
	require.NoError(t, err)
	resp := d.Handler.Serve(context.Background(), protocol.Request{Method: http.MethodPost,
		Signature: catalogtest.MustKey(catalogtest.Key).Sign(c.Now(), body), BodyBytes: body})
	require.Equal(t, http.StatusOK, resp.Status, "never 429: %s", resp.Body)
	var a struct {
		Result map[string]any `json:"result"`
	}
	require.NoError(t, json.Unmarshal(resp.Body, &a), "%s", resp.Body)
	require.NotNil(t, a.Result, "%s", resp.Body)
	return a.Result
}

func rateLimited(r map[string]any) bool { return r["reason"] == "rate_limited" }

// TestLookupOrderIsLimitedPerConversation: 20 lookup_order calls per
// conversation per minute; the 21st is refused with when to try again in
// words, and not run.
func TestLookupOrderIsLimitedPerConversation(t *testing.T) {
	c := &clock{t: time.Now()}
	d, err := catalog.New(catalog.Options{Key: catalogtest.Key, Now: c.Now, Logger: quiet})
	require.NoError(t, err)
	defer d.Close()

	for i := range catalog.LookupOrderLimit.Calls {
		r := demoCall(t, d, c, catalog.LookupOrderTool, fmt.Sprint("call_", i), "conv_chatty")
		require.Equal(t, "A-1001", r["orderId"], "call %d of 20 runs: %v", i+1, r)
	}
	r := demoCall(t, d, c, catalog.LookupOrderTool, "call_20", "conv_chatty")
	require.True(t, rateLimited(r), "the 21st call within a minute: %v", r)
	assert.Equal(t, false, r["allowed"])
	assert.Equal(t, "blocked", r["outcome"])
	assert.Equal(t, "lookup_order was called too often in this conversation, so it was not carried out. Try again in about 3 seconds.", r["detail"])

	again := demoCall(t, d, c, catalog.LookupOrderTool, "call_0", "conv_chatty")
	assert.Equal(t, "A-1001", again["orderId"], "a replay gets its stored answer, not a refusal")
	other := demoCall(t, d, c, catalog.LookupOrderTool, "call_other", "conv_other")
	assert.Equal(t, "A-1001", other["orderId"], "another conversation has its own count")
	cancel := demoCall(t, d, c, catalog.CancelOrderTool, "cancel_1", "conv_chatty")
	assert.Equal(t, true, cancel["cancelled"], "cancel_order is not limited: %v", cancel)

	c.Advance(3 * time.Second)
	r = demoCall(t, d, c, catalog.LookupOrderTool, "call_21", "conv_chatty")
	assert.Equal(t, "A-1001", r["orderId"], "after the wait the detail gave, one more call runs: %v", r)
	r = demoCall(t, d, c, catalog.LookupOrderTool, "call_22", "conv_chatty")
	assert.True(t, rateLimited(r))
}
