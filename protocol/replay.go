package protocol

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"
)

// How the core waits for a copy of the same call running elsewhere: it asks
// the store again after firstPoll, doubling up to maxPoll, for at most
// copyWaitLeases leases (see copyPatience).
const (
	firstPoll      = 5 * time.Millisecond
	maxPoll        = 100 * time.Millisecond
	copyWaitLeases = 5
)

// Messages of the execution_failed answers the replay store causes. None
// asks for a retry: Median never retries.
const (
	msgStoreFailed   = "the server could not record this call in its replay store, so the tool was not run and nothing was changed"
	msgRequestEnded  = "the request ended before the server could record this call, so the tool was not run and nothing was changed"
	msgCopyStillRuns = "the request ended while another request with the same toolCallId was still running; this copy did not run the tool"
	msgCopyOutlasted = "another request with the same toolCallId was still running when this copy stopped waiting for it; this copy did not run the tool"
	msgNotCommitted  = "the server could not commit this call's changes together with its answer, so they were rolled back and nothing was changed"
)

// replayKey is the store key of a toolCallId: the hex SHA-256 of the id, 64
// characters however long the id is, so a long id costs a store no more
// than a short one.
func replayKey(toolCallID string) string {
	sum := sha256.Sum256([]byte(toolCallID))
	return hex.EncodeToString(sum[:])
}

// claimRunner is the optional capability of a Store that runs a claimed
// call inside a transaction of its own (see [Store]).
type claimRunner interface {
	RunClaimed(ctx context.Context, key, fingerprint string, lease, ttl, timeout time.Duration,
		run func(ctx context.Context) (answer []byte, commit bool)) (ClaimStatus, []byte, error)
}

// claimKey returns the call's store key, its body's fingerprint and the
// claim's lease (Config.ReplayLease, defaults filled in).
func (h *Handler) claimKey(st *callState) (key, fp string, lease time.Duration) {
	sum := sha256.Sum256(st.call.Body)
	return replayKey(st.call.ToolCallID), hex.EncodeToString(sum[:]), h.cfg.ReplayLease
}

// acquireClaim takes the call's toolCallId in the replay store
// (PROTOCOL.md §5 step 10) and holds the claim in st. It returns false and
// the answer to send when the call must not run now. A read-only tool
// whose claim the store could not record runs all the same, without a
// claim: its answer is sent, not kept (§8).
//
// A Store is given the hex SHA-256 of the toolCallId and of the body, the
// same in every instance that shares it. The built-in memory store, which
// no other process reads, is given digests of its own instead, made in a
// fraction of the time (memstore's package documentation), and is
// called directly: it never waits, fails only on arguments the core never
// passes, and does not panic.
func (h *Handler) acquireClaim(ctx context.Context, st *callState) (Response, bool) {
	store := h.cfg.Store
	if store == nil {
		return Response{}, true
	}
	c := claim{store: store}
	var resp Response
	var outcome int
	if mem, inProcess := store.(memoryStore); inProcess {
		c.memKey, c.memFingerprint = mem.s.SumString(st.call.ToolCallID), mem.s.Fingerprint(st.call.Body)
		lease := h.cfg.ReplayLease
		resp, outcome = h.waitClaim(ctx, st, lease, func() (ClaimStatus, []byte, error) {
			status, answer, ticket, err := mem.s.Claim(c.memKey, c.memFingerprint, lease, st.now())
			c.memTicket = ticket
			return claimStatus(status), answer, err
		})
	} else {
		var lease time.Duration
		c.key, c.fingerprint, lease = h.claimKey(st)
		resp, outcome = h.waitClaim(ctx, st, lease, func() (ClaimStatus, []byte, error) {
			return h.storeClaim(ctx, store, c.key, c.fingerprint, lease)
		})
	}
	switch outcome {
	case claimAcquired:
		st.held = c
		if h.renewals != nil {
			h.renewals.keep(&st.held, st.stripe) // until save
		}
		return Response{}, true
	case claimUnkept:
		return Response{}, true
	}
	return resp, false
}

// runClaimed is steps 10 and 11 for a store that holds the claim, the
// tool's writes and the answer in one transaction (PROTOCOL.md §8.1): the
// store claims the call and runs the interceptors and the tool through
// run, then keeps the answer, with the tool's writes only when the answer
// is a result. While run runs, the claim is renewed through the store's
// Renew, as for any other store. When the store cannot commit after the
// tool ran, nothing it wrote is kept, so a result is answered as not
// carried out. When the tool did not use the store's transaction, the
// store keeps nothing and finish saves the answer.
func (h *Handler) runClaimed(ctx context.Context, st *callState, store claimRunner) Response {
	key, fp, lease := h.claimKey(st)
	var resp Response
	ran := false
	run := func(ctx context.Context) ([]byte, bool) {
		ran = true
		c := &claim{store: h.cfg.Store, key: key, fingerprint: fp} // not st.held: RunClaimed keeps the answer, not finish
		h.renewals.keep(c, st.stripe)
		defer h.renewals.drop(c)
		resp = h.fit(ctx, st, h.interceptAndRun(ctx, st)) // replaced before the store keeps it, the writes rolled back
		return resp.Body, resp.code == "" && resp.refusal == ""
	}
	stored, outcome := h.waitClaim(ctx, st, lease, func() (ClaimStatus, []byte, error) {
		c, err := protect(h, ctx, "the replay store's RunClaimed", st.call, func() (claimed, error) {
			status, answer, err := store.RunClaimed(ctx, key, fp, lease, h.cfg.ReplayTTL, h.cfg.StoreTimeout, run)
			return claimed{status, answer}, err
		})
		if !ran {
			return c.status, c.answer, err
		}
		if outsideTransaction(err) {
			// Kept with Save by finish, as when the store has no RunClaimed.
			st.held = claim{store: h.cfg.Store, key: key, fingerprint: fp}
			return ClaimAcquired, nil, nil
		}
		if err != nil {
			h.cfg.Logger.ErrorContext(ctx, "median: replay store could not commit the call's transaction; the tool's writes and its answer were rolled back", "tool", st.call.Tool, "toolCallId", st.call.ToolCallID, "error", errorText(err))
			if resp.code == "" && resp.refusal == "" {
				resp = errorResponse(newError(CodeExecutionFailed, msgNotCommitted))
			}
		}
		return ClaimAcquired, nil, nil
	})
	switch {
	case ran:
		return resp
	case outcome == claimUnkept:
		return h.interceptAndRun(ctx, st)
	}
	return stored
}

// outsideTransaction reports whether a store's RunClaimed said the tool
// ran outside its transaction (an error with OutsideTransaction() true,
// see [Store]). A store's error whose methods panic did not say so: it is
// logged as a failed commit.
func outsideTransaction(err error) (outside bool) {
	defer func() {
		if recover() != nil {
			outside = false
		}
	}()
	var o interface{ OutsideTransaction() bool }
	return errors.As(err, &o) && o.OutsideTransaction()
}

// interceptAndRun runs the interceptors, then the tool unless one answered.
func (h *Handler) interceptAndRun(ctx context.Context, st *callState) Response {
	resp, ok := h.intercept(ctx, st)
	if ok {
		resp = h.runTool(ctx, st)
	}
	return resp
}

// Outcomes of waitClaim.
const (
	claimAcquired = iota + 1 // the call holds the claim
	claimAnswered            // the answer is ready: stored, a conflict or a failure
	claimUnkept              // the store failed and the tool is read-only: run it, keep nothing
)

// copyPatience is how long a copy waits for the same call running
// elsewhere, from the first time the store says it runs: five leases (a
// minute at the default lease), or the tool's timeout and a lease when
// that is longer. The call's claim is renewed while its tool runs, so the
// wait is bounded by the copy's own request, and by this when the request
// has no end.
func copyPatience(lease, toolTimeout time.Duration) time.Duration {
	if lease > math.MaxInt64/copyWaitLeases {
		return math.MaxInt64
	}
	return max(copyWaitLeases*lease, addDuration(toolTimeout, lease))
}

// waitClaim asks the store for the claim through try. While a copy of the
// same call runs elsewhere it asks again, with a growing pause, until that
// copy's answer is there, its claim is handed over (its lease ended without
// a renewal), or ctx ends. It gives up (without running the tool) when the
// store still says "running" copyPatience after it first did.
func (h *Handler) waitClaim(ctx context.Context, st *callState, lease time.Duration, try func() (ClaimStatus, []byte, error)) (Response, int) {
	call := st.call
	var timer *time.Timer
	var giveUp time.Time
	for pause := firstPoll; ; pause = min(2*pause, maxPoll) {
		status, answer, err := try()
		switch {
		case err != nil && ctx.Err() != nil && !giveUp.IsZero():
			// It ended while asking again about a copy that runs.
			return errorResponse(newError(CodeExecutionFailed, msgCopyStillRuns)), claimAnswered
		case err != nil && ctx.Err() != nil:
			return errorResponse(newError(CodeExecutionFailed, msgRequestEnded)), claimAnswered
		case err != nil && st.tool.readOnly:
			h.stats.readOnlyRun()
			h.cfg.Logger.WarnContext(ctx, "median: replay store failed; the read-only tool runs and its answer is not kept", "tool", call.Tool, "toolCallId", call.ToolCallID, "error", errorText(err))
			return Response{}, claimUnkept
		case err != nil:
			h.stats.claimFailed()
			h.cfg.Logger.ErrorContext(ctx, "median: replay store failed; the tool was not run", "tool", call.Tool, "toolCallId", call.ToolCallID, "error", errorText(err))
			return errorResponse(newError(CodeExecutionFailed, msgStoreFailed)), claimAnswered
		case status == ClaimAcquired:
			return Response{}, claimAcquired
		case status == ClaimDone:
			return storedResponse(answer), claimAnswered
		case status == ClaimConflict:
			return errorResponse(&Error{Status: http.StatusConflict, Code: CodeInvalidBody,
				Message: fmt.Sprintf("toolCallId %q was already used for a different call; every call needs its own id", truncate(call.ToolCallID, 80))}), claimAnswered
		case status != ClaimRunning:
			h.cfg.Logger.ErrorContext(ctx, "median: replay store answered an unknown ClaimStatus; the tool was not run", "tool", call.Tool, "toolCallId", call.ToolCallID, "status", int(status))
			return errorResponse(newError(CodeExecutionFailed, msgStoreFailed)), claimAnswered
		}
		// ClaimRunning: the same call runs elsewhere; ask again shortly.
		if giveUp.IsZero() {
			giveUp = time.Now().Add(copyPatience(lease, st.tool.timeout))
		} else if time.Now().After(giveUp) {
			return errorResponse(newError(CodeExecutionFailed, msgCopyOutlasted)), claimAnswered
		}
		if timer == nil {
			timer = time.NewTimer(pause)
			defer timer.Stop()
		} else {
			timer.Reset(pause)
		}
		select {
		case <-timer.C:
		case <-ctx.Done():
			return errorResponse(newError(CodeExecutionFailed, msgCopyStillRuns)), claimAnswered
		}
	}
}

// claimed is what a store's Claim returned.
type claimed struct {
	status ClaimStatus
	answer []byte
}

// storeClaim calls the store's Claim under the store deadline; a panic in
// it fails the call, it does not take the server down.
func (h *Handler) storeClaim(ctx context.Context, s Store, key, fp string, lease time.Duration) (ClaimStatus, []byte, error) {
	ctx, cancel := h.storeContext(ctx)
	defer cancel()
	c, err := protect(h, ctx, "the replay store's Claim", nil, func() (claimed, error) {
		status, answer, err := s.Claim(ctx, key, fp, lease)
		return claimed{status, answer}, err
	})
	return c.status, c.answer, err
}

// storeSave calls s.Save under the store deadline; a panic in it is an
// error.
func (h *Handler) storeSave(ctx context.Context, s Store, key, fp string, answer []byte) (int, error) {
	ctx, cancel := h.storeContext(ctx)
	defer cancel()
	return protect(h, ctx, "the replay store's Save", nil, func() (int, error) {
		return s.Save(ctx, key, fp, answer, h.cfg.ReplayTTL)
	})
}

// storeContext returns ctx bounded by the store deadline. (The built-in
// memory store, which never waits, is called without one: see
// acquireClaim and save.)
func (h *Handler) storeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, h.cfg.StoreTimeout)
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

// save stores the answer of a call that holds a claim, once, and returns
// how many answers the store dropped early to make room; only finish calls
// it, with the time now (the built-in memory store reads no clock of its
// own). It ends the claim's renewal, unless a shared store failed to save
// the answer: the answer then waits to be saved again (see resaves), its
// claim renewed meanwhile. slow is true when it did more than the memory
// store's save, which takes well under a microsecond: a shared store's
// round trip, or a line logged. The answer is sent whatever happens here:
// a failure is logged, and so are those dropped answers (their
// toolCallIds could run again).
func (h *Handler) save(ctx context.Context, st *callState, resp Response, now time.Time) (evicted int, slow bool) {
	c := &st.held
	if c.store == nil || c.saved {
		return 0, false
	}
	call := st.call
	c.saved = true
	var err error
	if mem, inProcess := c.store.(memoryStore); inProcess {
		h.renewals.drop(c)
		// The store keeps resp.Body itself, not a copy: nothing writes to
		// an answer once encoded (see Response.Body and Event.Answer).
		evicted, err = mem.s.Save(c.memKey, c.memFingerprint, c.memTicket, resp.Body, h.cfg.ReplayTTL, now)
	} else {
		// The answer must be kept even when the caller has gone away, but
		// not wait on a store that does not answer.
		evicted, err = h.storeSave(context.WithoutCancel(ctx), c.store, c.key, c.fingerprint, resp.Body)
		slow = true
		if err != nil && h.resaves.add(c, call, resp.Body) {
			h.renewals.drop(c) // the answer's own claim is renewed now
			h.cfg.Logger.WarnContext(ctx, "median: replay store could not save the answer; it is saved again in the background until it is kept or its TTL ends, and the call's claim is renewed meanwhile", "tool", call.Tool, "toolCallId", call.ToolCallID, "error", errorText(err))
			err = nil
		} else {
			h.renewals.drop(c)
		}
	}
	if err != nil {
		slow = true
		h.cfg.Logger.ErrorContext(ctx, "median: replay store could not save the answer, and it cannot wait to be saved again (the Handler is closed, or too many answers wait already); a repeat of this call may run the tool again", "tool", call.Tool, "toolCallId", call.ToolCallID, "error", errorText(err))
	}
	if evicted > 0 {
		slow = true
		h.stats.evictedEarly(evicted)
		h.cfg.Logger.WarnContext(ctx, evictedWarning, "tool", call.Tool, "toolCallId", call.ToolCallID, "evicted", evicted)
	}
	return evicted, slow
}

// evictedWarning is logged when a store reports answers it did not keep
// until their TTL: the in-memory store makes room under
// Config.ReplayMaxBytes; a shared store may not hold an answer too large
// for it (dynamostore: over DynamoDB's 400 KB item).
const evictedWarning = "median: the replay store dropped answers before their TTL (to make room, or too large for it to keep); their toolCallIds would run again if repeated: raise Config.ReplayMaxBytes for the in-memory store, or see the limits of yours"

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

// addDuration is a + b for durations that are not negative, capped at the
// longest duration instead of wrapping round to a negative one (a lease or
// timeout of math.MaxInt64 means "no end").
func addDuration(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
