package protocol

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lookupTool is a read-only tool counting its runs.
func lookupTool(runs *int64Counter) *Tool {
	return NewTool("lookup", RiskLow, "Looks an order up.", func(ctx context.Context, c ToolCall[echoInput]) (echoInput, error) {
		runs.add()
		return c.Input, nil
	}, ReadOnly())
}

// TestReadOnlyToolRunsThroughAStoreOutage: when the store fails or misses
// its deadline, a read-only tool runs and its answer is sent, not kept,
// logged and counted; any other tool is not run.
func TestReadOnlyToolRunsThroughAStoreOutage(t *testing.T) {
	for _, fault := range []string{"error", "deadline"} {
		t.Run(fault, func(t *testing.T) {
			store := newRecordingStore()
			if fault == "error" {
				store.claimErr = errors.New("connection refused")
			} else {
				store.blockClaim = true
			}
			looks, echoes := &int64Counter{}, &int64Counter{}
			h, logs := newHandler(t, Config{Tools: []*Tool{lookupTool(looks), echoTool(echoes)}, Store: store, StoreTimeout: 20 * time.Millisecond})

			body := toolCall("lookup", "call_ro1", `{"orderId":3}`)
			assert.JSONEq(t, `{"orderId":3}`, string(requireResult(t, h.Serve(context.Background(), post(body)))))
			assert.Equal(t, int64(1), looks.get(), "the read-only tool runs")
			assert.Empty(t, store.saves, "its answer is not kept")
			assert.Equal(t, int64(1), h.stats.readOnlyRuns.Load(), "the run is counted")
			lines := logs.find(t, "the read-only tool runs and its answer is not kept")
			require.Len(t, lines, 1)
			assert.Equal(t, "call_ro1", lines[0]["toolCallId"])

			requireResult(t, h.Serve(context.Background(), post(body)))
			assert.Equal(t, int64(2), looks.get(), "a repeat runs it again: nothing was kept")
			assert.Equal(t, int64(2), h.stats.readOnlyRuns.Load())

			msg := requireError(t, h.Serve(context.Background(), post(toolCall("echo", "call_ro2", `{"orderId":3}`))), http.StatusOK, CodeExecutionFailed)
			assert.Equal(t, msgStoreFailed, msg)
			assert.Zero(t, echoes.get(), "a tool not declared read-only does not run")
			// Counted once each, apart: a call not run, and read-only calls
			// run all the same.
			r := h.Report(context.Background())
			assert.Equal(t, int64(1), r.Store.ClaimFailures, "only the call not run")
			assert.Equal(t, int64(2), r.Store.ReadOnlyRuns)
		})
	}
}

// TestReadOnlyToolIsKeptWhenTheStoreWorks: with a working store a
// read-only tool is claimed and its answer kept like any other.
func TestReadOnlyToolIsKeptWhenTheStoreWorks(t *testing.T) {
	store := newRecordingStore()
	looks := &int64Counter{}
	h, _ := newHandler(t, Config{Tools: []*Tool{lookupTool(looks)}, Store: store})
	body := toolCall("lookup", "call_ro3", `{"orderId":3}`)
	first := h.Serve(context.Background(), post(body))
	again := h.Serve(context.Background(), post(body))
	assert.Equal(t, string(first.Body), string(again.Body))
	assert.Equal(t, int64(1), looks.get())
	assert.Len(t, store.saves, 1)
	assert.Zero(t, h.stats.readOnlyRuns.Load())
}

// TestReadOnlyToolDoesNotRunForAnEndedRequest: a request that ended before
// the claim is not served, read-only or not.
func TestReadOnlyToolDoesNotRunForAnEndedRequest(t *testing.T) {
	store := newRecordingStore()
	store.blockClaim = true
	looks := &int64Counter{}
	h, _ := newHandler(t, Config{Tools: []*Tool{lookupTool(looks)}, Store: store})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	msg := requireError(t, h.Serve(ctx, post(toolCall("lookup", "call_ro4", `{"orderId":3}`))), http.StatusOK, CodeExecutionFailed)
	assert.Equal(t, msgRequestEnded, msg)
	assert.Zero(t, looks.get())
}

// TestReadOnlyThroughMiddleware: behind Middleware a read-only call passes
// through a store outage too, and its answer is not kept.
func TestReadOnlyThroughMiddleware(t *testing.T) {
	store := newRecordingStore()
	store.claimErr = errors.New("connection refused")
	h, _ := newHandler(t, Config{Tools: []*Tool{lookupTool(&int64Counter{})}, Store: store})
	callCtx, resp, ok := h.Verify(context.Background(), post(toolCall("lookup", "call_ro5", `{"orderId":3}`)))
	require.True(t, ok, "want the call through, got %s", resp.Body)
	requireResult(t, Answer(callCtx, "found", nil))
	assert.Empty(t, store.saves)
	assert.Equal(t, int64(1), h.stats.readOnlyRuns.Load())
}

// TestStoreFailsWhileACopyWaits: a copy told that the call runs, whose
// store then fails while its request goes on, is answered as a store
// failure, not as a copy whose request ended: a read-only tool then runs
// (its answer not kept), any other is not run.
func TestStoreFailsWhileACopyWaits(t *testing.T) {
	store := newRecordingStore()
	store.running, store.claimErr = 2, errors.New("connection reset by peer")
	looks, echoes := &int64Counter{}, &int64Counter{}
	h, logs := newHandler(t, Config{Tools: []*Tool{lookupTool(looks), echoTool(echoes)}, Store: store})
	assert.JSONEq(t, `{"orderId":3}`, string(requireResult(t, h.Serve(context.Background(), post(toolCall("lookup", "call_w1", `{"orderId":3}`))))))
	assert.Equal(t, int64(1), looks.get(), "the read-only tool runs")
	assert.Equal(t, int64(1), h.stats.readOnlyRuns.Load())
	assert.Empty(t, store.saves, "its answer is not kept")
	assert.Len(t, logs.find(t, "the read-only tool runs and its answer is not kept"), 1)

	store.running = 2
	msg := requireError(t, h.Serve(context.Background(), post(toolCall("echo", "call_w2", `{"orderId":3}`))), http.StatusOK, CodeExecutionFailed)
	assert.Equal(t, msgStoreFailed, msg)
	assert.Zero(t, echoes.get())
	assert.Equal(t, int64(1), h.stats.claimFailure.Load(), "the call not run is counted in claimFailures; the read-only run is in readOnlyRuns alone (§10)")
}
