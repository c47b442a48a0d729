package protocol

import (
	"context"
	"errors"
	"unicode/utf8"
)

// runDiagnostics answers {"op": "diagnostics"} (PROTOCOL.md §4) under the
// deadline. The function runs in its own goroutine so that the answer goes
// out in time even when it ignores its context; that goroutine ends when
// the function returns.
func (h *Handler) runDiagnostics(ctx context.Context) Response {
	if h.diagnostics == nil {
		return errorResponse(newError(CodeDiagnosticsUnsupported, "this server collects no diagnostics"))
	}
	ctx, cancel := context.WithTimeout(ctx, h.diagnosticsTimeout)
	defer cancel()
	type outcome struct {
		v   any
		err error
	}
	done := make(chan outcome, 1) // buffered: a late function never blocks
	go func() {
		v, err := protect(h, ctx, "diagnostics", nil, func() (any, error) { return h.diagnostics(ctx) })
		done <- outcome{v, err}
	}()
	select {
	case o := <-done:
		var refusal *Refusal
		switch {
		case errors.Is(o.err, errPanicked):
			return errorResponse(newError(CodeExecutionFailed, "diagnostics failed unexpectedly"))
		case errors.As(o.err, &refusal):
			o.v = refusal
		case o.err != nil:
			return errorResponse(newError(CodeExecutionFailed, "diagnostics failed: "+o.err.Error()))
		}
		resp, err := protect(h, ctx, "encoding diagnostics", nil, func() (Response, error) {
			return h.encodeResult(ctx, "diagnostics", o.v, 0), nil
		})
		if err != nil {
			return errorResponse(newError(CodeExecutionFailed, "diagnostics failed unexpectedly"))
		}
		if n := utf8.RuneCount(resp.Body); n > maxDiagnosticsChars {
			h.log.WarnContext(ctx, "median: diagnostics answer is longer than Median keeps", "chars", n, "limit", maxDiagnosticsChars)
		}
		return resp
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return errorResponse(errorf(CodeExecutionFailed, "diagnostics did not finish within %s", h.diagnosticsTimeout))
		}
		return errorResponse(newError(CodeExecutionFailed, "the request ended before diagnostics finished"))
	}
}
