package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"unicode/utf8"
)

// runTool runs a prepared call under the tool's timeout, recovers a panic,
// encodes the answer and stores it.
func (h *Handler) runTool(ctx context.Context, call *Call) Response {
	tool := h.tools[call.Tool]
	runCtx := ctx
	if tool.timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, tool.timeout)
		defer cancel()
	}
	result, err := h.safeRun(runCtx, call)
	if err != nil && tool.timeout > 0 && errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		err = fmt.Errorf("tool %s timed out after %s", call.Tool, tool.timeout)
	}
	resp := h.safeAnswer(ctx, call, result, err)
	h.save(ctx, call, resp)
	return resp
}

// safeAnswer is answer with a panic in the user code it calls (a result's
// MarshalJSON, Config.ErrorMessage) answered as a failed tool, so the
// answer is still sent and stored.
func (h *Handler) safeAnswer(ctx context.Context, call *Call, result any, err error) (resp Response) {
	defer func() {
		if p := recover(); p != nil {
			h.logPanic(ctx, call.Tool, call.ToolCallID, p)
			resp = errorResponse(newError(CodeExecutionFailed, fmt.Sprintf("tool %s failed unexpectedly", call.Tool)))
		}
	}()
	return h.answer(ctx, call, result, err)
}

// safeRun runs the call, turning a panic into errPanicked.
func (h *Handler) safeRun(ctx context.Context, call *Call) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			h.logPanic(ctx, call.Tool, call.ToolCallID, p)
			result, err = nil, errPanicked
		}
	}()
	return call.run(ctx)
}

// safePrepare decodes the call's input for tool, turning a panic in the
// user code it runs (the input type's UnmarshalJSON or Validate) into a
// failed tool.
func (h *Handler) safePrepare(ctx context.Context, tool *Tool, call *Call) (run func(context.Context) (any, error), err error) {
	defer func() {
		if p := recover(); p != nil {
			h.logPanic(ctx, call.Tool, call.ToolCallID, p)
			run, err = nil, newError(CodeExecutionFailed, fmt.Sprintf("tool %s failed unexpectedly", call.Tool))
		}
	}()
	return tool.prepare(call)
}

// logPanic logs a recovered panic with its stack.
func (h *Handler) logPanic(ctx context.Context, tool, callID string, p any) {
	h.log.ErrorContext(ctx, "median: tool panicked", "tool", tool, "toolCallId", callID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
}

// answer encodes what a tool returned.
func (h *Handler) answer(ctx context.Context, call *Call, result any, err error) Response {
	if err == nil {
		return h.encodeResult(ctx, call.Tool, result, MaxResultChars)
	}
	var refusal *Refusal
	if errors.As(err, &refusal) {
		return h.encodeResult(ctx, call.Tool, refusal, MaxResultChars)
	}
	var e *Error
	if errors.As(err, &e) && (e.Code == CodeInvalidInput || e.Code == CodeUnknownTool) {
		// invalid_input from BindInput or Validate, or UnknownTool from a
		// middleware handler: answered with the code's own status, so a
		// replay (which rebuilds the status from the code) is identical.
		return errorResponse(newError(e.Code, e.Message))
	}
	if errors.Is(err, errPanicked) {
		return errorResponse(newError(CodeExecutionFailed, fmt.Sprintf("tool %s failed unexpectedly", call.Tool)))
	}
	msg := err.Error()
	if h.errorMessage != nil {
		h.log.InfoContext(ctx, "median: tool returned an error", "tool", call.Tool, "toolCallId", call.ToolCallID, "error", msg)
		msg = h.errorMessage(ctx, call, err)
	}
	return errorResponse(newError(CodeExecutionFailed, msg))
}

// refusalOr returns the refusal in err, or v.
func refusalOr(v any, err error) any {
	var r *Refusal
	if errors.As(err, &r) {
		return r
	}
	return v
}

// encodeResult encodes {"result": v}, checks widget hints and warns about
// results longer than the agent reads (warnChars; 0 for no warning).
func (h *Handler) encodeResult(ctx context.Context, tool string, v any, warnChars int) Response {
	raw, err := json.Marshal(v)
	if err != nil {
		h.log.ErrorContext(ctx, "median: result is not JSON-encodable", "tool", tool, "error", err)
		return errorResponse(newError(CodeExecutionFailed, fmt.Sprintf("tool %s returned a result that cannot be encoded as JSON", tool)))
	}
	raw = h.checkHints(ctx, tool, raw)
	if n := countChars(raw); warnChars > 0 && n > warnChars {
		h.log.WarnContext(ctx, "median: result is longer than the agent reads", "tool", tool, "chars", n, "limit", warnChars)
	}
	body := make([]byte, 0, len(bodyPrefix)+len(raw)+1)
	body = append(body, bodyPrefix...)
	body = append(body, raw...)
	body = append(body, '}')
	return Response{Status: http.StatusOK, Body: body}
}

// checkHints drops widget hints that break PROTOCOL.md §3.2 from a result
// object, with a warning: the tool has already run, so its result is kept.
func (h *Handler) checkHints(ctx context.Context, tool string, raw []byte) []byte {
	if len(raw) == 0 || raw[0] != '{' || !containsHint(raw) {
		return raw
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return raw
	}
	changed := false
	for key, check := range map[string]func(string) error{"medianNavigateTo": CheckNavigateTo, "medianHighlight": CheckHighlight} {
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
			h.log.WarnContext(ctx, "median: invalid widget hint removed from result", "tool", tool, "error", err)
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

// containsHint is a cheap test for a widget hint key.
func containsHint(raw []byte) bool {
	for i := 0; i+7 <= len(raw); i++ {
		if raw[i] == '"' && string(raw[i+1:i+7]) == "median" {
			return true
		}
	}
	return false
}

// countChars counts the characters (runes) of encoded JSON.
func countChars(b []byte) int { return utf8.RuneCount(b) }

// errorResponse encodes {"error": {"code", "message"}} with e's status.
// Messages are not HTML-escaped: "must be >= 1" stays readable.
func errorResponse(e *Error) Response {
	type inner struct {
		Code    Code   `json:"code"`
		Message string `json:"message"`
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(struct {
		Error inner `json:"error"`
	}{inner{e.Code, e.Message}})
	body := bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
	return Response{Status: e.Status, Body: body, code: e.Code}
}

// ErrorResponse returns the contract's answer for err: the status and
// {"error": {...}} of an *Error or a sentinel, and 200 execution_failed with
// err's message for any other error. Adapters use it to answer errors they
// meet before the core runs (none should, normally).
func ErrorResponse(err error) Response { return errorResponse(asError(err)) }
