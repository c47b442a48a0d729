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

// TestAnswerByInATransaction: a tool run inside a store's transaction
// (RunClaimed) is not left running at Request.AnswerBy, whose writes must
// end before the transaction does: Serve waits for it, and its call is
// still answered saying it timed out.
func TestAnswerByInATransaction(t *testing.T) {
	store := &runnerStore{recordingStore: newRecordingStore()}
	var returned atomic.Bool
	slow := NewTool("slow", RiskLow, "Writes until its ctx ends, then a little more.", func(ctx context.Context, _ ToolCall[struct{}]) (string, error) {
		<-ctx.Done()
		time.Sleep(20 * time.Millisecond) // the end of its writes
		returned.Store(true)
		return "", ctx.Err()
	})
	h, _ := newHandler(t, Config{Tools: []*Tool{slow}, Store: store})
	req := post(toolCall("slow", "call_tx_slow", `{}`))
	req.AnswerBy = time.Now().Add(50 * time.Millisecond)
	resp := h.Serve(context.Background(), req)
	assert.True(t, returned.Load(), "Serve returned before the tool in the transaction did")
	msg := requireError(t, resp, http.StatusOK, CodeExecutionFailed)
	assert.Equal(t, "tool slow timed out: it had not finished when the request had to be answered", msg)
	assert.Equal(t, 1, store.runs)
}

// TestMaxAnswerBytes: an answer longer than Request.MaxAnswerBytes is
// replaced by execution_failed before it is kept, so a repeat gets the
// same; other requests' answers (the manifest) too; a shorter answer is
// untouched.
func TestMaxAnswerBytes(t *testing.T) {
	runs := &int64Counter{}
	h, logs := newHandler(t, Config{Tools: []*Tool{echoTool(runs)}})
	body := toolCall("echo", "call_long", `{"orderId":7,"note":"twenty characters.."}`)
	req := post(body)
	req.MaxAnswerBytes = 30
	first := h.Serve(context.Background(), req)
	msg := requireError(t, first, http.StatusOK, CodeExecutionFailed)
	assert.Equal(t, "the answer of tool echo is too large for this server to return (53 bytes, at most 30)", msg)
	again := h.Serve(context.Background(), post(body)) // a repeat on a mount without the limit
	assert.Equal(t, string(first.Body), string(again.Body), "the replacement is what was kept")
	assert.Equal(t, int64(1), runs.get())
	assert.Contains(t, logs.String(), "longer than the server's platform can return")

	req = post(toolCall("echo", "call_short", `{"orderId":7}`))
	req.MaxAnswerBytes = 30
	assert.JSONEq(t, `{"orderId":7}`, string(requireResult(t, h.Serve(context.Background(), req))))

	manifest := get()
	manifest.MaxAnswerBytes = 10
	msg = requireError(t, h.Serve(context.Background(), manifest), http.StatusOK, CodeExecutionFailed)
	require.Contains(t, msg, "the answer is too large for this server to return (")
}
