// Package storetest checks that a [protocol.Store] behaves as the core
// expects: claims, answers byte for byte, conflicts, waiters, leases, TTLs
// and concurrency. Run it from the tests of any Store, ours or your own:
//
//	func TestMyStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) protocol.Store { return mystore.New(...) })
//	}
//
// [RunHandlers] goes one level up: it serves signed calls through two
// [protocol.Handler]s and checks that a call runs its tool once.
//
// The cases wait in real time with short leases and TTLs (hundreds of
// milliseconds) and generous deadlines (seconds); they never assert how
// long anything took, so a loaded machine slows them down without failing
// them. The goroutine-leak case inspects every goroutine of the process:
// do not run these tests in parallel with others.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/median-go/median/protocol"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// Durations the cases use. Short is a lease or TTL meant to end during the
// case; Long one that must not; Deadline bounds any wait for something that
// must happen, so a broken store fails instead of hanging.
const (
	Short    = 200 * time.Millisecond
	Long     = time.Minute
	Deadline = 10 * time.Second
)

// pause is how long a case watches for something that must not happen (a
// waiter returning early). A slow machine only makes the check weaker.
const pause = 50 * time.Millisecond

// Run runs every behaviour case as a subtest of t. newStore is called once
// per subtest and must return an empty store, or one whose ids cannot
// collide with other subtests' (each case uses fresh random ids).
func Run(t *testing.T, newStore func(t *testing.T) protocol.Store) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, newStore(t)) })
	}
}

var cases = []struct {
	name string
	run  func(t *testing.T, s protocol.Store)
}{
	{"FirstClaimAcquires", testFirstClaimAcquires},
	{"SaveThenClaimIsDone", testSaveThenClaimIsDone},
	{"AnswerIsACopy", testAnswerIsACopy},
	{"FirstAnswerWins", testFirstAnswerWins},
	{"ConflictWhileRunning", testConflictWhileRunning},
	{"ConflictWhenDone", testConflictWhenDone},
	{"WaiterGetsTheAnswer", testWaiterGetsTheAnswer},
	{"WaiterCancelled", testWaiterCancelled},
	{"WaiterTimesOut", testWaiterTimesOut},
	{"ExpiredLeaseIsTakenOver", testExpiredLeaseIsTakenOver},
	{"WaiterTakesOverExpiredLease", testWaiterTakesOverExpiredLease},
	{"SaveAfterLeaseEnded", testSaveAfterLeaseEnded},
	{"EntriesExpireAfterTTL", testEntriesExpireAfterTTL},
	{"ConcurrentClaims", testConcurrentClaims},
	{"DistinctIDsAreIndependent", testDistinctIDsAreIndependent},
}

// NewID returns a fresh random toolCallId, "call_" and 32 hex digits.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// fingerprints of two different bodies, in the core's format.
const (
	fpA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	fpB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

var answerA = []byte(`{"result":{"orderId":1001,"status":"cancelled"}}`)

// claim calls s.Claim under Deadline and fails the test on an error.
func claim(t *testing.T, s protocol.Store, id, fp string, lease time.Duration) protocol.ClaimResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Deadline)
	defer cancel()
	res, err := s.Claim(ctx, id, fp, lease)
	require.NoError(t, err, "Claim(%q, %s…) failed", id, fp[:8])
	return res
}

// save calls s.Save and fails the test on an error.
func save(t *testing.T, s protocol.Store, id, fp string, answer []byte, ttl time.Duration) {
	t.Helper()
	require.NoError(t, s.Save(context.Background(), id, fp, answer, ttl), "Save(%q) failed", id)
}

// requireStatus fails when res is not want, naming both.
func requireStatus(t *testing.T, want protocol.ClaimStatus, res protocol.ClaimResult, what string) {
	t.Helper()
	require.Equal(t, statusName(want), statusName(res.Status), "%s: want Claim to return %s", what, statusName(want))
}

func statusName(s protocol.ClaimStatus) string {
	switch s {
	case protocol.ClaimAcquired:
		return "ClaimAcquired"
	case protocol.ClaimDone:
		return "ClaimDone"
	case protocol.ClaimConflict:
		return "ClaimConflict"
	}
	return fmt.Sprintf("ClaimStatus(%d)", int(s))
}

// outcome is what a Claim running in a goroutine returned.
type outcome struct {
	res protocol.ClaimResult
	err error
}

// claimAsync runs s.Claim(ctx, ...) in a goroutine; the channel receives its
// outcome.
func claimAsync(ctx context.Context, s protocol.Store, id, fp string, lease time.Duration) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		res, err := s.Claim(ctx, id, fp, lease)
		ch <- outcome{res, err}
	}()
	return ch
}

// receive waits up to Deadline for a goroutine's outcome.
func receive(t *testing.T, ch <-chan outcome, what string) outcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(Deadline):
		t.Fatalf("%s: Claim did not return within %s", what, Deadline)
		return outcome{}
	}
}

// requireBlocked fails when ch delivers within pause.
func requireBlocked(t *testing.T, ch <-chan outcome, what string) {
	t.Helper()
	select {
	case o := <-ch:
		t.Fatalf("%s: Claim returned (%s, %v) while the first claim was still running; it must wait", what, statusName(o.res.Status), o.err)
	case <-time.After(pause):
	}
}

func testFirstClaimAcquires(t *testing.T, s protocol.Store) {
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, NewID(), fpA, Long), "a new id")
}

func testSaveThenClaimIsDone(t *testing.T, s protocol.Store) {
	id := NewID()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, id, fpA, Long), "a new id")
	save(t, s, id, fpA, answerA, Long)
	for i := range 2 {
		res := claim(t, s, id, fpA, Long)
		requireStatus(t, protocol.ClaimDone, res, fmt.Sprintf("repeat %d after Save", i+1))
		require.Equal(t, string(answerA), string(res.Answer), "the stored answer must come back byte for byte")
	}
}

func testAnswerIsACopy(t *testing.T, s protocol.Store) {
	id := NewID()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, id, fpA, Long), "a new id")
	answer := append([]byte(nil), answerA...)
	save(t, s, id, fpA, answer, Long)
	answer[0] = 'X' // the caller reuses its buffer
	res := claim(t, s, id, fpA, Long)
	require.Equal(t, string(answerA), string(res.Answer), "Save must keep its own copy of the answer")
	res.Answer[0] = 'Y' // the caller writes into what it got
	require.Equal(t, string(answerA), string(claim(t, s, id, fpA, Long).Answer), "Claim must return a copy of the stored answer")
}

func testFirstAnswerWins(t *testing.T, s protocol.Store) {
	id := NewID()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, id, fpA, Long), "a new id")
	save(t, s, id, fpA, answerA, Long)
	save(t, s, id, fpA, []byte(`{"result":"second"}`), Long) // a second runner after a lease takeover
	res := claim(t, s, id, fpA, Long)
	requireStatus(t, protocol.ClaimDone, res, "after two Saves")
	require.Equal(t, string(answerA), string(res.Answer), "a second Save must not replace the first answer: waiters already got it")
}

func testConflictWhileRunning(t *testing.T, s protocol.Store) {
	id := NewID()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, id, fpA, Long), "a new id")
	requireStatus(t, protocol.ClaimConflict, claim(t, s, id, fpB, Long), "another body while the first runs")
	save(t, s, id, fpA, answerA, Long)
	res := claim(t, s, id, fpA, Long)
	requireStatus(t, protocol.ClaimDone, res, "the first body after the conflict")
	require.Equal(t, string(answerA), string(res.Answer))
}

func testConflictWhenDone(t *testing.T, s protocol.Store) {
	id := NewID()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, id, fpA, Long), "a new id")
	save(t, s, id, fpA, answerA, Long)
	res := claim(t, s, id, fpB, Long)
	requireStatus(t, protocol.ClaimConflict, res, "another body after the answer")
	require.Empty(t, res.Answer, "a conflict must not reveal the stored answer")
}

func testWaiterGetsTheAnswer(t *testing.T, s protocol.Store) {
	id := NewID()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, id, fpA, Long), "a new id")
	ctx, cancel := context.WithTimeout(context.Background(), Deadline)
	defer cancel()
	ch := claimAsync(ctx, s, id, fpA, Long)
	requireBlocked(t, ch, "a repeat while the first runs")
	save(t, s, id, fpA, answerA, Long)
	o := receive(t, ch, "the waiter after Save")
	require.NoError(t, o.err)
	requireStatus(t, protocol.ClaimDone, o.res, "the waiter after Save")
	require.Equal(t, string(answerA), string(o.res.Answer))
}

func testWaiterCancelled(t *testing.T, s protocol.Store) {
	id := NewID()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, id, fpA, Long), "a new id")
	// A first waiter lets the store start whatever it shares between
	// waiters (a connection, a subscription) before goroutines are counted.
	ctx, cancel := context.WithCancel(context.Background())
	ch := claimAsync(ctx, s, id, fpA, Long)
	requireBlocked(t, ch, "a repeat while the first runs")
	cancel()
	o := receive(t, ch, "a waiter whose context was cancelled")
	require.ErrorIs(t, o.err, context.Canceled, "a cancelled waiter must return ctx.Err()")

	leaks := goleak.IgnoreCurrent()
	const waiters = 8
	ctx, cancel = context.WithCancel(context.Background())
	chans := make([]<-chan outcome, waiters)
	for i := range chans {
		chans[i] = claimAsync(ctx, s, id, fpA, Long)
	}
	time.Sleep(pause)
	cancel()
	for i, ch := range chans {
		o := receive(t, ch, fmt.Sprintf("cancelled waiter %d", i))
		require.ErrorIs(t, o.err, context.Canceled, "a cancelled waiter must return ctx.Err()")
	}
	goleak.VerifyNone(t, leaks)
}

func testWaiterTimesOut(t *testing.T, s protocol.Store) {
	id := NewID()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, id, fpA, Long), "a new id")
	ctx, cancel := context.WithTimeout(context.Background(), pause)
	defer cancel()
	o := receive(t, claimAsync(ctx, s, id, fpA, Long), "a waiter with a deadline")
	require.ErrorIs(t, o.err, context.DeadlineExceeded, "a waiter past its deadline must return ctx.Err()")
}

func testExpiredLeaseIsTakenOver(t *testing.T, s protocol.Store) {
	id := NewID()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, id, fpA, Short), "a new id")
	// The first claimer "crashed": it never saves. The next claimer waits
	// out the lease and takes the id over.
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, id, fpA, Long), "a repeat after the lease ended")
	save(t, s, id, fpA, answerA, Long)
	res := claim(t, s, id, fpA, Long)
	requireStatus(t, protocol.ClaimDone, res, "after the new claimer saved")
	require.Equal(t, string(answerA), string(res.Answer))
}

func testWaiterTakesOverExpiredLease(t *testing.T, s protocol.Store) {
	id := NewID()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, id, fpA, Short), "a new id")
	// The first claimer never saves. Exactly one waiter takes the claim over
	// when the lease ends; it saves, and the others get its answer.
	const waiters = 4
	ctx, cancel := context.WithTimeout(context.Background(), Deadline)
	defer cancel()
	results := make(chan outcome, waiters)
	var wg sync.WaitGroup
	for range waiters {
		wg.Go(func() {
			res, err := s.Claim(ctx, id, fpA, Long)
			results <- outcome{res, err}
		})
	}
	acquired := 0
	for i := range waiters {
		o := receive(t, results, fmt.Sprintf("waiter %d of %d", i+1, waiters))
		require.NoError(t, o.err)
		switch o.res.Status {
		case protocol.ClaimAcquired:
			acquired++
			save(t, s, id, fpA, answerA, Long)
		case protocol.ClaimDone:
			assert.Equal(t, string(answerA), string(o.res.Answer), "every waiter must get the same bytes")
		default:
			t.Errorf("waiter %d: got %s, want ClaimAcquired or ClaimDone", i+1, statusName(o.res.Status))
		}
	}
	wg.Wait()
	require.Equal(t, 1, acquired, "exactly one waiter must take an expired lease over")
}

func testSaveAfterLeaseEnded(t *testing.T, s protocol.Store) {
	id := NewID()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, id, fpA, Short), "a new id")
	time.Sleep(2 * Short) // the tool ran longer than its lease; nobody took over
	save(t, s, id, fpA, answerA, Long)
	res := claim(t, s, id, fpA, Long)
	requireStatus(t, protocol.ClaimDone, res, "a repeat after a late Save")
	require.Equal(t, string(answerA), string(res.Answer), "a Save after the lease must still keep the answer")
}

func testEntriesExpireAfterTTL(t *testing.T, s protocol.Store) {
	id := NewID()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, id, fpB, Long), "a new id")
	save(t, s, id, fpB, answerA, Short)
	// Only "eventually": whether the entry is still there at any given
	// moment depends on the machine's speed. A different fingerprint would
	// conflict while the entry lives, so Acquired proves it is gone.
	deadline := time.Now().Add(Deadline)
	for {
		res := claim(t, s, id, fpA, Long)
		if res.Status == protocol.ClaimAcquired {
			return
		}
		requireStatus(t, protocol.ClaimConflict, res, "another body while the answer lives")
		if time.Now().After(deadline) {
			t.Fatalf("the entry was still there %s after Save with a TTL of %s", Deadline, Short)
		}
		time.Sleep(Short / 4)
	}
}

func testConcurrentClaims(t *testing.T, s protocol.Store) {
	id := NewID()
	const n = 32
	ctx, cancel := context.WithTimeout(context.Background(), Deadline)
	defer cancel()
	start := make(chan struct{})
	results := make(chan outcome, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			<-start
			res, err := s.Claim(ctx, id, fpA, Long)
			results <- outcome{res, err}
		})
	}
	close(start)
	acquired, done := 0, 0
	for i := range n {
		o := receive(t, results, fmt.Sprintf("claim %d of %d", i+1, n))
		require.NoError(t, o.err)
		switch o.res.Status {
		case protocol.ClaimAcquired:
			acquired++
			save(t, s, id, fpA, answerA, Long)
		case protocol.ClaimDone:
			done++
			assert.Equal(t, string(answerA), string(o.res.Answer), "every waiter must get the same bytes")
		default:
			t.Errorf("claim %d: got %s, want ClaimAcquired or ClaimDone", i+1, statusName(o.res.Status))
		}
	}
	wg.Wait()
	require.Equal(t, 1, acquired, "exactly one of %d concurrent claims must acquire", n)
	require.Equal(t, n-1, done)
}

func testDistinctIDsAreIndependent(t *testing.T, s protocol.Store) {
	running, other := NewID(), NewID()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, running, fpA, Long), "the first id")
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, other, fpB, Long), "a second id while the first runs")
	save(t, s, other, fpB, answerA, Long)
	requireStatus(t, protocol.ClaimConflict, claim(t, s, other, fpA, Long), "the second id with another body")
	res := claim(t, s, other, fpB, Long)
	requireStatus(t, protocol.ClaimDone, res, "the second id")

	// The first id is still running: a repeat waits (here until its
	// deadline), it does not see the second id's answer.
	ctx, cancel := context.WithTimeout(context.Background(), pause)
	defer cancel()
	_, err := s.Claim(ctx, running, fpA, Long)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a repeat of the first id must still wait")
	requireStatus(t, protocol.ClaimConflict, claim(t, s, running, fpB, Long), "the first id with another body")
}
