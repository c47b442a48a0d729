package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/median-go/median/internal/base/chars"
)

// Limits of PROTOCOL.md §3.3.
const (
	maxResultChars      = chars.Result      // the agent reads this many characters of a result
	maxDiagnosticsChars = chars.Diagnostics // Median keeps this many characters of diagnostics
)

// runTool runs the prepared tool under its timeout and encodes its answer
// (PROTOCOL.md §5 step 11). A declared tool has nothing to run: its call
// is answered execution_failed, and a warning is logged.
func (h *Handler) runTool(ctx context.Context, st *callState) Response {
	tool := st.tool
	if tool.declared {
		h.warnDeclared(ctx, st.call)
		return errorResponse(errorf(CodeExecutionFailed, "tool %s has no function on this server: it is declared for handlers behind the Median middleware, and none answers it here", tool.name))
	}
	runCtx := ctx
	if tool.timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, tool.timeout)
		defer cancel()
	}
	var result any
	var err error
	if st.answerBy.IsZero() {
		result, err = protect(h, runCtx, "the tool", st.call, func() (any, error) { return st.run(runCtx) })
	} else {
		result, err = h.runBy(runCtx, st)
	}
	switch {
	case err == nil:
	case tool.timeout > 0 && errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		err = &AgentError{Message: fmt.Sprintf("tool %s timed out after %s", tool.name, tool.timeout), Err: err}
	case !st.answerBy.IsZero() && errors.Is(ctx.Err(), context.DeadlineExceeded):
		err = &AgentError{Message: fmt.Sprintf("tool %s timed out: it had not finished when the request had to be answered", tool.name), Err: err}
	}
	return h.encodeAnswer(ctx, st, result, err)
}

// warnDeclared logs, at most once per logInterval, that a call of a tool
// declared with [DeclareTool] reached [Handler.Serve], which has no
// function to run it.
func (h *Handler) warnDeclared(ctx context.Context, call *Call) {
	if ok, held := h.declaredRun.allow(h.cfg.Now()); ok {
		h.cfg.Logger.WarnContext(ctx, "median: a call of a tool declared with DeclareTool reached the Handler, which has no function to run it, and was answered execution_failed: mount the endpoint with the handlers that answer it (Handler.Mount or an adapter's Mount with handlers, or Middleware), or build the tool with NewTool",
			"tool", call.Tool, "toolCallId", call.ToolCallID, "suppressed", held)
	}
}

// encodeAnswer turns what a tool (or a middleware handler, or an
// interceptor) returned into the contract's answer; a panic while encoding
// (a result's MarshalJSON) is answered as a failure.
func (h *Handler) encodeAnswer(ctx context.Context, st *callState, result any, err error) Response {
	resp, perr := protect(h, ctx, "encoding the answer", st.call, func() (Response, error) {
		return h.answer(ctx, st, result, err), nil
	})
	if perr != nil {
		return errorResponse(failedUnexpectedly(st.call.Tool))
	}
	return resp
}

// answer encodes a result, a refusal or an error (PROTOCOL.md §3). An
// error with [CodeUnknownTool] or [CodeInvalidInput] is answered as that
// error, unless it is an [opaqueError].
func (h *Handler) answer(ctx context.Context, st *callState, result any, err error) Response {
	call := st.call
	budget := 0
	if st.tool != nil {
		budget = st.tool.budget
	}
	if err == nil {
		return h.encodeResult(ctx, call.Tool, result, budget)
	}
	var refusal *Refusal
	if errors.As(err, &refusal) {
		return h.encodeResult(ctx, call.Tool, refusal, 0)
	}
	var e *Error
	if errors.As(err, &e) && (e.Code == CodeInvalidInput || e.Code == CodeUnknownTool) {
		return errorResponse(newError(e.Code, e.Message))
	}
	var code Code
	if errors.As(err, &code) && code == CodeUnknownTool {
		return errorResponse(unknownTool(call.Tool))
	}
	if errors.Is(err, errPanicked) {
		return errorResponse(failedUnexpectedly(call.Tool))
	}
	var o opaqueError
	if errors.As(err, &o) {
		err = o.err
	}
	return errorResponse(newError(CodeExecutionFailed, h.failureMessage(ctx, call, err)))
}

// failureMessage is the message of the execution_failed answer to a
// tool's (or an interceptor's, or a middleware handler's) error: what
// Config.ErrorMessage returns when it is set and returns something; else
// the Message of an [AgentError] in err's chain; else a message naming
// only the tool and a new reference, with the error's full text in the
// log under that reference (PROTOCOL.md §3). Whenever the agent reads
// less than the error's full text, that text is logged.
func (h *Handler) failureMessage(ctx context.Context, call *Call, err error) string {
	full := err.Error() // under encodeAnswer's protection: an Error that panics fails the answer
	if rewrite := h.cfg.ErrorMessage; rewrite != nil {
		if msg := rewrite(ctx, call, err); msg != "" {
			h.cfg.Logger.InfoContext(ctx, "median: tool returned an error", "tool", call.Tool, "toolCallId", call.ToolCallID, "error", full)
			return msg
		}
	}
	if msg, ok := agentMessage(err); ok {
		if msg != full {
			h.cfg.Logger.InfoContext(ctx, "median: tool returned an error", "tool", call.Tool, "toolCallId", call.ToolCallID, "error", full)
		}
		return msg
	}
	ref := newErrorRef()
	h.cfg.Logger.ErrorContext(ctx, "median: tool failed; the agent was told only the tool's name and this errorRef",
		"tool", call.Tool, "toolCallId", call.ToolCallID, "errorRef", ref, "error", full)
	return hiddenErrorMessage(call.Tool, ref)
}

// opaqueError is an error answered execution_failed whatever code it
// carries: an interceptor's error (see [Interceptor]).
// It has no Unwrap on purpose, so that answer finds no code in it.
type opaqueError struct{ err error }

func (o opaqueError) Error() string { return o.err.Error() }

// failedUnexpectedly is the answer to a panic: the stack is in the log.
func failedUnexpectedly(tool string) *Error {
	return errorf(CodeExecutionFailed, "tool %s failed unexpectedly", tool)
}

// bodyPrefix is how a result answer starts.
var bodyPrefix = []byte(`{"result":`)

// encodeResult encodes v as {"result": v}. Invalid widget hints are removed
// with a warning. With budget > 0 a longer result is trimmed to fit (see
// [WithResultBudget]); otherwise a result longer than the agent reads is
// logged.
func (h *Handler) encodeResult(ctx context.Context, tool string, v any, budget int) Response {
	reason := ""
	switch r := v.(type) {
	case *Refusal:
		if r != nil {
			reason, v = r.reason(), r.wire()
		}
	case Refusal:
		reason, v = r.reason(), r.wire()
	}
	raw, err := json.Marshal(v)
	if err != nil {
		h.cfg.Logger.ErrorContext(ctx, "median: result is not JSON-encodable", "tool", tool, "error", errorText(err))
		return errorResponse(errorf(CodeExecutionFailed, "tool %s returned a result that cannot be encoded as JSON", tool))
	}
	raw = h.checkHints(ctx, tool, raw)
	if budget > 0 {
		if raw, err = fitResult(raw, budget); err != nil {
			return errorResponse(errorf(CodeExecutionFailed, "tool %s: %s", tool, err))
		}
	} else if n := chars.Count(raw); n > maxResultChars {
		h.cfg.Logger.WarnContext(ctx, "median: result is longer than the agent reads", "tool", tool, "chars", n, "limit", maxResultChars)
	}
	// Grown, not made, so that its capacity is the whole allocation, which
	// the replay store charges (memstore, What the budget counts).
	body := slices.Grow([]byte(nil), len(bodyPrefix)+len(raw)+1)
	body = append(body, bodyPrefix...)
	body = append(body, raw...)
	body = append(body, '}')
	return Response{Status: http.StatusOK, Body: body, refusal: reason}
}

// checkHints removes invalid widget hints from a result object (§3.2).
func (h *Handler) checkHints(ctx context.Context, tool string, raw []byte) []byte {
	if len(raw) == 0 || raw[0] != '{' || !bytes.Contains(raw, []byte(`"median`)) {
		return raw
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return raw
	}
	changed := false
	for key, check := range map[string]func(string) error{"medianNavigateTo": checkNavigateTo, "medianHighlight": checkHighlight} {
		v, ok := obj[key]
		if !ok {
			continue
		}
		var s string
		err := json.Unmarshal(v, &s)
		if err == nil {
			err = check(s)
		} else {
			err = fmt.Errorf("%s: must be a string", key)
		}
		if err != nil {
			h.cfg.Logger.WarnContext(ctx, "median: invalid widget hint removed from result", "tool", tool, "error", err)
			delete(obj, key)
			changed = true
		}
	}
	if !changed {
		return raw
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return raw
	}
	return out
}

// errorResponse encodes an error answer.
func errorResponse(e *Error) Response {
	type inner struct {
		Code    Code   `json:"code"`
		Message string `json:"message"`
	}
	body, _ := marshalPlain(struct {
		Error inner `json:"error"`
	}{inner{e.Code, e.Message}})
	return Response{Status: e.Status, Body: body, code: e.Code}
}

// marshalPlain encodes v as json.Marshal does, but without escaping <, >
// and &. Error answers and the diagnostics report are encoded so: a
// message reads as the agent got it, in fewer characters. (A result is
// encoded by json.Marshal, which escapes them.)
func marshalPlain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}
