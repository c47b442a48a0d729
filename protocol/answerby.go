package protocol

import (
	"context"
	"time"
)

// This file is what the core does for an adapter on a platform with
// limits of its own (see [Request].AnswerBy and MaxAnswerBytes): answer by
// a deadline whatever the tool does, and never an answer the platform
// cannot return.

// bound returns ctx ending at req.AnswerBy, and records the deadline on st
// so that the tool runs where Serve need not wait for it (runBy).
func (st *callState) bound(ctx context.Context, req Request) (context.Context, context.CancelFunc) {
	st.answerBy = req.AnswerBy
	return context.WithDeadline(ctx, req.AnswerBy)
}

// ran is what a tool run by runBy returned.
type ran struct {
	result any
	err    error
}

// runBy runs the prepared tool on a goroutine of its own and returns what
// it returned, or ctx's error once ctx ends first (the request's AnswerBy,
// or the tool's timeout): the tool is then left running, and what it
// returns later is dropped with a warning. When ctx has ended before the
// tool begins, the tool is not started. A tool run inside a store's
// transaction (Config.Store with RunClaimed) runs on the request's
// goroutine, as its writes must end before the transaction does.
func (h *Handler) runBy(ctx context.Context, st *callState) (any, error) {
	call := st.call
	if err := ctx.Err(); err != nil {
		return nil, err // the deadline passed before the tool began: it does not begin
	}
	if h.runner != nil {
		return protect(h, ctx, "the tool", call, func() (any, error) { return st.run(ctx) })
	}
	done := make(chan ran, 1) // buffered: a tool that returns late never blocks
	go func() {
		v, err := protect(h, ctx, "the tool", call, func() (any, error) { return st.run(ctx) })
		done <- ran{v, err}
	}()
	select {
	case r := <-done:
		return r.result, r.err
	case <-ctx.Done():
	}
	select {
	case r := <-done: // it returned as ctx ended: keep what it said
		return r.result, r.err
	default:
	}
	go h.dropLate(context.WithoutCancel(ctx), call, done)
	return nil, ctx.Err()
}

// dropLate waits for a tool left running past its request's deadline and
// logs that what it returned was dropped.
func (h *Handler) dropLate(ctx context.Context, call *Call, done <-chan ran) {
	start := time.Now()
	<-done
	h.cfg.Logger.WarnContext(ctx, "median: a tool returned after its call was answered execution_failed for running past the request's deadline; what it returned was dropped: make the tool honour its ctx, or give the function more time",
		"tool", call.Tool, "toolCallId", call.ToolCallID, "late", time.Since(start).Round(time.Millisecond))
}

// fit returns resp, or, when it is longer than the request's
// MaxAnswerBytes, the answer that says so in its place (a repeat's kept
// answer so replaced still counts as a repeat's).
func (h *Handler) fit(ctx context.Context, st *callState, resp Response) Response {
	if st.maxAnswer <= 0 || len(resp.Body) <= st.maxAnswer {
		return resp
	}
	replayed := resp.replayed
	resp = h.tooLarge(ctx, st, len(resp.Body))
	resp.replayed = replayed
	return resp
}

// tooLarge is the answer that replaces one of n bytes, longer than the
// adapter's platform can return (Request.MaxAnswerBytes).
func (h *Handler) tooLarge(ctx context.Context, st *callState, n int) Response {
	what := "the answer"
	args := []any{"bytes", n, "limit", st.maxAnswer}
	if st.call != nil {
		what = "the answer of tool " + st.call.Tool
		args = append(args, "tool", st.call.Tool, "toolCallId", st.call.ToolCallID)
	}
	h.cfg.Logger.WarnContext(ctx, "median: an answer is longer than the server's platform can return, and was answered execution_failed instead", args...)
	return errorResponse(errorf(CodeExecutionFailed, "%s is too large for this server to return (%d bytes, at most %d)", what, n, st.maxAnswer))
}
