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
	if h.cfg.Diagnostics == nil {
		return errorResponse(newError(CodeDiagnosticsUnsupported, "this server collects no diagnostics"))
	}
	ctx, cancel := context.WithTimeout(ctx, h.cfg.DiagnosticsTimeout)
	defer cancel()
	done := make(chan Response, 1) // buffered: a late function never blocks
	go func() {
		// The error's own methods (Error, Is, As) are user code too: the
		// answer is built under the same protection as the call.
		resp, err := protect(h, ctx, "diagnostics", nil, func() (Response, error) {
			return h.diagnosticsAnswer(ctx)
		})
		if err != nil {
			resp = errorResponse(newError(CodeExecutionFailed, "diagnostics failed unexpectedly"))
		}
		done <- resp
	}()
	select {
	case resp := <-done:
		return resp
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return errorResponse(errorf(CodeExecutionFailed, "diagnostics did not finish within %s", h.cfg.DiagnosticsTimeout))
		}
		return errorResponse(newError(CodeExecutionFailed, "the request ended before diagnostics finished"))
	}
}

// diagnosticsAnswer runs Config.Diagnostics and encodes what it returned.
// It may panic (in user code); runDiagnostics protects it.
func (h *Handler) diagnosticsAnswer(ctx context.Context) (Response, error) {
	v, err := h.cfg.Diagnostics(ctx)
	var refusal *Refusal
	switch {
	case errors.As(err, &refusal):
		v = refusal
	case err != nil:
		return errorResponse(newError(CodeExecutionFailed, "diagnostics failed: "+err.Error())), nil
	}
	resp := h.encodeResult(ctx, "diagnostics", v, 0)
	if n := utf8.RuneCount(resp.Body); n > maxDiagnosticsChars {
		h.cfg.Logger.WarnContext(ctx, "median: diagnostics answer is longer than Median keeps", "chars", n, "limit", maxDiagnosticsChars)
	}
	return resp, nil
}
