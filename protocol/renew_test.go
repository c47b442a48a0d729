package protocol

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/internal/testonly/testsupport"
)

// sleepyTool is a tool, "sleepy", that counts its runs and takes pause,
// ignoring its context (a slow payment API that does not stop when asked).
type sleepyTool struct {
	tool    *Tool
	mu      sync.Mutex
	runs    int
	started chan struct{} // closed when the first run starts
}

func newSleepyTool(pause time.Duration) *sleepyTool {
	s := &sleepyTool{started: make(chan struct{})}
	s.tool = fnTool("sleepy", func(context.Context) (any, error) {
		s.mu.Lock()
		s.runs++
		if s.runs == 1 {
			close(s.started)
		}
		n := s.runs
		s.mu.Unlock()
		time.Sleep(pause)
		return map[string]int{"run": n}, nil
	})
	return s
}

func (s *sleepyTool) count() int { s.mu.Lock(); defer s.mu.Unlock(); return s.runs }

// TestSlowToolOutlivesItsLease is a security review's case on the default
// memory store: a 500 ms lease, a tool that takes 1.5 s and
// ignores its context, and a copy sent at 700 ms, after the first lease
// would have ended. The claim is renewed while the tool runs, so the copy
// waits and gets the first answer, and the tool runs once.
func TestSlowToolOutlivesItsLease(t *testing.T) {
	t.Parallel()
	slow := newSleepyTool(1500 * time.Millisecond)
	h, _ := newHandler(t, Config{Tools: []*Tool{slow.tool}, ReplayLease: 500 * time.Millisecond})
	body := toolCall("sleepy", "call_refund", `{}`)
	first := make(chan Response, 1)
	go func() { first <- h.Serve(context.Background(), post(body)) }()
	<-slow.started
	time.Sleep(700 * time.Millisecond)
	copied := h.Serve(context.Background(), post(body))
	got := <-first
	requireResult(t, got)
	assert.Equal(t, string(got.Body), string(copied.Body), "the copy waits for the first answer")
	assert.Equal(t, 1, slow.count(), "the tool runs once")
}

// TestSlowHandlerOutlivesItsLease: in middleware mode the app's handlers
// have no timeout; the claim is renewed until the call is answered, so a
// copy sent after the first lease would have ended gets the first answer
// and the handler runs once.
func TestSlowHandlerOutlivesItsLease(t *testing.T) {
	t.Parallel()
	h, _ := newHandler(t, Config{Tools: appTools("mine"), ReplayLease: 450 * time.Millisecond})
	var mu sync.Mutex
	reached := 0
	started := make(chan struct{})
	mw := h.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reached++
		if reached == 1 {
			close(started)
		}
		mu.Unlock()
		time.Sleep(1200 * time.Millisecond) // ignores the request's context
		Respond(w, r, "refunded", nil)
	}))
	body := toolCall("mine", "mw_slow", `{}`)
	first := httptest.NewRecorder()
	done := make(chan struct{})
	go func() { defer close(done); mw.ServeHTTP(first, httpPost("/", body)) }()
	<-started
	time.Sleep(700 * time.Millisecond)
	copied := httptest.NewRecorder()
	mw.ServeHTTP(copied, httpPost("/", body))
	<-done
	assert.Equal(t, `{"result":"refunded"}`, first.Body.String())
	assert.Equal(t, first.Body.String(), copied.Body.String(), "the copy waits for the first answer")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 1, reached, "the handler runs once")
}

// TestRenewalsWhileTheToolRuns: a shared store is asked to renew the
// claim while the tool runs, each time for the lease and under the store
// deadline, and no more once the call is answered; a call that ends
// before a third of its lease is never renewed.
func TestRenewalsWhileTheToolRuns(t *testing.T) {
	store := newRecordingStore()
	slow := newSleepyTool(400 * time.Millisecond)
	const lease = 90 * time.Millisecond
	h, _ := newHandler(t, Config{Tools: []*Tool{slow.tool, echoTool(nil)}, Store: store, ReplayLease: lease, StoreTimeout: 50 * time.Millisecond})

	requireResult(t, h.Serve(context.Background(), post(toolCall("echo", "call_fast", `{"orderId":1}`))))
	time.Sleep(lease)
	_, _, renews := store.counts()
	assert.Zero(t, renews, "a call that ended within a third of its lease is not renewed")

	start := time.Now()
	requireResult(t, h.Serve(context.Background(), post(toolCall("sleepy", "call_slow", `{}`))))
	_, _, renews = store.counts()
	assert.GreaterOrEqual(t, renews, 2, "a 400 ms tool with a 90 ms lease is renewed every 30 ms")
	store.mu.Lock()
	key, fp := digest("call_slow"), digest(toolCall("sleepy", "call_slow", `{}`))
	for i, r := range store.renews {
		assert.Equal(t, key+"/"+fp, r, "renewal %d renews the call's claim", i)
		deadline, ok := store.renewCtx[i].Deadline()
		if assert.True(t, ok, "renewal %d runs under the store deadline", i) {
			assert.False(t, deadline.After(start.Add(time.Second)), "renewal %d's deadline is StoreTimeout away", i)
		}
	}
	for _, l := range store.leases {
		assert.Equal(t, lease, l, "every claim and renewal asks for the lease")
	}
	store.mu.Unlock()

	// A renewal the timer started while the answer was being saved may
	// still be under way (its store call then finds a saved answer and
	// does nothing); none starts later.
	time.Sleep(lease)
	_, _, answered := store.counts()
	assert.LessOrEqual(t, answered-renews, 1, "at most the renewal under way as the call was answered")
	time.Sleep(3 * lease)
	_, _, after := store.counts()
	assert.Equal(t, answered, after, "no renewal once the call is answered")
}

// TestRenewalFailureIsRetriedAndLogged: a renewal that fails is tried
// again sooner than the next renewal would be, and logged as a warning at
// most once per logInterval.
func TestRenewalFailureIsRetriedAndLogged(t *testing.T) {
	store := newRecordingStore()
	store.setErrors(nil, errors.New("redis: connection reset by peer"))
	slow := newSleepyTool(400 * time.Millisecond)
	h, logs := newHandler(t, Config{Tools: []*Tool{slow.tool}, Store: store, ReplayLease: 300 * time.Millisecond})
	requireResult(t, h.Serve(context.Background(), post(toolCall("sleepy", "call_r", `{}`))))
	_, _, renews := store.counts()
	// The first renewal is due at 100 ms, then every 25 ms after a
	// failure: about 12 in 400 ms, where renewals every 100 ms would be 3.
	assert.GreaterOrEqual(t, renews, 5, "failed renewals are tried again sooner")
	lines := logs.find(t, "could not renew")
	require.Len(t, lines, 1, "logged once per interval")
	assert.Equal(t, "WARN", lines[0]["level"])
	assert.Contains(t, lines[0]["error"], "connection reset")
}

// TestCloseStopsRenewals: after Close, the claims of calls that still run
// are not renewed.
func TestCloseStopsRenewals(t *testing.T) {
	store := newRecordingStore()
	slow := newSleepyTool(500 * time.Millisecond)
	h, _ := newHandler(t, Config{Tools: []*Tool{slow.tool}, Store: store, ReplayLease: 60 * time.Millisecond})
	done := make(chan Response, 1)
	go func() { done <- h.Serve(context.Background(), post(toolCall("sleepy", "call_c", `{}`))) }()
	<-slow.started
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, h.Close())
	_, _, renews := store.counts()
	assert.Positive(t, renews, "renewed before Close")
	time.Sleep(150 * time.Millisecond)
	_, _, after := store.counts()
	assert.Equal(t, renews, after, "no renewal after Close")
	requireResult(t, <-done)
	require.NoError(t, h.Close(), "Close twice")
}

// TestDefaultLease: the lease is Config.ReplayLease, else 12 s, or six
// store deadlines when that is longer; the tool's timeout does not change
// it (the claim is renewed while the tool runs).
func TestDefaultLease(t *testing.T) {
	for _, c := range []struct {
		name                             string
		lease, storeTimeout, toolTimeout time.Duration
		want                             time.Duration
	}{
		{name: "default", want: 12 * time.Second},
		{name: "a long tool timeout", toolTimeout: 5 * time.Minute, want: 12 * time.Second},
		{name: "a long store deadline", storeTimeout: 3 * time.Second, want: 18 * time.Second},
		{name: "set", lease: 5 * time.Second, storeTimeout: 3 * time.Second, want: 5 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := newRecordingStore()
			tool := echoTool(nil)
			tool.timeout = c.toolTimeout
			h, _ := newHandler(t, Config{Tools: []*Tool{tool}, Store: store, ReplayLease: c.lease, StoreTimeout: c.storeTimeout})
			requireResult(t, h.Serve(context.Background(), post(toolCall("echo", "call_l", `{"orderId":1}`))))
			require.Equal(t, []time.Duration{c.want}, store.leases)
		})
	}
	assert.Equal(t, time.Duration(math.MaxInt64), defaultLease(math.MaxInt64/2), "saturates")
}

// TestCopyPatience: a copy waits five leases, or the tool's timeout and a
// lease when that is longer.
func TestCopyPatience(t *testing.T) {
	assert.Equal(t, time.Minute, copyPatience(12*time.Second, 0))
	assert.Equal(t, time.Minute, copyPatience(12*time.Second, 30*time.Second))
	assert.Equal(t, 2*time.Minute+12*time.Second, copyPatience(12*time.Second, 2*time.Minute))
	assert.Equal(t, time.Duration(math.MaxInt64), copyPatience(math.MaxInt64, 0))
	assert.Equal(t, time.Duration(math.MaxInt64), copyPatience(time.Second, math.MaxInt64))
	// Five leases that would overflow saturate; five that just fit do not.
	assert.Equal(t, time.Duration(math.MaxInt64), copyPatience(math.MaxInt64/5+1, 0))
	assert.Equal(t, 5*time.Duration(math.MaxInt64/5), copyPatience(math.MaxInt64/5, 0))
}

// TestFailedSaveIsSavedAgain: when a shared store fails to save the
// answer, the answer goes out and is saved again in the background, its
// claim renewed meanwhile: a copy sent after the claim's first lease waits
// (it does not run the tool again) and gets the first answer once the
// store keeps it.
func TestFailedSaveIsSavedAgain(t *testing.T) {
	store := newRecordingStore()
	store.setErrors(errors.New("redis: i/o timeout"), nil)
	runs := &int64Counter{}
	const lease = 450 * time.Millisecond
	h, logs := newHandler(t, Config{Tools: []*Tool{echoTool(runs)}, Store: store, ReplayLease: lease})
	body := toolCall("echo", "call_lost", `{"orderId":4}`)
	first := h.Serve(context.Background(), post(body))
	requireResult(t, first)

	time.Sleep(3 * lease / 2) // the first lease has ended; the claim was renewed
	copied := make(chan Response, 1)
	go func() { copied <- h.Serve(context.Background(), post(body)) }()
	time.Sleep(lease)
	_, saves, renews := store.counts()
	assert.Greater(t, saves, 1, "the answer is saved again")
	assert.Positive(t, renews, "its claim is renewed meanwhile")
	select {
	case resp := <-copied:
		t.Fatalf("the copy was answered before the store kept the answer: %s", resp.Body)
	default:
	}

	store.setErrors(nil, nil) // the store is back
	resp := <-copied
	assert.Equal(t, string(first.Body), string(resp.Body), "the copy gets the first answer")
	assert.Equal(t, int64(1), runs.get(), "the tool runs once")
	testsupport.Eventually(t, "the late save is logged", func() bool { return len(logs.find(t, "saved an answer it had failed to save")) == 1 })

	_, _, renews = store.counts()
	time.Sleep(lease)
	_, _, after := store.counts()
	assert.Equal(t, renews, after, "no renewal once the answer is kept")
}

// TestSaveAgainEndsWithTheTTL: an answer the store never keeps is saved
// again until its TTL has passed, then given up (logged) and its claim no
// longer renewed.
func TestSaveAgainEndsWithTheTTL(t *testing.T) {
	store := newRecordingStore()
	store.setErrors(errors.New("redis: OOM command not allowed"), nil)
	h, logs := newHandler(t, Config{Tools: []*Tool{echoTool(nil)}, Store: store, ReplayLease: 60 * time.Millisecond, ReplayTTL: time.Second})
	requireResult(t, h.Serve(context.Background(), post(toolCall("echo", "call_ttl", `{"orderId":4}`))))
	testsupport.Eventually(t, "the answer is given up at its TTL", func() bool { return len(logs.find(t, "within its TTL")) == 1 })
	line := logs.find(t, "within its TTL")[0]
	assert.Equal(t, "ERROR", line["level"])
	assert.Equal(t, "call_ttl", line["toolCallId"])
	_, saves, renews := store.counts()
	assert.GreaterOrEqual(t, saves, 3, "saved again until the TTL: at 0, 100, 300, 700 ms")
	time.Sleep(200 * time.Millisecond)
	_, savesAfter, renewsAfter := store.counts()
	assert.Equal(t, saves, savesAfter, "not saved again after its TTL")
	assert.Equal(t, renews, renewsAfter, "its claim is no longer renewed")
}

// TestCloseStopsSavingAgain: Close gives up the answers waiting to be
// saved again, logs how many, and ends the goroutine (TestMain's goleak
// checks that nothing is left).
func TestCloseStopsSavingAgain(t *testing.T) {
	store := newRecordingStore()
	store.setErrors(errors.New("redis: connection refused"), nil)
	h, logs := newHandler(t, Config{Tools: []*Tool{echoTool(nil)}, Store: store, StoreTimeout: 50 * time.Millisecond})
	requireResult(t, h.Serve(context.Background(), post(toolCall("echo", "call_a", `{"orderId":1}`))))
	requireResult(t, h.Serve(context.Background(), post(toolCall("echo", "call_b", `{"orderId":2}`))))
	require.NoError(t, h.Close())
	lines := logs.find(t, "Close gave up answers")
	require.Len(t, lines, 1)
	assert.Equal(t, float64(2), lines[0]["answers"])
	_, saves, _ := store.counts()
	time.Sleep(300 * time.Millisecond)
	_, after, _ := store.counts()
	assert.Equal(t, saves, after, "no save after Close")

	// After Close a failed save is not saved again: it is logged as lost.
	requireResult(t, h.Serve(context.Background(), post(toolCall("echo", "call_c", `{"orderId":3}`))))
	lost := logs.find(t, "cannot wait to be saved again")
	require.Len(t, lost, 1)
	assert.Equal(t, "ERROR", lost[0]["level"])
	assert.Equal(t, "call_c", lost[0]["toolCallId"])

	// One answer given up is logged; a Close with none waiting logs nothing.
	store = newRecordingStore()
	store.setErrors(errors.New("redis: connection refused"), nil)
	h, logs = newHandler(t, Config{Tools: []*Tool{echoTool(nil)}, Store: store, StoreTimeout: 50 * time.Millisecond})
	requireResult(t, h.Serve(context.Background(), post(toolCall("echo", "call_d", `{"orderId":4}`))))
	require.NoError(t, h.Close())
	lines = logs.find(t, "Close gave up answers")
	require.Len(t, lines, 1)
	assert.Equal(t, float64(1), lines[0]["answers"])
	h, logs = newHandler(t, Config{Tools: []*Tool{echoTool(nil)}, Store: newRecordingStore()})
	requireResult(t, h.Serve(context.Background(), post(toolCall("echo", "call_e", `{"orderId":5}`))))
	require.NoError(t, h.Close())
	assert.Empty(t, logs.find(t, "Close gave up answers"))
}

// TestAnswersWaitingToBeSavedAreBounded: past the bound, an answer whose
// save failed is not kept waiting; that is logged as an error.
func TestAnswersWaitingToBeSavedAreBounded(t *testing.T) {
	store := newRecordingStore()
	store.setErrors(errors.New("redis: connection refused"), nil)
	h, logs := newHandler(t, Config{Tools: []*Tool{echoTool(nil)}, Store: store})
	h.resaves.max = 2
	for _, id := range []string{"call_1", "call_2", "call_3"} {
		requireResult(t, h.Serve(context.Background(), post(toolCall("echo", id, `{"orderId":1}`))))
	}
	lost := logs.find(t, "cannot wait to be saved again")
	require.Len(t, lost, 1)
	assert.Equal(t, "call_3", lost[0]["toolCallId"])

	h.resaves.max, h.resaves.maxBytes = maxResaves, 10 // and in bytes
	requireResult(t, h.Serve(context.Background(), post(toolCall("echo", "call_4", `{"orderId":1}`))))
	assert.Len(t, logs.find(t, "cannot wait to be saved again"), 2)
}

// TestOneSaveAgainTriesTheRestAtOnce: when an answer waiting to be saved
// again is kept at last (the store is back), every other answer waiting is
// tried at once rather than after its own pause.
func TestOneSaveAgainTriesTheRestAtOnce(t *testing.T) {
	store := newRecordingStore()
	h, _ := newHandler(t, Config{Tools: []*Tool{echoTool(nil)}, Store: store})
	later := time.Now().Add(time.Hour)
	waiting := func(id string) *resave {
		return &resave{held: claim{store: store, key: digest(id), fingerprint: digest(id)}, answer: []byte(`{"result":1}`),
			tool: "echo", callID: id, until: later, next: later, pause: maxResavePause}
	}
	a, b := waiting("call_a"), waiting("call_b")
	q := h.resaves
	q.waiting = []*resave{a, b} // as add leaves them, without the goroutine
	before := time.Now()
	q.try(a)
	require.Equal(t, []*resave{b}, q.waiting, "the answer kept leaves the queue")
	assert.False(t, b.next.After(time.Now()), "the other answer is due now")
	assert.False(t, b.next.Before(before))
	_, saves, _ := store.counts()
	assert.Equal(t, 1, saves)
}
