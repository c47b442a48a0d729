package protocol

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/median-go/median/internal/base/chars"
)

// runDiagnostics answers {"op": "diagnostics"} (PROTOCOL.md §4, §10): the
// report, cut to 2,000 characters, unless the operator turned it off or
// replaced it. skew is the server clock minus this request's t.
func (h *Handler) runDiagnostics(ctx context.Context, now time.Time, skew int64) Response {
	switch {
	case h.cfg.DiagnosticsReplace != nil:
		return h.runReplacement(ctx)
	case h.cfg.DiagnosticsOff:
		return errorResponse(newError(CodeDiagnosticsUnsupported, "this server's operator turned the diagnostics report off"))
	}
	r := h.report(ctx, now)
	r.Clock.SkewMs = skew
	raw := encodeReport(r)
	body := make([]byte, 0, len(bodyPrefix)+len(raw)+1)
	body = append(append(append(body, bodyPrefix...), raw...), '}')
	return Response{Status: http.StatusOK, Body: body}
}

// runReplacement answers with Config.DiagnosticsReplace under its
// deadline. The function runs in its own goroutine so that the answer goes
// out in time even when it ignores its context; that goroutine ends when
// the function returns.
func (h *Handler) runReplacement(ctx context.Context) Response {
	resp, late := runWithin(ctx, h.cfg.DiagnosticsTimeout, func(ctx context.Context) Response {
		// The error's own methods (Error, Is, As) are user code too: the
		// answer is built under the same protection as the call.
		resp, err := protect(h, ctx, "diagnostics", nil, func() (Response, error) {
			return h.replacementAnswer(ctx)
		})
		if err != nil {
			resp = errorResponse(newError(CodeExecutionFailed, "diagnostics failed unexpectedly"))
		}
		return resp
	})
	switch {
	case late == nil:
		return resp
	case errors.Is(late, context.DeadlineExceeded):
		return errorResponse(errorf(CodeExecutionFailed, "diagnostics did not finish within %s", h.cfg.DiagnosticsTimeout))
	}
	return errorResponse(newError(CodeExecutionFailed, "the request ended before diagnostics finished"))
}

// diagnosticsFailure is the message of the execution_failed answer to
// Config.DiagnosticsReplace's error, by the rule a tool's error follows
// (PROTOCOL.md §3): the Message of an [AgentError] in err's chain; else
// only a reference, with the error's full text in the log under it.
func (h *Handler) diagnosticsFailure(ctx context.Context, err error) string {
	if msg, ok := agentMessage(err); ok {
		return "diagnostics failed: " + msg
	}
	ref := newErrorRef()
	h.cfg.Logger.ErrorContext(ctx, "median: diagnostics failed; Median was told only this errorRef", "errorRef", ref, "error", err.Error())
	return hiddenFailure("diagnostics", ref)
}

// replacementAnswer runs Config.DiagnosticsReplace and encodes what it
// returned. It may panic (in user code); runReplacement protects it.
func (h *Handler) replacementAnswer(ctx context.Context) (Response, error) {
	v, err := h.cfg.DiagnosticsReplace(ctx)
	var refusal *Refusal
	switch {
	case errors.As(err, &refusal):
		v = refusal
	case err != nil:
		return errorResponse(newError(CodeExecutionFailed, h.diagnosticsFailure(ctx, err))), nil
	}
	resp := h.encodeResult(ctx, "diagnostics", v, 0)
	if n := chars.Count(resp.Body); n > maxDiagnosticsChars {
		h.cfg.Logger.WarnContext(ctx, "median: diagnostics answer is longer than Median keeps", "chars", n, "limit", maxDiagnosticsChars)
	}
	return resp, nil
}
