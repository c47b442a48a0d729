package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBodyBytesAreTheAdaptersAfterServe checks what Request says: the core
// keeps nothing of BodyBytes once Serve or Verify returns. An adapter whose
// framework reuses its buffer (fasthttp, Hertz) overwrites it at once; the
// call a tool kept, the observer's event, the answer kept for replays and
// a repeat sent in that same buffer must all read as if it had not.
func TestBodyBytesAreTheAdaptersAfterServe(t *testing.T) {
	body := toolCall("keep", "call_own", `{"orderId":7,"note":"kept"}`)
	input := `{"orderId":7,"note":"kept"}`
	var (
		mu     sync.Mutex
		calls  []*Call
		inputs []json.RawMessage
	)
	runs := &int64Counter{}
	keep := NewTool("keep", RiskLow, "Keeps its call.", func(_ context.Context, c ToolCall[echoInput]) (echoInput, error) {
		runs.add()
		mu.Lock()
		calls = append(calls, c.Call)
		mu.Unlock()
		return c.Input, nil
	})
	h, _ := newHandler(t, Config{Tools: []*Tool{keep}, Observer: func(_ context.Context, ev Event) {
		mu.Lock()
		inputs = append(inputs, ev.Input)
		mu.Unlock()
	}})

	buf := []byte(body) // the framework's buffer
	req := post(body)
	req.BodyBytes = buf
	first := h.Serve(context.Background(), req)
	require.Equal(t, http.StatusOK, first.Status, "%s", first.Body)
	want := bytes.Clone(first.Body)
	clear(buf) // the framework reuses its buffer for the next request

	mu.Lock()
	require.Len(t, calls, 1)
	assert.Equal(t, body, string(calls[0].Body), "the kept call's Body")
	assert.Equal(t, input, string(calls[0].RawInput), "the kept call's RawInput")
	require.Len(t, inputs, 1)
	assert.Equal(t, input, string(inputs[0]), "the observer's Event.Input")
	mu.Unlock()

	// The repeat arrives in the same buffer: the kept answer, byte for
	// byte, without running the tool again.
	copy(buf, body)
	again := h.Serve(context.Background(), req)
	assert.Equal(t, http.StatusOK, again.Status)
	assert.Equal(t, string(want), string(again.Body), "the repeat gets the kept answer")
	assert.True(t, again.replayed, "the repeat is answered from the replay store")
	assert.Equal(t, int64(1), runs.get(), "the tool ran once")
	assert.Equal(t, string(want), string(first.Body), "the first answer is the core's own bytes")
}

// TestVerifiedCallOutlivesBodyBytes: in middleware mode the call Verify
// let through is read after the adapter's buffer was reused, as a handler
// that answers later (or keeps the call) reads it.
func TestVerifiedCallOutlivesBodyBytes(t *testing.T) {
	body := toolCall("app_tool", "call_verify_own", `{"orderId":9}`)
	h, _ := newHandler(t, Config{Tools: []*Tool{DeclareTool[echoInput]("app_tool", RiskLow, "Answered by the app.")}})
	buf := []byte(body)
	req := post(body)
	req.BodyBytes = buf
	ctx, resp, ok := h.Verify(context.Background(), req)
	require.True(t, ok, "%d %s", resp.Status, resp.Body)
	clear(buf)
	call, ok := CallFrom(ctx)
	require.True(t, ok)
	assert.Equal(t, body, string(call.Body))
	assert.Equal(t, `{"orderId":9}`, string(call.RawInput))
	var in echoInput
	require.NoError(t, call.BindInput(&in))
	assert.Equal(t, int64(9), in.OrderID)
	assert.Equal(t, http.StatusOK, Answer(ctx, in, nil).Status)
}
