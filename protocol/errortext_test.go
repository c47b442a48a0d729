package protocol

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// errorCheckingHandler is a slog.Handler as an app may write one: it
// formats every error it is given by calling Error. It calls it under
// recover only to fail the test, through t, when that Error panics: a
// handler that does not recover would have taken the server down there.
type errorCheckingHandler struct {
	slog.Handler
	t testing.TB
}

func (c errorCheckingHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok {
			func() {
				defer func() {
					if p := recover(); p != nil {
						c.t.Errorf("the log line %q got an error whose Error panicked (%v): a handler that does not recover would crash the server", r.Message, p)
					}
				}()
				_ = err.Error()
			}()
		}
		return true
	})
	return c.Handler.Handle(ctx, r)
}

// newCheckingLogger is newLogger behind an errorCheckingHandler.
func newCheckingLogger(t testing.TB) (*slog.Logger, *logBuffer) {
	buf := &logBuffer{}
	return slog.New(errorCheckingHandler{slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}), t}), buf
}

// panickyText is what the log says of a panickyError.
const panickyText = "(the Error method of this protocol.panickyError panicked: Error() exploded)"

// probingStore is a custom store whose Probe fails with err.
type probingStore struct {
	Store
	err error
}

func (s probingStore) Probe(context.Context) error { return s.err }

// panickyReader fails every read with a panickyError.
type panickyReader struct{}

func (panickyReader) Read([]byte) (int, error) { return 0, panickyError{} }

// panickyMarshaler fails its encoding with a panickyError.
type panickyMarshaler struct{}

func (panickyMarshaler) MarshalJSON() ([]byte, error) { return nil, panickyError{} }

// TestUserErrorsWhoseErrorPanics: an error from code the core does not own
// whose Error method panics (a key source's, a store's, a body reader's,
// Config.Diagnostics', a MarshalJSON's) is logged as text saying so, so an
// app's slog.Handler that formats errors without recovering never sees
// it; the request is answered as for any other such error. An
// interceptor's error whose As panics fails the call like a panic in the
// interceptor.
func TestUserErrorsWhoseErrorPanics(t *testing.T) {
	ctx := context.Background()
	// logged asserts that the line with msg carries the error as text.
	logged := func(t *testing.T, logs *logBuffer, msg string) {
		t.Helper()
		lines := logs.find(t, msg)
		require.NotEmpty(t, lines, "no line %q in %s", msg, logs)
		assert.Equal(t, panickyText, lines[0]["error"])
	}
	t.Run("Config.KeySource", func(t *testing.T) {
		logger, logs := newCheckingLogger(t)
		var h *Handler
		var err error
		require.NotPanics(t, func() {
			h, err = New(Config{Logger: logger, KeySource: func(context.Context) ([]string, error) { return nil, panickyError{} }})
		})
		t.Cleanup(func() { _ = h.Close() })
		require.ErrorIs(t, err, CodeMissingSecret)
		assert.Contains(t, err.Error(), "Config.KeySource returned an error")
		logged(t, logs, "no usable key yet")
	})
	t.Run("the store's Probe", func(t *testing.T) {
		logger, logs := newCheckingLogger(t)
		h, _ := newHandler(t, Config{Logger: logger, Store: probingStore{newMemoryStore(0, nil), panickyError{}}})
		var r Report
		require.NotPanics(t, func() { r = h.Report(ctx) })
		require.NotNil(t, r.Store.Reachable)
		assert.False(t, *r.Store.Reachable)
		logged(t, logs, "did not answer its probe")
	})
	t.Run("the store's Claim", func(t *testing.T) {
		logger, logs := newCheckingLogger(t)
		store := newRecordingStore()
		store.claimErr = panickyError{}
		h, _ := newHandler(t, Config{Logger: logger, Store: store, Tools: []*Tool{echoTool(nil)}})
		msg := requireError(t, h.Serve(ctx, post(toolCall("echo", "claim_1", `{"orderId":1}`))), http.StatusOK, CodeExecutionFailed)
		assert.Equal(t, msgStoreFailed, msg)
		logged(t, logs, "the tool was not run")
	})
	t.Run("the store's Claim, for a read-only tool", func(t *testing.T) {
		logger, logs := newCheckingLogger(t)
		store := newRecordingStore()
		store.claimErr = panickyError{}
		lookup := NewTool("lookup", RiskLow, "Reads.", func(context.Context, ToolCall[echoInput]) (string, error) { return "found", nil }, ReadOnly())
		h, _ := newHandler(t, Config{Logger: logger, Store: store, Tools: []*Tool{lookup}})
		assert.JSONEq(t, `"found"`, string(requireResult(t, h.Serve(ctx, post(toolCall("lookup", "claim_2", `{"orderId":1}`))))))
		logged(t, logs, "the read-only tool runs")
	})
	t.Run("the store's Save", func(t *testing.T) {
		logger, logs := newCheckingLogger(t)
		store := newRecordingStore()
		store.saveErr = panickyError{}
		h, _ := newHandler(t, Config{Logger: logger, Store: store, Tools: []*Tool{echoTool(nil)}})
		requireResult(t, h.Serve(ctx, post(toolCall("echo", "save_1", `{"orderId":1}`))))
		logged(t, logs, "could not save the answer")
	})
	t.Run("the store's commit", func(t *testing.T) {
		logger, logs := newCheckingLogger(t)
		store := &runnerStore{recordingStore: newRecordingStore(), commitErr: panickyError{}}
		h, _ := newHandler(t, Config{Logger: logger, Store: store, Tools: []*Tool{txTool(&int64Counter{})}})
		msg := requireError(t, h.Serve(ctx, post(toolCall("tx", "commit_1", `{"orderId":1}`))), http.StatusOK, CodeExecutionFailed)
		assert.Equal(t, msgNotCommitted, msg)
		logged(t, logs, "could not commit")
	})
	t.Run("Config.Diagnostics", func(t *testing.T) {
		logger, logs := newCheckingLogger(t)
		h, _ := newHandler(t, Config{Logger: logger, Diagnostics: func(context.Context) (any, error) { return nil, panickyError{} }})
		r := h.Report(ctx)
		assert.JSONEq(t, `{"error":"Config.Diagnostics failed; the server's log has its error"}`, string(r.App))
		logged(t, logs, "Config.Diagnostics failed")
	})
	t.Run("Config.Diagnostics' MarshalJSON", func(t *testing.T) {
		logger, logs := newCheckingLogger(t)
		h, _ := newHandler(t, Config{Logger: logger, Diagnostics: func(context.Context) (any, error) { return panickyMarshaler{}, nil }})
		r := h.Report(ctx)
		assert.JSONEq(t, `{"error":"what Config.Diagnostics returned cannot be encoded as JSON"}`, string(r.App))
		assert.Equal(t, "(the Error method of this *json.MarshalerError panicked: Error() exploded)", logs.find(t, "cannot be encoded as JSON")[0]["error"])
	})
	t.Run("a result's MarshalJSON", func(t *testing.T) {
		logger, logs := newCheckingLogger(t)
		tool := NewTool("enc", RiskLow, "Returns what cannot be encoded.", func(context.Context, ToolCall[echoInput]) (panickyMarshaler, error) {
			return panickyMarshaler{}, nil
		})
		h, _ := newHandler(t, Config{Logger: logger, Tools: []*Tool{tool}})
		msg := requireError(t, h.Serve(ctx, post(toolCall("enc", "enc_1", `{"orderId":1}`))), http.StatusOK, CodeExecutionFailed)
		assert.Equal(t, "tool enc returned a result that cannot be encoded as JSON", msg)
		assert.Equal(t, "(the Error method of this *json.MarshalerError panicked: Error() exploded)", logs.find(t, "not JSON-encodable")[0]["error"])
	})
	t.Run("the request body's reader", func(t *testing.T) {
		logger, logs := newCheckingLogger(t)
		h, _ := newHandler(t, Config{Logger: logger})
		req := post(`{"op":"diagnostics"}`)
		req.Body, req.BodyBytes = io.MultiReader(strings.NewReader(`{"op":`), panickyReader{}), nil
		var resp Response
		require.NotPanics(t, func() { resp = h.Serve(ctx, req) })
		requireError(t, resp, http.StatusBadRequest, CodeInvalidBody)
		logged(t, logs, "could not be read")
	})
	t.Run("an interceptor's error", func(t *testing.T) {
		logger, logs := newCheckingLogger(t)
		ic := func(context.Context, *Call, *Tool) error { return panickyError{} }
		h, _ := newHandler(t, Config{Logger: logger, Tools: []*Tool{echoTool(nil)}, Interceptors: []Interceptor{ic}})
		var resp Response
		require.NotPanics(t, func() { resp = h.Serve(ctx, post(toolCall("echo", "ic_1", `{"orderId":1}`))) })
		assert.Equal(t, "tool echo failed unexpectedly", requireError(t, resp, http.StatusOK, CodeExecutionFailed))
		lines := logs.find(t, "an interceptor panicked")
		require.Len(t, lines, 1)
		assert.Contains(t, lines[0]["panic"], "As exploded")
	})
}

// TestErrorText: an error's message, or what its Error's panic was.
func TestErrorText(t *testing.T) {
	assert.Equal(t, "it broke", errorText(errors.New("it broke")))
	assert.Equal(t, panickyText, errorText(panickyError{}))
}
