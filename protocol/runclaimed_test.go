package protocol

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// txMarker is what runnerStore puts on the tool's context, standing for its
// transaction.
type txMarker struct{}

// runnerStore is a Store with the RunClaimed capability, on the memory
// store: it records each run's commit flag and can fail its commit.
type runnerStore struct {
	*recordingStore
	mu        sync.Mutex
	commits   []bool
	commitErr error // RunClaimed fails after run with it
	outside   bool  // the tool never asks for the transaction: RunClaimed keeps nothing
	runs      int   // RunClaimed calls
}

func (s *runnerStore) RunClaimed(ctx context.Context, key, fp string, lease, ttl, timeout time.Duration,
	run func(ctx context.Context) ([]byte, bool)) (ClaimStatus, []byte, error) {
	s.mu.Lock()
	s.runs++
	s.mu.Unlock()
	claimCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	status, answer, err := s.recordingStore.Claim(claimCtx, key, fp, lease)
	if err != nil || status != ClaimAcquired {
		return status, answer, err
	}
	answer, commit := run(context.WithValue(ctx, txMarker{}, true))
	s.mu.Lock()
	s.commits = append(s.commits, commit)
	commitErr, outside := s.commitErr, s.outside
	s.mu.Unlock()
	if outside {
		return ClaimAcquired, nil, fmt.Errorf("pgstore-like: %w", outsideError{})
	}
	if commitErr != nil {
		return ClaimAcquired, nil, commitErr
	}
	_, err = s.recordingStore.Save(ctx, key, fp, answer, ttl)
	return ClaimAcquired, nil, err
}

// outsideError is what a store's RunClaimed returns when the tool did not
// ask for its transaction.
type outsideError struct{}

func (outsideError) Error() string            { return "the tool ran outside the transaction" }
func (outsideError) OutsideTransaction() bool { return true }

// txTool answers what its input's note says, after checking that it runs
// inside the store's transaction.
func txTool(runs *int64Counter) *Tool {
	return NewTool("tx", RiskLow, "Writes in the call's transaction.", func(ctx context.Context, c ToolCall[echoInput]) (string, error) {
		runs.add()
		if ctx.Value(txMarker{}) == nil {
			return "", errors.New("not in the store's transaction")
		}
		switch c.Input.Note {
		case "error":
			return "", errors.New("it failed")
		case "refuse":
			return "", Refuse("not_allowed", "No.")
		case "panic":
			panic("broken")
		}
		return "written", nil
	})
}

// TestStoreRunsClaimedCalls: a store with RunClaimed claims, runs and keeps
// each call the Handler runs itself; commit is true for a result only.
func TestStoreRunsClaimedCalls(t *testing.T) {
	store := &runnerStore{recordingStore: newRecordingStore()}
	runs := &int64Counter{}
	h, _ := newHandler(t, Config{Tools: []*Tool{txTool(runs)}, Store: store})
	for i, note := range []string{"", "error", "refuse", "panic"} {
		body := toolCall("tx", "call_rc"+note, `{"orderId":3,"note":"`+note+`"}`)
		first := h.Serve(context.Background(), post(body))
		require.Equal(t, http.StatusOK, first.Status)
		if note == "" {
			assert.Equal(t, `{"result":"written"}`, string(first.Body))
		}
		again := h.Serve(context.Background(), post(body))
		assert.Equal(t, string(first.Body), string(again.Body), "%q: the kept answer is replayed", note)
		assert.Equal(t, int64(i+1), runs.get(), "%q: the tool ran once", note)
	}
	assert.Equal(t, []bool{true, false, false, false}, store.commits, "only a result commits the tool's writes")
	assert.Equal(t, 8, store.runs, "every call went through RunClaimed")
}

// TestInterceptorRefusalRunsInTheTransaction: interceptors run inside
// RunClaimed too; their refusal does not commit.
func TestInterceptorRefusalRunsInTheTransaction(t *testing.T) {
	store := &runnerStore{recordingStore: newRecordingStore()}
	runs := &int64Counter{}
	deny := func(ctx context.Context, call *Call, tool *Tool) error { return Refuse("not_allowed", "No.") }
	h, _ := newHandler(t, Config{Tools: []*Tool{txTool(runs)}, Store: store, Interceptors: []Interceptor{deny}})
	resp := h.Serve(context.Background(), post(toolCall("tx", "call_rc_i", `{"orderId":3}`)))
	assert.Contains(t, string(resp.Body), `"reason":"not_allowed"`)
	assert.Zero(t, runs.get())
	assert.Equal(t, []bool{false}, store.commits)
}

// TestFailedCommitIsNotAResult: when the store cannot commit after the tool
// returned a result, the answer says nothing was changed; an error answer
// goes out as it was.
func TestFailedCommitIsNotAResult(t *testing.T) {
	store := &runnerStore{recordingStore: newRecordingStore(), commitErr: errors.New("connection lost")}
	runs := &int64Counter{}
	h, logs := newHandler(t, Config{Tools: []*Tool{txTool(runs)}, Store: store})
	msg := requireError(t, h.Serve(context.Background(), post(toolCall("tx", "call_rc_c1", `{"orderId":3}`))), http.StatusOK, CodeExecutionFailed)
	assert.Equal(t, msgNotCommitted, msg)
	assert.Len(t, logs.find(t, "could not commit"), 1)
	msg = requireError(t, h.Serve(context.Background(), post(toolCall("tx", "call_rc_c2", `{"orderId":3,"note":"error"}`))), http.StatusOK, CodeExecutionFailed)
	requireHidden(t, msg, "tx")
}

// TestRunClaimedOutage: when RunClaimed fails before running the tool, the
// tool does not run, unless it is read-only: then it runs outside any
// transaction, its answer not kept.
func TestRunClaimedOutage(t *testing.T) {
	store := &runnerStore{recordingStore: newRecordingStore()}
	store.claimErr = errors.New("connection refused")
	runs, looks := &int64Counter{}, &int64Counter{}
	h, _ := newHandler(t, Config{Tools: []*Tool{txTool(runs), lookupTool(looks)}, Store: store})
	msg := requireError(t, h.Serve(context.Background(), post(toolCall("tx", "call_rc_o1", `{"orderId":3}`))), http.StatusOK, CodeExecutionFailed)
	assert.Equal(t, msgStoreFailed, msg)
	assert.Zero(t, runs.get())
	requireResult(t, h.Serve(context.Background(), post(toolCall("lookup", "call_rc_o2", `{"orderId":3}`))))
	assert.Equal(t, int64(1), looks.get())
	assert.Empty(t, store.commits, "nothing ran inside the store")
	assert.Empty(t, store.saves)
}

// TestMiddlewareUsesClaimAndSave: calls answered by the app's handler go
// through Claim and Save, not RunClaimed.
func TestMiddlewareUsesClaimAndSave(t *testing.T) {
	store := &runnerStore{recordingStore: newRecordingStore()}
	h, _ := newHandler(t, Config{Tools: []*Tool{txTool(&int64Counter{})}, Store: store})
	callCtx, _, ok := h.Verify(context.Background(), post(toolCall("tx", "call_rc_m", `{"orderId":3}`)))
	require.True(t, ok)
	requireResult(t, Answer(callCtx, "done", nil))
	assert.Zero(t, store.runs)
	assert.Equal(t, 1, store.claimCount())
	assert.Len(t, store.saves, 1)
}

// TestToolOutsideTheTransactionIsSaved: when the store reports that the
// tool ran outside its transaction, the core keeps the answer with Save,
// once, and a failed Save still sends the answer (it cannot be rolled
// back) and is logged.
func TestToolOutsideTheTransactionIsSaved(t *testing.T) {
	store := &runnerStore{recordingStore: newRecordingStore(), outside: true}
	runs := &int64Counter{}
	h, logs := newHandler(t, Config{Tools: []*Tool{txTool(runs)}, Store: store})
	body := toolCall("tx", "call_rc_out", `{"orderId":3}`)
	first := h.Serve(context.Background(), post(body))
	assert.Equal(t, `{"result":"written"}`, string(first.Body))
	require.Len(t, store.saves, 1, "the core saved the answer")
	assert.Contains(t, store.saves[0], `{"result":"written"}`)
	again := h.Serve(context.Background(), post(body))
	assert.Equal(t, string(first.Body), string(again.Body), "the saved answer is replayed")
	assert.Equal(t, int64(1), runs.get())
	assert.Empty(t, logs.find(t, "could not commit"), "nothing was to commit")

	store.saveErr = errors.New("connection lost")
	resp := h.Serve(context.Background(), post(toolCall("tx", "call_rc_out2", `{"orderId":3}`)))
	assert.Equal(t, `{"result":"written"}`, string(resp.Body), "the tool's effects stand: its answer goes out")
	assert.Len(t, logs.find(t, "could not save the answer"), 1)
}

// saysOutside is a store's error with an OutsideTransaction method that
// answers outside, or panics when panics is set.
type saysOutside struct{ outside, panics bool }

func (saysOutside) Error() string { return "commit failed" }
func (e saysOutside) OutsideTransaction() bool {
	if e.panics {
		panic("broken error")
	}
	return e.outside
}

// TestOutsideTransaction: only an error whose OutsideTransaction method
// answers true (wrapped or not) says the tool ran outside the store's
// transaction; one that answers false, has no such method or panics in it
// is a failed commit.
func TestOutsideTransaction(t *testing.T) {
	assert.True(t, outsideTransaction(outsideError{}))
	assert.True(t, outsideTransaction(fmt.Errorf("wrapped: %w", saysOutside{outside: true})))
	assert.False(t, outsideTransaction(saysOutside{outside: false}), "it says it ran inside")
	assert.False(t, outsideTransaction(saysOutside{panics: true}))
	assert.False(t, outsideTransaction(errors.New("connection reset")))
	assert.False(t, outsideTransaction(nil))
}

// TestRunClaimedRenewsTheClaim: a store that runs the call in its own
// transaction has the claim renewed while the tool runs, as any store.
func TestRunClaimedRenewsTheClaim(t *testing.T) {
	store := &runnerStore{recordingStore: newRecordingStore()}
	slow := newSleepyTool(300 * time.Millisecond)
	h, _ := newHandler(t, Config{Tools: []*Tool{slow.tool}, Store: store, ReplayLease: 90 * time.Millisecond, StoreTimeout: 50 * time.Millisecond})
	requireResult(t, h.Serve(context.Background(), post(toolCall("sleepy", "call_rc_renew", `{}`))))
	assert.Equal(t, 1, store.runs)
	_, _, renews := store.counts()
	assert.GreaterOrEqual(t, renews, 1, "a 300 ms tool with a 90 ms lease is renewed")
}
