package protocol

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
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

// logPanic logs a recovered panic with its stack.
func (h *Handler) logPanic(ctx context.Context, what string, call *Call, p any) {
	args := []any{"panic", fmt.Sprint(p), "stack", string(debug.Stack())}
	if call != nil {
		args = append(args, "tool", call.Tool, "toolCallId", call.ToolCallID)
	}
	h.cfg.Logger.ErrorContext(ctx, "median: "+what+" panicked", args...)
}
