package protocol

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

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
