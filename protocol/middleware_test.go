package protocol

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVerifyRespond is the middleware path: Verify lets a call through,
// the application answers it with Respond.
func TestVerifyRespond(t *testing.T) {
	runs := &int64Counter{}
	obs := &observed{}
	tools := append([]*Tool{echoTool(runs)}, appTools("handled_elsewhere", "x", "dispatched_later")...)
	h, _ := newHandler(t, Config{Tools: tools, Observer: obs.add})
	ctx := context.Background()

	t.Run("unknown tools are answered before the app", func(t *testing.T) {
		cctx, resp, ok := h.Verify(ctx, post(toolCall("nobody_knows", "v0", `{}`)))
		require.False(t, ok)
		_, has := CallFrom(cctx)
		assert.False(t, has, "no call reaches the app")
		assert.Contains(t, requireError(t, resp, http.StatusNotFound, CodeUnknownTool), `"nobody_knows"`)
		assert.Equal(t, "nobody_knows", obs.last(t).Tool, "the observer sees the refusal")
	})
	t.Run("tools the app answers pass", func(t *testing.T) {
		cctx, resp, ok := h.Verify(ctx, post(toolCall("handled_elsewhere", "v1", `{"anything":true}`)))
		require.True(t, ok, "body %s", resp.Body)
		call, ok := CallFrom(cctx)
		require.True(t, ok)
		assert.Equal(t, "handled_elsewhere", call.Tool)
		assert.Equal(t, `{"anything":true}`, string(call.RawInput))
		out := Answer(cctx, map[string]string{"done": "yes"}, nil)
		assert.Equal(t, `{"result":{"done":"yes"}}`, string(out.Body))
		assert.Equal(t, "handled_elsewhere", obs.last(t).Tool)

		// Respond stored the answer: the same request gets it back, unverified again.
		_, again, ok := h.Verify(ctx, post(toolCall("handled_elsewhere", "v1", `{"anything":true}`)))
		assert.False(t, ok)
		assert.Equal(t, string(out.Body), string(again.Body))
		assert.Equal(t, http.StatusOK, again.Status)
	})
	t.Run("registered tools get their input validated", func(t *testing.T) {
		_, resp, ok := h.Verify(ctx, post(toolCall("echo", "v2", `{"orderId":"x"}`)))
		assert.False(t, ok)
		requireError(t, resp, http.StatusBadRequest, CodeInvalidInput)
		cctx, resp, ok := h.Verify(ctx, post(toolCall("echo", "v3", `{"orderId":5}`)))
		require.True(t, ok, "body %s", resp.Body)
		call, _ := CallFrom(cctx)
		var in echoInput
		require.NoError(t, call.BindInput(&in))
		assert.Equal(t, int64(5), in.OrderID)
		assert.Zero(t, runs.get(), "Verify does not run the tool")
		out := Answer(cctx, nil, errors.New("stock service down"))
		requireHidden(t, requireError(t, out, http.StatusOK, CodeExecutionFailed), "echo")
	})
	t.Run("refusal", func(t *testing.T) {
		cctx, _, ok := h.Verify(ctx, post(toolCall("x", "v4", `{}`)))
		require.True(t, ok)
		out := Answer(cctx, notSignedIn("Sign in."), nil)
		assert.Equal(t, `{"result":{"ok":false,"allowed":false,"outcome":"blocked","reason":"not_signed_in","detail":"Sign in."}}`, string(out.Body))
		cctx, _, ok = h.Verify(ctx, post(toolCall("x", "v5", `{}`)))
		require.True(t, ok)
		out = Answer(cctx, nil, Refuse("", "No."))
		assert.Contains(t, string(out.Body), `"reason":"tool_refused"`)
	})
	t.Run("refusals and non-calls answer at once", func(t *testing.T) {
		for _, c := range []struct {
			req  Request
			code Code
		}{
			{Request{Method: http.MethodPost}, CodeMissingSignature},
			{post(`{"op":"diagnostics"}`), ""}, // the report: a result
			{post(`{"op":"x"}`), CodeUnknownOp},
			{Request{Method: http.MethodPatch}, CodeMethodNotAllowed},
		} {
			cctx, resp, ok := h.Verify(ctx, c.req)
			assert.False(t, ok)
			_, has := CallFrom(cctx)
			assert.False(t, has)
			assert.Equal(t, c.code, resp.code)
		}
		_, resp, ok := h.Verify(ctx, get())
		assert.False(t, ok)
		assert.Contains(t, string(resp.Body), `"tools"`)
	})
	t.Run("unknown tool answered with the bare code", func(t *testing.T) {
		cctx, _, ok := h.Verify(ctx, post(toolCall("dispatched_later", "v7", `{}`)))
		require.True(t, ok)
		msg := requireError(t, Answer(cctx, nil, CodeUnknownTool), http.StatusNotFound, CodeUnknownTool)
		assert.Contains(t, msg, `"dispatched_later"`)
		_, again, _ := h.Verify(ctx, post(toolCall("dispatched_later", "v7", `{}`)))
		assert.Equal(t, http.StatusNotFound, again.Status, "a replay keeps the 404")
	})
	t.Run("Answer without a verified call", func(t *testing.T) {
		msg := requireError(t, Answer(ctx, "x", nil), http.StatusOK, CodeExecutionFailed)
		assert.Contains(t, msg, "middleware")
	})
}
