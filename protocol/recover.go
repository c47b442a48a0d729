package protocol

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"
)

// errPanicked stands for a recovered panic.
var errPanicked = errors.New("panicked")

// protect runs fn and turns a panic in it into errPanicked, logged with its
// stack. Every call into code the core does not own (tools, input types'
// Validate and UnmarshalJSON, MarshalJSON of results, interceptors, stores,
// the observer, diagnostics) goes through it: a panic there fails that step
// and never takes the server down. what names the code for the log; call
// may be nil.
func protect[T any](h *Handler, ctx context.Context, what string, call *Call, fn func() (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			h.logPanic(ctx, what, call, p)
			var zero T
			v, err = zero, errPanicked
		}
	}()
	return fn()
}

// logPanic logs a recovered panic with its stack, and extra attributes
// when given.
func (h *Handler) logPanic(ctx context.Context, what string, call *Call, p any, extra ...any) {
	args := []any{"panic", fmt.Sprint(p), "stack", string(debug.Stack())}
	if call != nil {
		args = append(args, "tool", call.Tool, "toolCallId", call.ToolCallID)
	}
	h.cfg.Logger.ErrorContext(ctx, "median: "+what+" panicked", append(args, extra...)...)
}

// errorText is err's message, for the log. An error from code the core
// does not own (a key source, a store, a request body's reader,
// Config.Diagnostics, a result's MarshalJSON) may have an Error method
// that panics, and a slog.Handler of the app's that formats the error
// without recovering would then take the server down: the core logs such
// an error as this text, never as the error itself. A panic in Error is
// recovered and described instead. (An error whose message goes into an answer is
// formatted inside protect, like the code that returned it.)
func errorText(err error) (text string) {
	defer func() {
		if p := recover(); p != nil {
			text = fmt.Sprintf("(the Error method of this %T panicked: %v)", err, p)
		}
	}()
	return err.Error()
}

// runWithin runs f in its own goroutine under a deadline d from ctx and
// returns what it gave, or, when the deadline passes or ctx ends first,
// the context's error (context.DeadlineExceeded for the deadline). It is
// for code the core does not own that must not hold an answer even when
// it ignores its context (the store's probe, Config.Diagnostics,
// Config.DiagnosticsReplace): the goroutine ends when f returns, and
// never blocks on a result nobody waits for. f is not protected: wrap
// what it calls in protect.
func runWithin[T any](ctx context.Context, d time.Duration, f func(context.Context) T) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	done := make(chan T, 1) // buffered: a late f never blocks
	go func() { done <- f(ctx) }()
	select {
	case v := <-done:
		return v, nil
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}
