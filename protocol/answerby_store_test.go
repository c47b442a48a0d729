package protocol

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMaxAnswerBytesInATransaction: with a store that keeps the answer in
// the call's transaction (RunClaimed), an answer over
// Request.MaxAnswerBytes is replaced before the store keeps it, as with
// any other store, and the tool's writes are not committed: the agent was
// told the call failed (PROTOCOL.md §8.1), and a repeat gets that answer.
func TestMaxAnswerBytesInATransaction(t *testing.T) {
	store := &runnerStore{recordingStore: newRecordingStore()}
	runs := &int64Counter{}
	long := NewTool("long", RiskLow, "Writes in the call's transaction and answers at length.", func(ctx context.Context, _ ToolCall[struct{}]) (string, error) {
		runs.add()
		if ctx.Value(txMarker{}) == nil {
			return "", errors.New("not in the store's transaction")
		}
		return strings.Repeat("x", 400), nil
	})
	h, _ := newHandler(t, Config{Tools: []*Tool{long}, Store: store})
	body := toolCall("long", "call_tx_long", `{}`)
	req := post(body)
	req.MaxAnswerBytes = 300
	first := h.Serve(context.Background(), req)
	msg := requireError(t, first, http.StatusOK, CodeExecutionFailed)
	assert.Contains(t, msg, "too large for this server to return")
	again := h.Serve(context.Background(), post(body)) // a repeat on a mount without the limit
	assert.Equal(t, string(first.Body), string(again.Body), "the replacement is what the store kept")
	assert.Equal(t, int64(1), runs.get())
	require.Len(t, store.commits, 1)
	assert.False(t, store.commits[0], "the tool's writes are rolled back with an answer saying it failed")
}

// TestMaxAnswerBytesOnAReplay: an answer kept by a mount without the limit
// and replayed through one with it is replaced, and still reported as a
// replay: the tool did not run again.
func TestMaxAnswerBytesOnAReplay(t *testing.T) {
	runs := &int64Counter{}
	obs := &observed{}
	h, _ := newHandler(t, Config{Observer: obs.add, Tools: []*Tool{echoTool(runs)}})
	body := toolCall("echo", "call_replay_long", `{"orderId":7,"note":"twenty characters.."}`)
	requireResult(t, h.Serve(context.Background(), post(body))) // kept whole
	req := post(body)
	req.MaxAnswerBytes = 30
	requireError(t, h.Serve(context.Background(), req), http.StatusOK, CodeExecutionFailed)
	assert.Equal(t, int64(1), runs.get())
	obs.mu.Lock()
	defer obs.mu.Unlock()
	require.Len(t, obs.events, 2)
	assert.False(t, obs.events[0].Replayed)
	assert.True(t, obs.events[1].Replayed, "the repeat's answer came from the replay store")
}

// TestAnswerByUnderRace: calls whose tools return around their
// Request.AnswerBy, on a shared store, each keep one answer, saved once,
// which their repeats get byte for byte whether the tool beat the deadline
// or not; a late result never replaces it.
func TestAnswerByUnderRace(t *testing.T) {
	store := newRecordingStore()
	runs := &int64Counter{}
	racer := NewTool("racer", RiskLow, "Returns around its deadline.", func(ctx context.Context, c ToolCall[echoInput]) (string, error) {
		runs.add()
		time.Sleep(time.Duration(c.Input.OrderID%3) * time.Millisecond)
		return "done", nil
	})
	h, _ := newHandler(t, Config{Tools: []*Tool{racer}, Store: store})
	const calls = 60
	firsts := make([]string, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			req := post(toolCall("racer", fmt.Sprintf("call_race_%d", i), fmt.Sprintf(`{"orderId":%d}`, i+1)))
			req.AnswerBy = time.Now().Add(time.Millisecond)
			firsts[i] = string(h.Serve(context.Background(), req).Body)
		})
	}
	wg.Wait()
	time.Sleep(10 * time.Millisecond) // every late tool has returned
	for i := range calls {
		again := h.Serve(context.Background(), post(toolCall("racer", fmt.Sprintf("call_race_%d", i), fmt.Sprintf(`{"orderId":%d}`, i+1))))
		assert.Equal(t, firsts[i], string(again.Body), "call %d", i)
	}
	claims, saves, _ := store.counts()
	assert.Equal(t, 2*calls, claims)
	assert.Equal(t, calls, saves, "each answer saved once")
	assert.LessOrEqual(t, runs.get(), int64(calls), "a tool whose deadline passed before it began did not start")
}

// TestAnswerByPassed: a call whose Request.AnswerBy has passed by the time
// its tool would start (it waited for the claim, or the invocation came
// with no time left) is answered timed out without starting the tool,
// whose effects would otherwise happen after that answer.
func TestAnswerByPassed(t *testing.T) {
	runs := &int64Counter{}
	h, _ := newHandler(t, Config{Tools: []*Tool{echoTool(runs)}})
	req := post(toolCall("echo", "call_passed", `{"orderId":1}`))
	req.AnswerBy = time.Now().Add(-time.Millisecond)
	msg := requireError(t, h.Serve(context.Background(), req), http.StatusOK, CodeExecutionFailed)
	assert.Contains(t, msg, "timed out")
	time.Sleep(20 * time.Millisecond) // a tool started anyway has run by now
	assert.Equal(t, int64(0), runs.get(), "the tool did not start after its deadline")

	// Nor in a store's transaction, which then keeps nothing of it.
	store := &runnerStore{recordingStore: newRecordingStore()}
	h, _ = newHandler(t, Config{Tools: []*Tool{txTool(runs)}, Store: store})
	req = post(toolCall("tx", "call_passed_tx", `{"orderId":1}`))
	req.AnswerBy = time.Now().Add(-time.Millisecond)
	msg = requireError(t, h.Serve(context.Background(), req), http.StatusOK, CodeExecutionFailed)
	assert.Contains(t, msg, "timed out")
	assert.Equal(t, int64(0), runs.get(), "the tool did not start in its transaction")
	assert.Equal(t, []bool{false}, store.commits)
}
