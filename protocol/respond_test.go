package protocol

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRespondOnce: a second Respond for one call writes nothing, so a
// handler that answers twice never sends two JSON bodies.
func TestRespondOnce(t *testing.T) {
	h, logs := newHandler(t, Config{Tools: appTools("mine")})
	ctx := context.Background()
	cctx, resp, ok := h.Verify(ctx, post(toolCall("mine", "once_1", `{}`)))
	require.True(t, ok, "body %s", resp.Body)

	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/", nil).WithContext(cctx)
	Respond(w, r, map[string]int{"a": 1}, nil)
	second := Answer(cctx, map[string]int{"b": 2}, nil)
	assert.Zero(t, second.Status)
	Respond(w, r, map[string]int{"c": 3}, nil)
	assert.Equal(t, `{"result":{"a":1}}`, w.Body.String())
	assert.Len(t, logs.find(t, "answered twice"), 2)
}

// TestRespondWithoutCall: Respond without a verified call answers the
// contract's envelope instead of panicking.
func TestRespondWithoutCall(t *testing.T) {
	w := httptest.NewRecorder()
	Respond(w, httptest.NewRequest(http.MethodPost, "/", nil), "x", nil)
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
	assert.Contains(t, w.Body.String(), `"code":"execution_failed"`)
	assert.Contains(t, w.Body.String(), "middleware")
}

// TestRefusalByValue: a Refusal returned by value encodes as the §3.1
// object, not as a Go struct dump.
func TestRefusalByValue(t *testing.T) {
	tool := NewTool("refuse_value", RiskLow, "Refuses by value.", func(ctx context.Context, c ToolCall[struct{}]) (Refusal, error) {
		return Refusal{Reason: "nope", Detail: "Not today."}, nil
	})
	h, _ := newHandler(t, Config{Tools: []*Tool{tool}})
	resp := h.Serve(context.Background(), post(toolCall("refuse_value", "rv_1", `{}`)))
	assert.JSONEq(t, `{"ok":false,"allowed":false,"outcome":"blocked","reason":"nope","detail":"Not today."}`, string(requireResult(t, resp)))
}

// TestToolErrorStatus: a tool that returns an *Error cannot pick its own
// status: only invalid_input and unknown_tool pass through (with their
// contract status); anything else is execution_failed, and a replay answers
// the same status and bytes.
func TestToolErrorStatus(t *testing.T) {
	tool := NewTool("errs", RiskLow, "Returns errors.", func(ctx context.Context, c ToolCall[struct {
		Kind string `json:"kind"`
	}]) (any, error) {
		switch c.Input.Kind {
		case "unavailable":
			return nil, &Error{Status: http.StatusServiceUnavailable, Code: CodeMissingSecret, Message: "down"}
		case "input":
			return nil, &Error{Status: 422, Code: CodeInvalidInput, Message: "kind: not that one"}
		}
		return nil, unknownTool("other")
	})
	h, _ := newHandler(t, Config{Tools: []*Tool{tool}})
	ctx := context.Background()
	for _, c := range []struct {
		kind    string
		status  int
		code    Code
		message string
	}{
		{"unavailable", http.StatusOK, CodeExecutionFailed, "tool errs failed (reference "}, // its message hidden like any error
		{"input", http.StatusBadRequest, CodeInvalidInput, "kind: not that one"},
		{"unknown", http.StatusNotFound, CodeUnknownTool, `no tool named "other" is registered`}, // the tool's own *Error, not one naming the tool called
	} {
		req := post(toolCall("errs", "err_"+c.kind, `{"kind":"`+c.kind+`"}`))
		first := h.Serve(ctx, req)
		assert.Contains(t, requireError(t, first, c.status, c.code), c.message, c.kind)
		again := h.Serve(ctx, req)
		assert.Equal(t, first.Status, again.Status, c.kind)
		assert.Equal(t, string(first.Body), string(again.Body), c.kind)
	}
}

// TestErrorMessagesNotHTMLEscaped: messages stay readable JSON.
func TestErrorMessagesNotHTMLEscaped(t *testing.T) {
	h, _ := newHandler(t, Config{Tools: []*Tool{echoTool(nil)}})
	resp := h.Serve(context.Background(), post(toolCall("echo", "esc_1", `{"orderId":0}`)))
	requireError(t, resp, http.StatusBadRequest, CodeInvalidInput)
	assert.Contains(t, string(resp.Body), "must be >= 1")
}

// TestStaleMessage: the stale answer says how far and which way, exactly.
func TestStaleMessage(t *testing.T) {
	sig, err := parseSignature("t=1000000,v1=" + hex64)
	require.NoError(t, err)
	now := time.UnixMilli(1000000 + 5*60*1000 + 1)
	err = sig.checkTime(now, defaultTolerance)
	require.ErrorIs(t, err, CodeStaleTimestamp)
	assert.Contains(t, err.Error(), "t is 5m0.001s behind the server clock; at most 5m0s either way is accepted")
	err = sig.checkTime(time.UnixMilli(1000000-6*60*1000), defaultTolerance)
	assert.Contains(t, err.Error(), "6m0s ahead of the server clock")
	// At either end of int64 the difference overflows; the message still
	// says which way.
	for _, c := range []struct {
		t   int64
		way string
	}{{math.MinInt64, "behind"}, {math.MinInt64 + 1, "behind"}, {math.MaxInt64, "ahead of"}, {-1, "behind"}} {
		err = (&signature{timestamp: c.t}).checkTime(now, defaultTolerance)
		require.ErrorIs(t, err, CodeStaleTimestamp, "t=%d", c.t)
		assert.Contains(t, err.Error(), " "+c.way+" the server clock", "t=%d", c.t)
	}
}

// TestDiagnosticsCancelledByCaller: a caller that goes away is not told the
// diagnostics timed out.
func TestDiagnosticsCancelledByCaller(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	h, _ := newHandler(t, Config{DiagnosticsReplace: func(ctx context.Context) (any, error) {
		<-release
		return nil, errors.New("late")
	}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	msg := requireError(t, h.Serve(ctx, post(`{"op":"diagnostics"}`)), http.StatusOK, CodeExecutionFailed)
	assert.Equal(t, "the request ended before diagnostics finished", msg)
}

const hex64 = "0000000000000000000000000000000000000000000000000000000000000000"

// TestKeyFormatting: no fmt verb or slog handler prints a Key's secret.
func TestKeyFormatting(t *testing.T) {
	k := mustParseKey(testKey)
	secret, err := deriveSecret(testKey)
	require.NoError(t, err)
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("k", "key", k)
	var text bytes.Buffer
	slog.New(slog.NewTextHandler(&text, nil)).Info("k", "key", k)
	for _, out := range []string{fmt.Sprintf("%v", k), fmt.Sprintf("%+v", k), fmt.Sprint(k), text.String()} {
		assert.Contains(t, out, k.st.fingerprint)
	}
	for _, out := range []string{fmt.Sprintf("%v", k), fmt.Sprintf("%+v", k), fmt.Sprintf("%#v", k), fmt.Sprint(k), buf.String(), text.String()} {
		assert.NotContains(t, out, hex.EncodeToString(secret))
		assert.NotContains(t, out, fmt.Sprint(secret))
		assert.NotContains(t, out, testKey)
	}
}

// panicJSON panics when encoded.
type panicJSON struct{}

func (panicJSON) MarshalJSON() ([]byte, error) { panic("encoder exploded") }

// TestPanicsOutsideTheToolAreContained: a result whose MarshalJSON panics,
// a panicking ErrorMessage hook or Observer still get an answer, and the
// answer is stored, so a repeat is answered at once.
func TestPanicsOutsideTheToolAreContained(t *testing.T) {
	marshal := NewTool("bad_json", RiskLow, "Returns a result that panics when encoded.", func(ctx context.Context, c ToolCall[struct{}]) (panicJSON, error) {
		return panicJSON{}, nil
	})
	failing := NewTool("failing", RiskLow, "Fails.", func(ctx context.Context, c ToolCall[struct{}]) (any, error) {
		return nil, errors.New("db down")
	})
	h, logs := newHandler(t, Config{
		Tools:        []*Tool{marshal, failing},
		ErrorMessage: func(context.Context, *Call, error) string { panic("hook exploded") },
		Observer:     func(context.Context, Event) { panic("observer exploded") },
		ReplayLease:  time.Hour, // a claim left unsaved would block the repeat below
	})
	ctx := context.Background()
	for _, tool := range []string{"bad_json", "failing"} {
		req := post(toolCall(tool, "contained_"+tool, `{}`))
		first := h.Serve(ctx, req)
		assert.Contains(t, requireError(t, first, http.StatusOK, CodeExecutionFailed), "failed unexpectedly")
		again := h.Serve(ctx, req)
		assert.Equal(t, string(first.Body), string(again.Body))
	}
	assert.Contains(t, logs.String(), "observer exploded")
	assert.Contains(t, logs.String(), "hook exploded")
}

// TestSettle: a call the middleware let through but the handler never
// answered gets execution_failed stored, so its repeat answers at once.
func TestSettle(t *testing.T) {
	h, logs := newHandler(t, Config{ReplayLease: time.Hour, Tools: appTools("mine")})
	ctx := context.Background()
	req := post(toolCall("mine", "settle_1", `{}`))
	cctx, _, ok := h.Verify(ctx, req)
	require.True(t, ok)
	Settle(cctx, 0, nil) // the handler wrote its own answer
	_, again, ok := h.Verify(ctx, req)
	require.False(t, ok)
	assert.Contains(t, requireError(t, again, http.StatusOK, CodeExecutionFailed), "did not answer")
	assert.Len(t, logs.find(t, "not answered"), 1)

	// A call answered through Respond is left alone.
	cctx, _, ok = h.Verify(ctx, post(toolCall("mine", "settle_2", `{}`)))
	require.True(t, ok)
	Answer(cctx, "done", nil)
	Settle(cctx, 0, nil)
	_, again, _ = h.Verify(ctx, post(toolCall("mine", "settle_2", `{}`)))
	assert.Equal(t, `{"result":"done"}`, string(again.Body))
	assert.Zero(t, Settle(ctx, 0, "boom").Status, "no call on ctx: nothing to do")

	// A panic in the handler: logged with its stack, answered, kept.
	cctx, _, ok = h.Verify(ctx, post(toolCall("mine", "settle_3", `{}`)))
	require.True(t, ok)
	resp := Settle(cctx, 0, "handler bug")
	assert.Equal(t, "tool mine failed unexpectedly", requireError(t, resp, http.StatusOK, CodeExecutionFailed))
	assert.Zero(t, Settle(cctx, 0, "again").Status, "a call is answered once")
	_, again, _ = h.Verify(ctx, post(toolCall("mine", "settle_3", `{}`)))
	assert.Equal(t, string(resp.Body), string(again.Body))
	panics := logs.find(t, "your handler panicked")
	require.Len(t, panics, 2)
	assert.Contains(t, panics[0]["stack"], "runtime/debug.Stack")
}
