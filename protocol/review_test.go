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
