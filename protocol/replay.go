package protocol

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// claim takes the call's toolCallId in the replay store. It returns false
// and the answer to send when the call must not run now.
func (h *Handler) claim(ctx context.Context, ex *exchange, body []byte) (Response, bool) {
	call := ex.call
	if h.store == nil {
		return Response{}, true
	}
	sum := sha256.Sum256(body)
	fp := hex.EncodeToString(sum[:])
	lease := h.lease
	if lease <= 0 {
		lease = defaultReplayLease
		if t := ex.tool; t != nil && t.timeout+10*time.Second > lease {
			lease = t.timeout + 10*time.Second
		}
	}
	res, err := storeClaim(ctx, h.store, call.ToolCallID, fp, lease)
	switch {
	case err != nil && ctx.Err() != nil:
		return errorResponse(newError(CodeExecutionFailed, "the request ended while another request with the same toolCallId was still running")), false
	case err != nil:
		h.log.ErrorContext(ctx, "median: replay store failed; the tool was not run", "tool", call.Tool, "toolCallId", call.ToolCallID, "error", err)
		return errorResponse(newError(CodeExecutionFailed, "the server could not record this call, so the tool was not run; try again later")), false
	case res.Status == ClaimDone:
		return storedResponse(res.Answer), false
	case res.Status == ClaimConflict:
		return errorResponse(&Error{Status: http.StatusConflict, Code: CodeInvalidBody,
			Message: fmt.Sprintf("toolCallId %q was already used for a different call; every call needs its own id", truncate(call.ToolCallID, 80))}), false
	}
	ex.claim = &claim{store: h.store, fingerprint: fp}
	return Response{}, true
}

// storeClaim calls s.Claim, turning a panic in it into an error: a broken
// store fails the call, it does not take the server down.
func storeClaim(ctx context.Context, s Store, id, fp string, lease time.Duration) (res ClaimResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = ClaimResult{}, fmt.Errorf("the replay store panicked in Claim: %v", p)
		}
	}()
	return s.Claim(ctx, id, fp, lease)
}

// storeSave calls s.Save, turning a panic in it into an error.
func storeSave(ctx context.Context, s Store, id, fp string, answer []byte, ttl time.Duration) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the replay store panicked in Save: %v", p)
		}
	}()
	return s.Save(ctx, id, fp, answer, ttl)
}

// storedResponse rebuilds an answer kept by the replay store. The store keeps
// only the body, so the code and status come from it: a replayed
// execution_failed keeps its code, a replayed invalid_input stays 400.
func storedResponse(body []byte) Response {
	resp := Response{Status: http.StatusOK, Body: body, replayed: true}
	if bytes.HasPrefix(body, bodyPrefix) {
		resp.refusal = storedRefusal(body)
		return resp
	}
	var e struct {
		Error struct {
			Code Code `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Code != "" {
		resp.code, resp.Status = e.Error.Code, e.Error.Code.status()
	}
	return resp
}

// save stores the answer of a claimed call.
func (h *Handler) save(ctx context.Context, ex *exchange, resp Response) int {
	if ex == nil || ex.claim == nil {
		return 0
	}
	call := ex.call
	c := ex.claim
	ex.claim = nil
	// The answer must be kept even when the caller has gone away.
	ctx = context.WithoutCancel(ctx)
	if err := storeSave(ctx, c.store, call.ToolCallID, c.fingerprint, resp.Body, h.ttl); err != nil {
		h.log.ErrorContext(ctx, "median: replay store could not save the answer; a repeat of this call may run the tool again", "tool", call.Tool, "toolCallId", call.ToolCallID, "error", err)
	}
	return 0
}

// storedRefusal returns the reason of a kept refusal result, or "".
func storedRefusal(body []byte) string {
	if !bytes.HasPrefix(body, []byte(`{"result":{"ok":false`)) {
		return ""
	}
	var r struct {
		Result struct {
			Reason string `json:"reason"`
		} `json:"result"`
	}
	if json.Unmarshal(body, &r) != nil || r.Result.Reason == "" {
		return defaultRefusalReason
	}
	return r.Result.Reason
}
