package protocol

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReplaySameCall(t *testing.T) {
	runs := &int64Counter{}
	obs := &observed{}
	h, _ := newHandler(t, Config{Tools: []*Tool{echoTool(runs)}, Observer: obs.add})
	body := toolCall("echo", "call_r1", `{"orderId":7}`)
	first := h.Serve(context.Background(), post(body))
	requireResult(t, first)
	assert.False(t, obs.last(t).Replayed)
	second := h.Serve(context.Background(), post(body))
	assert.Equal(t, string(first.Body), string(second.Body))
	assert.Equal(t, first.Status, second.Status)
	assert.Equal(t, int64(1), runs.get(), "the tool runs once")
	assert.True(t, obs.last(t).Replayed)

	// Re-signed later (fresh t) the same body is still the same call.
	later := post(body)
	later.Signature = mustParseKey(testKey).Sign(testNow.Add(-time.Minute), []byte(body))
	assert.Equal(t, string(first.Body), string(h.Serve(context.Background(), later).Body))
	assert.Equal(t, int64(1), runs.get())

	// Through net/http too.
	assert.Equal(t, string(first.Body), string(serveHTTP(h, http.MethodPost, post(body).Signature, body).Body))
	assert.Equal(t, int64(1), runs.get())
}

// TestReplayLongestTTL keeps answers with Config.ReplayTTL math.MaxInt64
// (no end) in the built-in memory store: a repeat is answered from it.
func TestReplayLongestTTL(t *testing.T) {
	runs := &int64Counter{}
	h, _ := newHandler(t, Config{Tools: []*Tool{echoTool(runs)}, ReplayTTL: math.MaxInt64})
	body := toolCall("echo", "call_forever", `{"orderId":7}`)
	first := h.Serve(context.Background(), post(body))
	requireResult(t, first)
	second := h.Serve(context.Background(), post(body))
	assert.Equal(t, string(first.Body), string(second.Body))
	assert.Equal(t, int64(1), runs.get(), "the tool runs once")
}

// TestReplayLongestLease: with a lease of math.MaxInt64 a copy that finds
// the call still running waits for its answer (the wait's end saturates
// instead of wrapping round to the past, where the copy gave up at once).
func TestReplayLongestLease(t *testing.T) {
	slow := newSlowFirstRun()
	h, _ := newHandler(t, Config{Tools: []*Tool{slow.tool}, ReplayLease: math.MaxInt64})
	body := toolCall("slow", "call_long_lease", `{}`)
	slow.requireCopyWaits(t, h, post(body), post(body))
}

// slowFirstRun is a tool, "slow", whose first run waits for release once it
// has closed started; a later run answers at once. runs counts them.
type slowFirstRun struct {
	tool             *Tool
	started, release chan struct{}
	runs             atomic.Int64
}

func newSlowFirstRun() *slowFirstRun {
	s := &slowFirstRun{started: make(chan struct{}), release: make(chan struct{})}
	s.tool = fnTool("slow", func(context.Context) (any, error) {
		if s.runs.Add(1) == 1 {
			close(s.started)
			<-s.release
		}
		return "done", nil
	})
	return s
}

// requireCopyWaits serves first and, once its tool runs, second, a copy of
// the same call: the copy must wait for the first answer and get it, and
// the tool must run once.
func (s *slowFirstRun) requireCopyWaits(t *testing.T, h *Handler, first, second Request) {
	t.Helper()
	a := make(chan Response, 1)
	go func() { a <- h.Serve(context.Background(), first) }()
	<-s.started
	b := make(chan Response, 1)
	go func() { b <- h.Serve(context.Background(), second) }()
	time.Sleep(200 * time.Millisecond) // the copy finds the call running and asks again
	close(s.release)
	got, copied := <-a, <-b
	requireResult(t, got)
	assert.Equal(t, string(got.Body), string(copied.Body), "the copy waits for the first answer")
	assert.Equal(t, int64(1), s.runs.Load(), "the tool runs once")
}

func TestReplayErrorAnswer(t *testing.T) {
	runs := &int64Counter{}
	h, _ := newHandler(t, Config{Tools: []*Tool{fnTool("fail", func(context.Context) (any, error) { runs.add(); return nil, errors.New("nope") })}})
	body := toolCall("fail", "call_r2", `{}`)
	first := h.Serve(context.Background(), post(body))
	requireError(t, first, http.StatusOK, CodeExecutionFailed)
	second := h.Serve(context.Background(), post(body))
	assert.Equal(t, string(first.Body), string(second.Body))
	requireError(t, second, http.StatusOK, CodeExecutionFailed)
	assert.Equal(t, int64(1), runs.get())
}

func TestReplaySameIDDifferentBody(t *testing.T) {
	runs := &int64Counter{}
	h, _ := newHandler(t, Config{Tools: []*Tool{echoTool(runs)}})
	requireResult(t, h.Serve(context.Background(), post(toolCall("echo", "call_r3", `{"orderId":1}`))))
	resp := h.Serve(context.Background(), post(toolCall("echo", "call_r3", `{"orderId":2}`)))
	msg := requireError(t, resp, http.StatusConflict, CodeInvalidBody)
	assert.Contains(t, msg, "call_r3")
	assert.Equal(t, int64(1), runs.get())

	// A long id is quoted up to its first 80 characters.
	long := strings.Repeat("x", 79) + "yz"
	requireResult(t, h.Serve(context.Background(), post(toolCall("echo", long, `{"orderId":1}`))))
	msg = requireError(t, h.Serve(context.Background(), post(toolCall("echo", long, `{"orderId":2}`))), http.StatusConflict, CodeInvalidBody)
	assert.Contains(t, msg, `toolCallId "`+strings.Repeat("x", 79)+`y…" was already used`)
}

func TestReplayConcurrent(t *testing.T) {
	runs := &int64Counter{}
	h, _ := newHandler(t, Config{Tools: []*Tool{echoTool(runs)}})
	body := toolCall("echo", "call_r4", `{"orderId":9}`)
	const n = 32
	start := make(chan struct{})
	answers := make([]Response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			answers[i] = h.Serve(context.Background(), post(body))
		}()
	}
	close(start)
	wg.Wait()
	assert.Equal(t, int64(1), runs.get(), "one run for 32 identical calls")
	for _, a := range answers {
		assert.Equal(t, string(answers[0].Body), string(a.Body))
		assert.Equal(t, http.StatusOK, a.Status)
	}
	requireResult(t, answers[0])
}

func TestReplayDisabled(t *testing.T) {
	runs := &int64Counter{}
	h, _ := newHandler(t, Config{Tools: []*Tool{echoTool(runs)}, DisableReplayProtection: true})
	body := toolCall("echo", "call_r5", `{"orderId":1}`)
	h.Serve(context.Background(), post(body))
	h.Serve(context.Background(), post(body))
	requireResult(t, h.Serve(context.Background(), post(toolCall("echo", "call_r5", `{"orderId":2}`))))
	assert.Equal(t, int64(3), runs.get())
}

// recordingStore records what the core asks of its Store, and can fail,
// block or answer with what the test sets.
type recordingStore struct {
	mu         sync.Mutex
	claims     []string        // key/fingerprint
	saves      []string        // key/fingerprint/answer
	renews     []string        // key/fingerprint
	leases     []time.Duration // of each Claim, then of each Renew
	renewCtx   []context.Context
	claimCtx   []context.Context
	saveCtx    []context.Context
	claimErr   error
	saveErr    error
	renewErr   error
	evicted    int         // what Save reports
	running    int         // answer ClaimRunning this many times first
	status     ClaimStatus // when set, Claim answers it
	blockSave  bool        // Save waits for its ctx to end
	blockClaim bool        // Claim waits for its ctx to end
	inner      Store       // the store behind it
}

func newRecordingStore() *recordingStore {
	return &recordingStore{inner: newMemoryStore(0, nil)}
}

func (s *recordingStore) Claim(ctx context.Context, key, fp string, lease time.Duration) (ClaimStatus, []byte, error) {
	s.mu.Lock()
	s.claims = append(s.claims, key+"/"+fp)
	s.claimCtx = append(s.claimCtx, ctx)
	s.leases = append(s.leases, lease)
	err, block, status := s.claimErr, s.blockClaim, s.status
	running := s.running > 0
	if running {
		s.running--
	}
	s.mu.Unlock()
	switch {
	case block:
		<-ctx.Done()
		return 0, nil, ctx.Err()
	case running:
		return ClaimRunning, nil, nil
	case err != nil:
		return 0, nil, err
	case status != 0:
		return status, nil, nil
	}
	return s.inner.Claim(ctx, key, fp, lease)
}

func (s *recordingStore) Save(ctx context.Context, key, fp string, answer []byte, ttl time.Duration) (int, error) {
	s.mu.Lock()
	s.saves = append(s.saves, key+"/"+fp+"/"+string(answer))
	s.saveCtx = append(s.saveCtx, ctx)
	err, block, evicted := s.saveErr, s.blockSave, s.evicted
	s.mu.Unlock()
	if block {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	if err != nil {
		return 0, err
	}
	if _, err := s.inner.Save(ctx, key, fp, answer, ttl); err != nil {
		return 0, err
	}
	return evicted, nil
}

func (s *recordingStore) Renew(ctx context.Context, key, fp string, lease time.Duration) error {
	s.mu.Lock()
	s.renews = append(s.renews, key+"/"+fp)
	s.renewCtx = append(s.renewCtx, ctx)
	s.leases = append(s.leases, lease)
	err := s.renewErr
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.inner.Renew(ctx, key, fp, lease)
}

func (s *recordingStore) claimCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.claims)
}

// counts returns how many Claims, Saves and Renews the store was asked
// for so far.
func (s *recordingStore) counts() (claims, saves, renews int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.claims), len(s.saves), len(s.renews)
}

// setErrors sets what Save and Renew fail with (nil: they work), while
// the Handler may be calling them.
func (s *recordingStore) setErrors(save, renew error) {
	s.mu.Lock()
	s.saveErr, s.renewErr = save, renew
	s.mu.Unlock()
}

// digest is the hex SHA-256 of s.
func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestCoreUsesStore: what reaches the Store, and when.
func TestCoreUsesStore(t *testing.T) {
	store := newRecordingStore()
	runs := &int64Counter{}
	h, logs := newHandler(t, Config{Tools: []*Tool{echoTool(runs)}, Store: store})
	body := toolCall("echo", "call_s1", `{"orderId":3}`)
	resp := h.Serve(context.Background(), post(body))
	key, fp := digest("call_s1"), digest(body)
	assert.Equal(t, []string{key + "/" + fp}, store.claims, "claimed by the id's SHA-256, with the body's SHA-256")
	assert.Equal(t, []string{key + "/" + fp + "/" + string(resp.Body)}, store.saves)

	// Refusals before the run never touch the store.
	for _, b := range []string{toolCall("nope", "call_s2", `{}`), toolCall("echo", "call_s3", `{}`), `{"op":"diagnostics"}`, `{"tool":1}`} {
		h.Serve(context.Background(), post(b))
	}
	h.Serve(context.Background(), get())
	assert.Len(t, store.claims, 1)

	// A failing store: the tool does not run, and the answer says the
	// action was not carried out, without asking for a retry.
	store.claimErr = errors.New("redis: connection refused")
	msg := requireError(t, h.Serve(context.Background(), post(toolCall("echo", "call_s4", `{"orderId":3}`))), http.StatusOK, CodeExecutionFailed)
	assert.Equal(t, msgStoreFailed, msg)
	assert.Contains(t, msg, "the tool was not run and nothing was changed")
	assert.NotContains(t, msg, "redis")
	assert.NotContains(t, strings.ToLower(msg), "try again")
	assert.Equal(t, int64(1), runs.get())
	lines := logs.find(t, "replay store failed")
	require.Len(t, lines, 1)
	assert.Equal(t, "call_s4", lines[0]["toolCallId"])
	assert.Contains(t, lines[0]["error"], "connection refused")

	// A save that fails after the tool ran: the answer still goes out, the
	// failure is logged, and the answer waits to be saved again
	// (TestFailedSaveIsSavedAgain).
	store.claimErr = nil
	store.saveErr = errors.New("redis: connection reset")
	requireResult(t, h.Serve(context.Background(), post(toolCall("echo", "call_s5", `{"orderId":3}`))))
	assert.Equal(t, int64(2), runs.get())
	lines = logs.find(t, "could not save the answer")
	require.Len(t, lines, 1)
	assert.Equal(t, "call_s5", lines[0]["toolCallId"])
	assert.Equal(t, "WARN", lines[0]["level"])
	assert.Contains(t, lines[0]["msg"], "saved again")
	assert.Contains(t, lines[0]["error"], "connection reset")
}

// TestLongIDIsDigested: the store sees 64 hex digits whatever the id's
// length.
func TestLongIDIsDigested(t *testing.T) {
	store := newRecordingStore()
	h, _ := newHandler(t, Config{Tools: []*Tool{echoTool(nil)}, Store: store, MaxBodyBytes: 2 << 20})
	id := strings.Repeat("x", 1<<20)
	requireResult(t, h.Serve(context.Background(), post(toolCall("echo", id, `{"orderId":3}`))))
	require.Len(t, store.claims, 1)
	key, _, _ := strings.Cut(store.claims[0], "/")
	assert.Equal(t, digest(id), key)
	assert.Len(t, key, 64)
}

// TestStoreTimeoutBoundsClaim: a store that does not answer holds a call
// for StoreTimeout, then the call is answered execution_failed and the tool
// is not run.
func TestStoreTimeoutBoundsClaim(t *testing.T) {
	store := newRecordingStore()
	store.blockClaim = true
	runs := &int64Counter{}
	h, logs := newHandler(t, Config{Tools: []*Tool{echoTool(runs)}, Store: store, StoreTimeout: 20 * time.Millisecond})
	start := time.Now()
	msg := requireError(t, h.Serve(context.Background(), post(toolCall("echo", "call_t1", `{"orderId":3}`))), http.StatusOK, CodeExecutionFailed)
	assert.Equal(t, msgStoreFailed, msg)
	assert.Zero(t, runs.get(), "the tool must not run")
	require.Len(t, store.claimCtx, 1)
	deadline, ok := store.claimCtx[0].Deadline()
	require.True(t, ok, "Claim must run under a deadline")
	assert.False(t, deadline.After(start.Add(20*time.Millisecond+time.Second)), "the deadline is StoreTimeout away")
	assert.Len(t, logs.find(t, "replay store failed"), 1)

	// The default deadline is defaultStoreTimeout.
	h, _ = newHandler(t, Config{Tools: []*Tool{echoTool(runs)}, Store: newRecordingStore()})
	assert.Equal(t, defaultStoreTimeout, h.cfg.StoreTimeout)
}

// TestStoreTimeoutBoundsSave: a save that does not answer delays the answer
// by at most StoreTimeout, the answer is sent, and the failure logged. The
// save is not cancelled with the request.
func TestStoreTimeoutBoundsSave(t *testing.T) {
	store := newRecordingStore()
	store.blockSave = true
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leaving := NewTool("leave", RiskLow, "Its caller goes away.", func(context.Context, ToolCall[struct{}]) (string, error) {
		cancel() // the client hangs up while the tool runs
		return "done", nil
	})
	h, logs := newHandler(t, Config{Tools: []*Tool{leaving}, Store: store, StoreTimeout: 20 * time.Millisecond})
	requireResult(t, h.Serve(ctx, post(toolCall("leave", "call_t2", `{}`))))
	require.Len(t, store.saveCtx, 1)
	_, ok := store.saveCtx[0].Deadline()
	assert.True(t, ok, "Save must run under a deadline")
	assert.ErrorIs(t, store.saveCtx[0].Err(), context.DeadlineExceeded, "Save ended by its own deadline, not by the request's end")
	lines := logs.find(t, "could not save")
	require.Len(t, lines, 1)
	assert.Equal(t, "call_t2", lines[0]["toolCallId"])
}

// TestCopyWaitsForTheRunningCall: on ClaimRunning the core asks again until
// the answer is there.
func TestCopyWaitsForTheRunningCall(t *testing.T) {
	store := newRecordingStore()
	runs := &int64Counter{}
	h, _ := newHandler(t, Config{Tools: []*Tool{echoTool(runs)}, Store: store})
	body := toolCall("echo", "call_w1", `{"orderId":3}`)
	first := h.Serve(context.Background(), post(body))
	requireResult(t, first)

	store.running = 3 // the next copy is told three times that the call runs
	again := h.Serve(context.Background(), post(body))
	assert.Equal(t, string(first.Body), string(again.Body))
	assert.Equal(t, 1+4, store.claimCount(), "the copy asked until the answer was there")
	assert.Equal(t, int64(1), runs.get())
}

// TestCopyGivesUpWhenItsRequestEnds: a copy whose request ends while the
// first still runs is answered without running the tool.
func TestCopyGivesUpWhenItsRequestEnds(t *testing.T) {
	store := newRecordingStore()
	store.status = ClaimRunning
	runs := &int64Counter{}
	h, _ := newHandler(t, Config{Tools: []*Tool{echoTool(runs)}, Store: store})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	msg := requireError(t, h.Serve(ctx, post(toolCall("echo", "call_w2", `{"orderId":3}`))), http.StatusOK, CodeExecutionFailed)
	assert.Equal(t, msgCopyStillRuns, msg)
	assert.Greater(t, store.claimCount(), 1, "the copy asked more than once")
	assert.Zero(t, runs.get())
}

// TestCopyGivesUpAfterALease: a store that keeps answering ClaimRunning
// does not hold a request without a deadline for ever.
func TestCopyGivesUpAfterALease(t *testing.T) {
	store := newRecordingStore()
	store.status = ClaimRunning
	runs := &int64Counter{}
	h, _ := newHandler(t, Config{Tools: []*Tool{echoTool(runs)}, Store: store, ReplayLease: 10 * time.Millisecond})
	msg := requireError(t, h.Serve(context.Background(), post(toolCall("echo", "call_w4", `{"orderId":3}`))), http.StatusOK, CodeExecutionFailed)
	assert.Equal(t, msgCopyOutlasted, msg)
	assert.Zero(t, runs.get())
}

// TestRequestEndedBeforeTheClaim: a request that ends while the store is
// being asked is answered with what happened, not as a store failure.
func TestRequestEndedBeforeTheClaim(t *testing.T) {
	store := newRecordingStore()
	store.blockClaim = true
	h, logs := newHandler(t, Config{Tools: []*Tool{echoTool(nil)}, Store: store})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	msg := requireError(t, h.Serve(ctx, post(toolCall("echo", "call_w3", `{"orderId":3}`))), http.StatusOK, CodeExecutionFailed)
	assert.Equal(t, msgRequestEnded, msg)
	assert.Empty(t, logs.find(t, "replay store failed"))
}

// TestUnknownClaimStatus: a store answering a status the core does not know
// fails the call without running the tool.
func TestUnknownClaimStatus(t *testing.T) {
	store := newRecordingStore()
	store.status = ClaimStatus(42)
	runs := &int64Counter{}
	h, logs := newHandler(t, Config{Tools: []*Tool{echoTool(runs)}, Store: store})
	msg := requireError(t, h.Serve(context.Background(), post(toolCall("echo", "call_u1", `{"orderId":3}`))), http.StatusOK, CodeExecutionFailed)
	assert.Equal(t, msgStoreFailed, msg)
	assert.Zero(t, runs.get())
	assert.Len(t, logs.find(t, "unknown ClaimStatus"), 1)
}

// TestEvictedEarlyIsReported: answers a Save dropped early are logged as a
// warning and reported to the observer.
func TestEvictedEarlyIsReported(t *testing.T) {
	store := newRecordingStore()
	store.evicted = 3
	obs := &observed{}
	h, logs := newHandler(t, Config{Tools: []*Tool{echoTool(nil)}, Store: store, Observer: obs.add})
	requireResult(t, h.Serve(context.Background(), post(toolCall("echo", "call_e1", `{"orderId":3}`))))
	assert.Equal(t, 3, obs.last(t).EvictedEarly)
	lines := logs.find(t, "dropped answers before their TTL")
	require.Len(t, lines, 1)
	assert.Equal(t, "WARN", lines[0]["level"])
	assert.Equal(t, "echo", lines[0]["tool"])
	assert.Equal(t, "call_e1", lines[0]["toolCallId"])
	assert.Equal(t, float64(3), lines[0]["evicted"])

	store.evicted = 0
	requireResult(t, h.Serve(context.Background(), post(toolCall("echo", "call_e2", `{"orderId":3}`))))
	assert.Zero(t, obs.last(t).EvictedEarly)
	assert.Len(t, logs.find(t, "dropped answers before their TTL"), 1)
}

// panickingStore panics in Claim or Save, as a broken custom Store might.
type panickingStore struct {
	inner   Store
	inClaim bool
}

func (s *panickingStore) Claim(ctx context.Context, key, fp string, lease time.Duration) (ClaimStatus, []byte, error) {
	if s.inClaim {
		panic("claim exploded")
	}
	return s.inner.Claim(ctx, key, fp, lease)
}

func (s *panickingStore) Save(context.Context, string, string, []byte, time.Duration) (int, error) {
	panic("save exploded")
}

func (s *panickingStore) Renew(context.Context, string, string, time.Duration) error {
	panic("renew exploded")
}

// TestPanickingStore: a store that panics fails the call the way a store
// error does, and never takes the server down.
func TestPanickingStore(t *testing.T) {
	store := &panickingStore{inner: newMemoryStore(0, nil), inClaim: true}
	runs := &int64Counter{}
	h, logs := newHandler(t, Config{Tools: []*Tool{echoTool(runs)}, Store: store})
	msg := requireError(t, h.Serve(context.Background(), post(toolCall("echo", "call_p1", `{"orderId":3}`))), http.StatusOK, CodeExecutionFailed)
	assert.Contains(t, msg, "not run")
	assert.Zero(t, runs.get())
	assert.Contains(t, logs.String(), "claim exploded")

	// Save panics after the tool ran: the answer is still sent, the failure logged.
	store.inClaim = false
	requireResult(t, h.Serve(context.Background(), post(toolCall("echo", "call_p2", `{"orderId":3}`))))
	assert.Equal(t, int64(1), runs.get())
	assert.Contains(t, logs.String(), "save exploded")
}

// slowBody is a request body that arrives after a pause.
type slowBody struct {
	pause time.Duration
	body  *strings.Reader
}

func (b *slowBody) Read(p []byte) (int, error) {
	if b.pause > 0 {
		time.Sleep(b.pause)
		b.pause = 0
	}
	return b.body.Read(p)
}

// TestLeaseStartsAtTheClaim: a call's lease in the memory store runs from
// its claim, not from when the request arrived, so a body that took longer
// than the lease to arrive does not let a copy run the tool while the
// first still runs it.
func TestLeaseStartsAtTheClaim(t *testing.T) {
	t.Parallel()
	slow := newSlowFirstRun()
	h, _ := newHandler(t, Config{Tools: []*Tool{slow.tool}, ReplayLease: time.Second})
	body := toolCall("slow", "call_slow_body", `{}`)
	// The tool starts 1.5 s after the request arrived, half a second after
	// a lease counted from then would have ended.
	late := post(body)
	late.BodyBytes, late.Body = nil, &slowBody{pause: 1500 * time.Millisecond, body: strings.NewReader(body)}
	slow.requireCopyWaits(t, h, late, post(body))
}

// TestDurationCountsASharedStoresSave: the time a shared store takes to
// keep the answer is part of the request's Event.Duration (the memory
// store's is read with the answer, which it takes well under a
// microsecond to keep).
func TestDurationCountsASharedStoresSave(t *testing.T) {
	store := newRecordingStore()
	store.blockSave = true
	obs := &observed{}
	h, _ := newHandler(t, Config{Tools: []*Tool{echoTool(&int64Counter{})}, Store: store, StoreTimeout: 200 * time.Millisecond, Observer: obs.add})
	requireResult(t, h.Serve(context.Background(), post(toolCall("echo", "call_d1", `{"orderId":1}`))))
	assert.GreaterOrEqual(t, obs.last(t).Duration, 200*time.Millisecond)
}

// slowLog is a log handler that drops every record and takes pause to
// drop those whose message contains slow.
type slowLog struct {
	slow  string
	pause time.Duration
}

func (slowLog) Enabled(context.Context, slog.Level) bool { return true }

func (s slowLog) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, s.slow) {
		time.Sleep(s.pause)
	}
	return nil
}

func (s slowLog) WithAttrs([]slog.Attr) slog.Handler { return s }

func (s slowLog) WithGroup(string) slog.Handler { return s }

// TestDurationCountsTheEvictionWarning: when the memory store dropped
// answers early to keep this one, the warning logged about it is part of
// the request's Event.Duration, as a shared store's save is.
func TestDurationCountsTheEvictionWarning(t *testing.T) {
	big := fnTool("big", func(context.Context) (any, error) { return strings.Repeat("a", 40<<10), nil })
	obs := &observed{}
	logger := slog.New(slowLog{"dropped answers before their TTL", 200 * time.Millisecond})
	h, _ := newHandler(t, Config{Tools: []*Tool{big}, ReplayMaxBytes: 64 << 10, Logger: logger, Observer: obs.add})
	requireResult(t, h.Serve(context.Background(), post(toolCall("big", "call_e1", `{}`))))
	requireResult(t, h.Serve(context.Background(), post(toolCall("big", "call_e2", `{}`)))) // the budget holds one answer
	ev := obs.last(t)
	require.Equal(t, 1, ev.EvictedEarly)
	assert.GreaterOrEqual(t, ev.Duration, 200*time.Millisecond)
}

// TestReplayedRefusalKeepsItsReason: a refusal answered again from the
// store is reported with the reason it was refused for, as the first
// answer was (the store keeps only the body).
func TestReplayedRefusalKeepsItsReason(t *testing.T) {
	refusing := fnTool("refuse", func(context.Context) (any, error) { return notSignedIn("Sign in to see orders."), nil })
	obs := &observed{}
	h, _ := newHandler(t, Config{Tools: []*Tool{refusing}, Observer: obs.add})
	body := toolCall("refuse", "call_ref", `{}`)
	first := h.Serve(context.Background(), post(body))
	assert.Equal(t, "not_signed_in", obs.last(t).Refusal)
	again := h.Serve(context.Background(), post(body))
	assert.Equal(t, string(first.Body), string(again.Body))
	ev := obs.last(t)
	assert.True(t, ev.Replayed)
	assert.Equal(t, "not_signed_in", ev.Refusal, "the replayed refusal keeps its reason")
	assert.Empty(t, ev.Code)
	assert.Equal(t, http.StatusOK, ev.Status)
}

// TestStoredResponse reads kept bodies back: a refusal with its reason,
// one without (the default reason), a result and an error with its code
// and status.
func TestStoredResponse(t *testing.T) {
	for _, c := range []struct {
		body, refusal string
		code          Code
		status        int
	}{
		{`{"result":{"ok":false,"outcome":"blocked","reason":"approval_required","detail":"Ask a teammate."}}`, "approval_required", "", http.StatusOK},
		{`{"result":{"ok":false,"outcome":"blocked"}}`, defaultRefusalReason, "", http.StatusOK},
		{`{"result":{"ok":false,"reason":""}}`, defaultRefusalReason, "", http.StatusOK},
		{`{"result":{"ok":true,"reason":"x"}}`, "", "", http.StatusOK},
		{`{"result":"ok"}`, "", "", http.StatusOK},
		{`{"error":{"code":"invalid_input","message":"orderId: required"}}`, "", CodeInvalidInput, http.StatusBadRequest},
		{`{"error":{"code":"execution_failed","message":"down"}}`, "", CodeExecutionFailed, http.StatusOK},
		{`{"error":{"message":"no code"}}`, "", "", http.StatusOK},
		{`{"other":1}`, "", "", http.StatusOK},
		{`not json`, "", "", http.StatusOK},
	} {
		resp := storedResponse([]byte(c.body))
		assert.Equal(t, c.refusal, resp.refusal, "%s", c.body)
		assert.Equal(t, c.code, resp.code, "%s", c.body)
		assert.Equal(t, c.status, resp.Status, "%s", c.body)
		assert.True(t, resp.replayed)
		assert.Equal(t, c.body, string(resp.Body))
	}
}

// answerAsItEnds is a store that says the call runs elsewhere, then, on
// the next Claim, ends the request (cancel) and gives the copy's answer.
type answerAsItEnds struct {
	*recordingStore
	cancel context.CancelFunc
	asked  int
}

func (s *answerAsItEnds) Claim(ctx context.Context, key, fp string, lease time.Duration) (ClaimStatus, []byte, error) {
	s.asked++
	if s.asked == 1 {
		return ClaimRunning, nil, nil
	}
	s.cancel()
	return ClaimDone, []byte(`{"result":"the copy's answer"}`), nil
}

// TestAnswerThatArrivesAsTheRequestEnds: a waiting copy whose store gives
// the answer in the same call during which its request ends sends that
// answer: only a store error with the request ended is "the request ended".
func TestAnswerThatArrivesAsTheRequestEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := &answerAsItEnds{recordingStore: newRecordingStore(), cancel: cancel}
	runs := &int64Counter{}
	h, _ := newHandler(t, Config{Tools: []*Tool{echoTool(runs)}, Store: store})
	resp := h.Serve(ctx, post(toolCall("echo", "call_as_it_ends", `{"orderId":1}`)))
	assert.JSONEq(t, `"the copy's answer"`, string(requireResult(t, resp)))
	assert.Zero(t, runs.get())
}

// TestCopyPollsWithGrowingPauses: a copy that waits asks the store again
// after pauses that double from 5 ms up to 100 ms, not every few
// milliseconds: in 400 ms that is about 8 Claims (fewer on a slow
// machine, never many more).
func TestCopyPollsWithGrowingPauses(t *testing.T) {
	store := newRecordingStore()
	store.status = ClaimRunning
	h, _ := newHandler(t, Config{Tools: []*Tool{echoTool(nil)}, Store: store})
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	msg := requireError(t, h.Serve(ctx, post(toolCall("echo", "call_polls", `{"orderId":1}`))), http.StatusOK, CodeExecutionFailed)
	assert.Equal(t, msgCopyStillRuns, msg)
	claims, _, _ := store.counts()
	assert.GreaterOrEqual(t, claims, 3, "it asks again while it waits")
	assert.LessOrEqual(t, claims, 20, "it does not poll every few milliseconds")
}

// TestNoEvictionsWithoutASave: a request that saves no answer (refused
// before its claim, or a replay) reports no answers dropped early.
func TestNoEvictionsWithoutASave(t *testing.T) {
	obs := &observed{}
	h, _ := newHandler(t, Config{Tools: []*Tool{echoTool(nil)}, Observer: obs.add})
	requireError(t, h.Serve(context.Background(), post(toolCall("nope", "call_ne1", `{}`))), http.StatusNotFound, CodeUnknownTool)
	assert.Zero(t, obs.last(t).EvictedEarly)
	body := toolCall("echo", "call_ne2", `{"orderId":1}`)
	requireResult(t, h.Serve(context.Background(), post(body)))
	requireResult(t, h.Serve(context.Background(), post(body)))
	ev := obs.last(t)
	assert.True(t, ev.Replayed)
	assert.Zero(t, ev.EvictedEarly)
}
