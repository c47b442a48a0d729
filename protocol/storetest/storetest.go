// Package storetest checks that a [protocol.Store] behaves as the core
// expects: claims, answers byte for byte, running copies, conflicts, leases
// handed over and renewed, TTLs and concurrency. Run it from the tests of any Store,
// ours or your own:
//
//	func TestMyStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) protocol.Store { return mystore.New(...) })
//	}
//
// [RunHandlers] goes one level up: it serves signed calls through two
// [protocol.Handler]s and checks that a call runs its tool once, and
// [BenchmarkServe] measures what a store costs per call.
//
// A Store never waits for another caller (the core does, asking again on
// ClaimRunning), so the cases call it directly and expect prompt answers.
// They wait in real time only for leases and TTLs to end, with short ones
// (hundreds of milliseconds) and generous deadlines (seconds); they never
// assert how long anything took, so a loaded machine slows them down
// without failing them.
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
)

// Durations the cases use. Short is a lease or TTL meant to end during the
// case; Long one that must not; Deadline bounds any wait for something that
// must happen, so a broken store fails instead of hanging.
const (
	Short    = 200 * time.Millisecond
	Long     = time.Minute
	Deadline = 10 * time.Second
)

// Run runs every behaviour case as a subtest of t. newStore is called once
// per subtest and must return an empty store, or one whose keys cannot
// collide with other subtests' (each case uses fresh random keys).
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
	{"RunningForTheSameBody", testRunningForTheSameBody},
	{"ConflictWhileRunning", testConflictWhileRunning},
	{"ConflictWhenDone", testConflictWhenDone},
	{"LeaseHandedOver", testLeaseHandedOver},
	{"LeaseHandedOverOnce", testLeaseHandedOverOnce},
	{"SaveAfterLeaseEnded", testSaveAfterLeaseEnded},
	{"EntriesExpireAfterTTL", testEntriesExpireAfterTTL},
	{"ConcurrentClaims", testConcurrentClaims},
	{"DistinctKeysAreIndependent", testDistinctKeysAreIndependent},
	{"RenewKeepsTheClaim", testRenewKeepsTheClaim},
	{"RenewLeavesAnAnswer", testRenewLeavesAnAnswer},
	{"RenewLeavesAnotherBody", testRenewLeavesAnotherBody},
	{"RenewOfNothing", testRenewOfNothing},
	{"ContextDone", testContextDone},
}

// NewID returns a fresh random toolCallId, "call_" and 32 hex digits.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// newKey returns a fresh random store key in the core's format: 64 hex
// digits (the SHA-256 of a toolCallId).
func newKey() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// fingerprints of two different bodies, in the core's format.
const (
	fpA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	fpB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

var answerA = []byte(`{"result":{"orderId":1001,"status":"cancelled"}}`)

// result is what one Claim returned.
type result struct {
	status protocol.ClaimStatus
	answer []byte
	err    error
}

// claim calls s.Claim under Deadline and fails the test on an error.
func claim(t *testing.T, s protocol.Store, key, fp string, lease time.Duration) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Deadline)
	defer cancel()
	st, answer, err := s.Claim(ctx, key, fp, lease)
	mustNoError(t, err, "Claim(%s…, %s…) failed", key[:8], fp[:8])
	return result{st, answer, nil}
}

// save calls s.Save under Deadline and fails the test on an error or a
// negative evicted count.
func save(t *testing.T, s protocol.Store, key, fp string, answer []byte, ttl time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Deadline)
	defer cancel()
	evicted, err := s.Save(ctx, key, fp, answer, ttl)
	mustNoError(t, err, "Save(%s…) failed", key[:8])
	mustTrue(t, evicted >= 0, "Save(%s…) returned a negative evicted count", key[:8])
}

// renew calls s.Renew under Deadline and fails the test on an error.
func renew(t *testing.T, s protocol.Store, key, fp string, lease time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Deadline)
	defer cancel()
	mustNoError(t, s.Renew(ctx, key, fp, lease), "Renew(%s…, %s…) failed", key[:8], fp[:8])
}

// requireStatus fails when res is not want, naming both.
func requireStatus(t *testing.T, want protocol.ClaimStatus, res result, what string) {
	t.Helper()
	mustEqual(t, statusName(want), statusName(res.status), "%s: want Claim to return %s", what, statusName(want))
}

func statusName(s protocol.ClaimStatus) string {
	switch s {
	case protocol.ClaimAcquired:
		return "ClaimAcquired"
	case protocol.ClaimRunning:
		return "ClaimRunning"
	case protocol.ClaimDone:
		return "ClaimDone"
	case protocol.ClaimConflict:
		return "ClaimConflict"
	}
	return fmt.Sprintf("ClaimStatus(%d)", int(s))
}

// claimAll runs n copies of s.Claim(key, fp, lease) at once and returns
// what each returned.
func claimAll(t *testing.T, s protocol.Store, n int, key, fp string, lease time.Duration) []result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Deadline)
	defer cancel()
	results := make([]result, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			st, answer, err := s.Claim(ctx, key, fp, lease)
			results[i] = result{st, answer, err}
		})
	}
	close(start)
	wg.Wait()
	return results
}

// count returns how many results have status st; it fails on an error.
func count(t *testing.T, results []result, st protocol.ClaimStatus) int {
	t.Helper()
	n := 0
	for i, r := range results {
		mustNoError(t, r.err, "claim %d of %d", i+1, len(results))
		if r.status == st {
			n++
		}
	}
	return n
}

func testFirstClaimAcquires(t *testing.T, s protocol.Store) {
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, newKey(), fpA, Long), "a new key")
}

func testSaveThenClaimIsDone(t *testing.T, s protocol.Store) {
	key := newKey()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, key, fpA, Long), "a new key")
	save(t, s, key, fpA, answerA, Long)
	for i := range 2 {
		res := claim(t, s, key, fpA, Long)
		requireStatus(t, protocol.ClaimDone, res, fmt.Sprintf("repeat %d after Save", i+1))
		mustEqual(t, string(answerA), string(res.answer), "the stored answer must come back byte for byte")
	}
}

func testAnswerIsACopy(t *testing.T, s protocol.Store) {
	key := newKey()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, key, fpA, Long), "a new key")
	answer := append([]byte(nil), answerA...)
	save(t, s, key, fpA, answer, Long)
	answer[0] = 'X' // the caller reuses its buffer
	res := claim(t, s, key, fpA, Long)
	mustEqual(t, string(answerA), string(res.answer), "Save must keep its own copy of the answer")
	res.answer[0] = 'Y' // the caller writes into what it got
	mustEqual(t, string(answerA), string(claim(t, s, key, fpA, Long).answer), "Claim must return a copy of the stored answer")
}

func testFirstAnswerWins(t *testing.T, s protocol.Store) {
	key := newKey()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, key, fpA, Long), "a new key")
	save(t, s, key, fpA, answerA, Long)
	save(t, s, key, fpA, []byte(`{"result":"second"}`), Long) // a second runner after a lease handover
	res := claim(t, s, key, fpA, Long)
	requireStatus(t, protocol.ClaimDone, res, "after two Saves")
	mustEqual(t, string(answerA), string(res.answer), "a second Save must not replace the first answer: repeats already got it")
}

func testRunningForTheSameBody(t *testing.T, s protocol.Store) {
	key := newKey()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, key, fpA, Long), "a new key")
	// A Claim never waits: a copy of a running call is told so at once, as
	// often as it asks.
	for i := range 3 {
		requireStatus(t, protocol.ClaimRunning, claim(t, s, key, fpA, Long), fmt.Sprintf("copy %d while the first runs", i+1))
	}
	save(t, s, key, fpA, answerA, Long)
	res := claim(t, s, key, fpA, Long)
	requireStatus(t, protocol.ClaimDone, res, "a copy after Save")
	mustEqual(t, string(answerA), string(res.answer))
}

func testConflictWhileRunning(t *testing.T, s protocol.Store) {
	key := newKey()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, key, fpA, Long), "a new key")
	requireStatus(t, protocol.ClaimConflict, claim(t, s, key, fpB, Long), "another body while the first runs")
	save(t, s, key, fpB, []byte(`{"result":"other body"}`), Long) // must not replace the first body's claim
	requireStatus(t, protocol.ClaimRunning, claim(t, s, key, fpA, Long), "the first body after another body's Save")
	save(t, s, key, fpA, answerA, Long)
	res := claim(t, s, key, fpA, Long)
	requireStatus(t, protocol.ClaimDone, res, "the first body after its Save")
	mustEqual(t, string(answerA), string(res.answer))
}

func testConflictWhenDone(t *testing.T, s protocol.Store) {
	key := newKey()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, key, fpA, Long), "a new key")
	save(t, s, key, fpA, answerA, Long)
	res := claim(t, s, key, fpB, Long)
	requireStatus(t, protocol.ClaimConflict, res, "another body after the answer")
	mustEqual(t, 0, len(res.answer), "a conflict must not reveal the stored answer")
}

// waitPastLease waits until a lease of Short taken now has surely ended.
func waitPastLease() { time.Sleep(2 * Short) }

func testLeaseHandedOver(t *testing.T, s protocol.Store) {
	key := newKey()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, key, fpA, Short), "a new key")
	// The first claimer "crashed": it never saves. Once its lease ends the
	// next copy gets the claim.
	waitPastLease()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, key, fpA, Long), "a copy after the lease ended")
	requireStatus(t, protocol.ClaimRunning, claim(t, s, key, fpA, Long), "a copy after the handover")
	save(t, s, key, fpA, answerA, Long)
	res := claim(t, s, key, fpA, Long)
	requireStatus(t, protocol.ClaimDone, res, "after the new claimer saved")
	mustEqual(t, string(answerA), string(res.answer))
}

func testLeaseHandedOverOnce(t *testing.T, s protocol.Store) {
	key := newKey()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, key, fpA, Short), "a new key")
	waitPastLease()
	const n = 16
	results := claimAll(t, s, n, key, fpA, Long)
	mustEqual(t, 1, count(t, results, protocol.ClaimAcquired), "exactly one of %d copies must get an ended lease", n)
	mustEqual(t, n-1, count(t, results, protocol.ClaimRunning), "the others must be told the call runs")
}

func testSaveAfterLeaseEnded(t *testing.T, s protocol.Store) {
	key := newKey()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, key, fpA, Short), "a new key")
	waitPastLease() // the tool ran longer than its lease; nobody took over
	save(t, s, key, fpA, answerA, Long)
	res := claim(t, s, key, fpA, Long)
	requireStatus(t, protocol.ClaimDone, res, "a copy after a late Save")
	mustEqual(t, string(answerA), string(res.answer), "a Save after the lease must still keep the answer")
}

func testEntriesExpireAfterTTL(t *testing.T, s protocol.Store) {
	key := newKey()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, key, fpB, Long), "a new key")
	save(t, s, key, fpB, answerA, Short)
	// Only "eventually": whether the entry is still there at any given
	// moment depends on the machine's speed. A different fingerprint would
	// conflict while the entry lives, so Acquired proves it is gone.
	deadline := time.Now().Add(Deadline)
	for {
		res := claim(t, s, key, fpA, Long)
		if res.status == protocol.ClaimAcquired {
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
	key := newKey()
	const n = 32
	results := claimAll(t, s, n, key, fpA, Long)
	mustEqual(t, 1, count(t, results, protocol.ClaimAcquired), "exactly one of %d concurrent claims must acquire", n)
	mustEqual(t, n-1, count(t, results, protocol.ClaimRunning), "the others must be told the call runs")
	save(t, s, key, fpA, answerA, Long)
	results = claimAll(t, s, n, key, fpA, Long)
	mustEqual(t, n, count(t, results, protocol.ClaimDone), "every copy after Save must get the answer")
	for i, r := range results {
		expectEqual(t, string(answerA), string(r.answer), "copy %d must get the same bytes", i+1)
	}
}

func testDistinctKeysAreIndependent(t *testing.T, s protocol.Store) {
	running, other := newKey(), newKey()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, running, fpA, Long), "the first key")
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, other, fpB, Long), "a second key while the first runs")
	save(t, s, other, fpB, answerA, Long)
	requireStatus(t, protocol.ClaimConflict, claim(t, s, other, fpA, Long), "the second key with another body")
	requireStatus(t, protocol.ClaimDone, claim(t, s, other, fpB, Long), "the second key")
	requireStatus(t, protocol.ClaimRunning, claim(t, s, running, fpA, Long), "the first key still runs")
	requireStatus(t, protocol.ClaimConflict, claim(t, s, running, fpB, Long), "the first key with another body")
}

// claimThenRenew claims a fresh key for fpA with a lease of Short and
// renews it for fp with lease at once, and returns the key. When the two
// calls took so long that the claim's lease may have ended before the
// renewal (a machine under heavy load), it tries again with a new key, a
// few times, so that the cases below test the store, not the machine.
func claimThenRenew(t *testing.T, s protocol.Store, fp string, lease time.Duration) string {
	t.Helper()
	for range 5 {
		key := newKey()
		start := time.Now()
		requireStatus(t, protocol.ClaimAcquired, claim(t, s, key, fpA, Short), "a new key")
		renew(t, s, key, fp, lease)
		if time.Since(start) < Short/2 {
			return key
		}
	}
	t.Fatalf("a Claim and a Renew took %s or more five times in a row", Short/2)
	return ""
}

func testRenewKeepsTheClaim(t *testing.T, s protocol.Store) {
	key := claimThenRenew(t, s, fpA, Long)
	waitPastLease() // the claim's first lease has ended; the renewed one has not
	requireStatus(t, protocol.ClaimRunning, claim(t, s, key, fpA, Long), "a copy after the first lease, the claim renewed")
	requireStatus(t, protocol.ClaimConflict, claim(t, s, key, fpB, Long), "another body after the first lease, the claim renewed")
	renew(t, s, key, fpA, Long) // renewed again: still one claim
	save(t, s, key, fpA, answerA, Long)
	res := claim(t, s, key, fpA, Long)
	requireStatus(t, protocol.ClaimDone, res, "after the renewed claim's Save")
	mustEqual(t, string(answerA), string(res.answer), "the answer saved after renewals must come back byte for byte")
}

func testRenewLeavesAnAnswer(t *testing.T, s protocol.Store) {
	key := newKey()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, key, fpA, Long), "a new key")
	save(t, s, key, fpA, answerA, Short)
	// A renewal that reaches the store after the Save (a renewal and a
	// Save of one call may cross) must leave the answer as it is: the same
	// bytes, and no longer than its TTL.
	renew(t, s, key, fpA, Long)
	res := claim(t, s, key, fpA, Long)
	requireStatus(t, protocol.ClaimDone, res, "a copy after Save and Renew")
	mustEqual(t, string(answerA), string(res.answer), "Renew must not change a saved answer")
	deadline := time.Now().Add(Deadline)
	for {
		res := claim(t, s, key, fpB, Long)
		if res.status == protocol.ClaimAcquired {
			return
		}
		requireStatus(t, protocol.ClaimConflict, res, "another body while the answer lives")
		if time.Now().After(deadline) {
			t.Fatalf("the answer was still there %s after a Save with a TTL of %s: Renew must not extend an answer's TTL", Deadline, Short)
		}
		time.Sleep(Short / 4)
	}
}

func testRenewLeavesAnotherBody(t *testing.T, s protocol.Store) {
	key := claimThenRenew(t, s, fpB, Long) // fpA's claim, renewed for fpB
	waitPastLease()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, key, fpA, Long), "a copy after the lease: a Renew for another body must not extend the claim")
	renew(t, s, key, fpB, Long)
	requireStatus(t, protocol.ClaimRunning, claim(t, s, key, fpA, Long), "the new claim after another body's Renew")
	save(t, s, key, fpA, answerA, Long)
	renew(t, s, key, fpB, Long)
	res := claim(t, s, key, fpA, Long)
	requireStatus(t, protocol.ClaimDone, res, "the answer after another body's Renew")
	mustEqual(t, string(answerA), string(res.answer))
}

func testRenewOfNothing(t *testing.T, s protocol.Store) {
	// Nothing to extend is no error: a key never claimed, and a claim whose
	// lease ended (a store that checks a condition must not report that the
	// condition failed).
	renew(t, s, newKey(), fpA, Long)
	key := newKey()
	requireStatus(t, protocol.ClaimAcquired, claim(t, s, key, fpA, Short), "a new key")
	waitPastLease()
	renew(t, s, key, fpA, Long)
	renew(t, s, key, fpB, Long)
}

func testContextDone(t *testing.T, s protocol.Store) {
	// A store must return promptly when ctx is done; whether it still did
	// the work or gave up is its choice. A store that hangs fails here
	// (after Deadline) instead of holding every request of a server.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	key := newKey()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _, _ = s.Claim(ctx, key, fpA, Long)
		_ = s.Renew(ctx, key, fpA, Long)
		_, _ = s.Save(ctx, key, fpA, answerA, Long)
	}()
	select {
	case <-done:
	case <-time.After(Deadline):
		t.Fatalf("Claim, Renew and Save with a cancelled context did not return within %s", Deadline)
	}
}
