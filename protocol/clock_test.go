package protocol

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSystemClockWindow: without Config.Now a request's window is
// the system clock's, in both directions.
func TestSystemClockWindow(t *testing.T) {
	h, err := New(Config{Keys: []string{testKey}, Logger: discardLogger()})
	require.NoError(t, err)
	require.True(t, h.systemClock)
	for _, c := range []struct {
		skew time.Duration
		ok   bool
	}{{0, true}, {-4 * time.Minute, true}, {4 * time.Minute, true}, {-6 * time.Minute, false}, {6 * time.Minute, false}} {
		resp := h.Serve(context.Background(), diagnosticsAt(testKey, time.Now().Add(c.skew)))
		if c.ok {
			assert.Equal(t, http.StatusOK, resp.Status, "skew %s: %s", c.skew, resp.Body)
		} else {
			assert.Equal(t, CodeStaleTimestamp, resp.code, "skew %s: %s", c.skew, resp.Body)
		}
	}
}

// TestConfigNowIsReadPerRequest: with Config.Now set, each request's
// window is what it returns at that request, not at New.
func TestConfigNowIsReadPerRequest(t *testing.T) {
	var offset atomic.Int64
	now := func() time.Time { return testNow.Add(time.Duration(offset.Load())) }
	h, _ := newHandler(t, Config{Now: now})
	require.False(t, h.systemClock)
	req := diagnosticsAt(testKey, testNow)
	assert.Equal(t, http.StatusOK, h.Serve(context.Background(), req).Status)
	offset.Store(int64(5 * time.Minute))
	assert.Equal(t, http.StatusOK, h.Serve(context.Background(), req).Status, "exactly 5 minutes is accepted")
	offset.Store(int64(5*time.Minute + time.Millisecond))
	assert.Equal(t, CodeStaleTimestamp, h.Serve(context.Background(), req).code)
	offset.Store(int64(-5*time.Minute - time.Millisecond))
	assert.Equal(t, CodeStaleTimestamp, h.Serve(context.Background(), req).code)
}
