package memstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clock is a settable clock for a testStore.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// testStore is a Store whose Claim and Save pass the time of clock (the
// system's when clock is nil), as the core passes its own readings.
type testStore struct {
	*Store
	clock *clock
}

func newTest(opts Options) testStore { return testStore{Store: New(opts)} }

func (s testStore) now() time.Time {
	if s.clock == nil {
		return time.Now()
	}
	return s.clock.Now()
}

// Claim claims as Store.Claim does and keeps no Ticket: the tests' Saves
// look their keys up, except those of TestSaveWithTicket.
func (s testStore) Claim(k, fingerprint Digest, lease time.Duration) (Status, []byte, error) {
	st, answer, _, err := s.Store.Claim(k, fingerprint, lease, s.now())
	return st, answer, err
}

func (s testStore) Save(k, fingerprint Digest, answer []byte, ttl time.Duration) (int, error) {
	return s.Store.Save(k, fingerprint, Ticket{}, answer, ttl, s.now())
}

// newClocked returns a store on a settable clock (see clocked), with as
// many shards as its budget allows.
func newClocked(maxBytes int64) (testStore, *clock) {
	return clocked(New(Options{MaxBytes: maxBytes, Shards: maxShards}))
}

// clocked returns s on a settable clock, which starts at s's base.
func clocked(s *Store) (testStore, *clock) {
	c := &clock{now: s.base}
	return testStore{s, c}, c
}

// key returns the i-th test key.
func key(i int) Digest { return Digest{uint64(i), uint64(i) * 0x9e3779b97f4a7c15} }

var (
	fp    = Digest{1, 1}
	other = Digest{2, 2}
)

// claim claims k and returns the status; it fails on an error.
func claim(t *testing.T, s testStore, k, fingerprint Digest, lease time.Duration) Status {
	t.Helper()
	st, _, err := s.Claim(k, fingerprint, lease)
	require.NoError(t, err)
	return st
}

// save saves a copy of answer for k and returns the evicted count. Save
// keeps the slice it is given, so each gets its own, allocated as the core
// allocates an answer: its capacity is its whole allocation.
func save(t *testing.T, s testStore, k Digest, answer []byte, ttl time.Duration) int {
	t.Helper()
	n, err := s.Save(k, fp, bytes.Clone(answer), ttl)
	require.NoError(t, err)
	return n
}

func TestClaimOutcomes(t *testing.T) {
	s, _ := newClocked(0)
	require.Equal(t, Acquired, claim(t, s, key(1), fp, time.Minute))
	require.Equal(t, Running, claim(t, s, key(1), fp, time.Minute), "same fingerprint while it runs")
	require.Equal(t, Conflict, claim(t, s, key(1), other, time.Minute), "another fingerprint while it runs")
	require.Zero(t, save(t, s, key(1), []byte("answer"), time.Hour))
	st, answer, err := s.Claim(key(1), fp, time.Minute)
	require.NoError(t, err)
	require.Equal(t, Done, st)
	require.Equal(t, "answer", string(answer))
	answer[0] = 'X'
	_, again, _ := s.Claim(key(1), fp, time.Minute)
	require.Equal(t, "answer", string(again), "Claim returns a copy")
	st, answer, _ = s.Claim(key(1), other, time.Minute)
	require.Equal(t, Conflict, st)
	require.Nil(t, answer, "a conflict does not reveal the answer")
}

func TestLeaseHandover(t *testing.T) {
	s, c := newClocked(0)
	require.Equal(t, Acquired, claim(t, s, key(1), fp, time.Minute))
	c.Add(time.Minute - time.Nanosecond)
	require.Equal(t, Running, claim(t, s, key(1), fp, time.Minute), "just before the lease ends")
	c.Add(time.Nanosecond)
	require.Equal(t, Acquired, claim(t, s, key(1), fp, time.Minute), "when the lease ends, the claim is handed over")
	require.Equal(t, Running, claim(t, s, key(1), fp, time.Minute), "handed over once")
	require.Equal(t, 1, s.Len())
}

// TestRenew: a renewal moves a running claim's end to the lease from now,
// and leaves an answer, another body's claim, an ended lease and a missing
// key as they are.
func TestRenew(t *testing.T) {
	s, c := newClocked(0)
	renew := func(k, fingerprint Digest, lease time.Duration) bool {
		t.Helper()
		ok, err := s.Renew(k, fingerprint, lease, c.Now())
		require.NoError(t, err)
		return ok
	}
	require.Equal(t, Acquired, claim(t, s, key(1), fp, time.Second))
	c.Add(900 * time.Millisecond)
	require.True(t, renew(key(1), fp, time.Second), "a running claim is renewed")
	c.Add(time.Second - time.Nanosecond)
	require.Equal(t, Running, claim(t, s, key(1), fp, time.Minute), "just before the renewed lease ends, a second after the renewal")
	c.Add(time.Nanosecond)
	require.Equal(t, Acquired, claim(t, s, key(1), fp, time.Minute), "when the renewed lease ends")

	require.False(t, renew(key(1), other, time.Hour), "another body's renewal")
	c.Add(time.Minute)
	require.Equal(t, Acquired, claim(t, s, key(1), fp, time.Minute), "another body's renewal did not extend the claim")

	require.Zero(t, save(t, s, key(1), []byte("a"), time.Second))
	require.False(t, renew(key(1), fp, time.Hour), "an answer is not renewed")
	c.Add(time.Second)
	require.Equal(t, Acquired, claim(t, s, key(1), fp, time.Minute), "the answer's TTL was not extended")

	c.Add(time.Minute)
	require.False(t, renew(key(1), fp, time.Hour), "a claim whose lease ended is not renewed")
	require.False(t, renew(key(2), fp, time.Hour), "a key never claimed")
	require.Equal(t, Acquired, claim(t, s, key(2), fp, time.Minute), "a renewal of nothing leaves nothing")

	_, err := s.Renew(key(2), fp, 0, c.Now())
	require.ErrorContains(t, err, "lease must be positive")
}

// TestRenewedClaimMovesToTheBack: a renewed claim goes to the back of its
// shard's claims, so the sweep, which stops at the first claim whose lease
// has not ended, still drops the claims that ended behind it, and the
// budget drops the renewed claim last.
func TestRenewedClaimMovesToTheBack(t *testing.T) {
	s, c := newClocked(1 << 20) // one shard
	claim(t, s, key(1), fp, time.Minute)
	claim(t, s, key(2), fp, time.Minute)
	c.Add(30 * time.Second)
	_, err := s.Renew(key(1), fp, time.Minute, c.Now())
	require.NoError(t, err)
	c.Add(30 * time.Second) // key 2's lease ends; key 1's renewed one has 30 s left
	claim(t, s, key(3), fp, time.Minute)
	require.Equal(t, 2, s.Len(), "key 2's ended claim is swept though key 1 was claimed before it")
	require.Equal(t, Running, claim(t, s, key(1), fp, time.Minute))
	c.Add(35 * time.Second) // key 1's renewed lease has ended, key 3's has not
	claim(t, s, key(4), fp, time.Minute)
	require.Equal(t, 2, s.Len(), "the renewed claim is swept once its lease ends")
}

func TestSaveRules(t *testing.T) {
	s, c := newClocked(0)
	// The first answer wins.
	claim(t, s, key(1), fp, time.Minute)
	save(t, s, key(1), []byte("first"), time.Hour)
	save(t, s, key(1), []byte("second"), time.Hour)
	_, answer, _ := s.Claim(key(1), fp, time.Minute)
	require.Equal(t, "first", string(answer))

	// Another body's live claim stays.
	claim(t, s, key(2), other, time.Minute)
	save(t, s, key(2), []byte("mine"), time.Hour)
	require.Equal(t, Conflict, claim(t, s, key(2), fp, time.Minute))
	require.Equal(t, Running, claim(t, s, key(2), other, time.Minute))

	// A save after the lease ended keeps the answer.
	claim(t, s, key(3), fp, time.Minute)
	c.Add(2 * time.Minute)
	save(t, s, key(3), []byte("late"), time.Hour)
	st, answer, _ := s.Claim(key(3), fp, time.Minute)
	require.Equal(t, Done, st)
	require.Equal(t, "late", string(answer))
}

// TestLookupEndsALeaseAtItsExactEnd: a claim that the sweep does not reach
// (a claim with a longer lease is ahead of it in its shard) ends when its
// lease ends, to the nanosecond, where the lookup finds it.
func TestLookupEndsALeaseAtItsExactEnd(t *testing.T) {
	s, c := newClocked(1 << 20) // one shard
	claim(t, s, key(1), fp, time.Hour)
	claim(t, s, key(2), fp, time.Minute)
	c.Add(time.Minute - time.Nanosecond)
	require.Equal(t, Running, claim(t, s, key(2), fp, time.Minute), "just before the lease ends")
	c.Add(time.Nanosecond)
	require.Equal(t, Acquired, claim(t, s, key(2), fp, time.Minute), "when the lease ends, though the sweep stopped at key 1")
	require.Equal(t, 2, s.Len())
	require.Equal(t, int64(2*EntryOverhead), s.Bytes(), "the ended claim is dropped, not only replaced in the index")
}

func TestTTLBoundary(t *testing.T) {
	s, c := newClocked(0)
	claim(t, s, key(1), fp, time.Minute)
	save(t, s, key(1), []byte("a"), 10*time.Minute)
	c.Add(10*time.Minute - time.Nanosecond)
	require.Equal(t, Done, claim(t, s, key(1), fp, time.Minute), "just before the TTL ends")
	c.Add(time.Nanosecond)
	require.Equal(t, Acquired, claim(t, s, key(1), fp, time.Minute), "when the TTL ends")
}

// TestLongestLeaseAndTTL uses math.MaxInt64 (no end) as the lease and the
// TTL once the store's clock has moved on: the claim must stay held and the
// answer kept, not wrap round to the past.
func TestLongestLeaseAndTTL(t *testing.T) {
	forever := time.Duration(math.MaxInt64)
	s, c := newClocked(0)
	c.Add(time.Hour)
	require.Equal(t, Acquired, claim(t, s, key(1), fp, forever))
	c.Add(time.Hour)
	require.Equal(t, Running, claim(t, s, key(1), fp, time.Minute), "the claim is still held")
	require.Zero(t, save(t, s, key(1), []byte("a"), forever))
	c.Add(24 * time.Hour)
	require.Equal(t, Done, claim(t, s, key(1), fp, time.Minute), "the answer is still kept")
	require.Equal(t, Conflict, claim(t, s, key(1), other, time.Minute))
}

// TestSaveWithTicket: a Save given the Ticket of its claim keeps the
// answer as one that looks the key up does, and a stale Ticket (its claim
// taken over by another body after its lease ended) changes nothing.
func TestSaveWithTicket(t *testing.T) {
	s, c := newClocked(0)
	st, _, ticket, err := s.Store.Claim(key(1), fp, time.Minute, c.Now())
	require.NoError(t, err)
	require.Equal(t, Acquired, st)
	one := []byte("one")
	_, err = s.Store.Save(key(1), fp, ticket, one, time.Hour, c.Now())
	require.NoError(t, err)
	require.Equal(t, Done, claim(t, s, key(1), fp, time.Minute), "the answer is kept")
	require.Equal(t, 1, s.Len(), "the claim became the answer")

	// The lease ends and another body takes the key over; the first
	// claim's late Save must leave the new claim alone.
	_, _, stale, err := s.Store.Claim(key(2), fp, time.Minute, c.Now())
	require.NoError(t, err)
	c.Add(2 * time.Minute)
	require.Equal(t, Acquired, claim(t, s, key(2), other, time.Minute), "an ended lease is handed over")
	_, err = s.Store.Save(key(2), fp, stale, []byte("late"), time.Hour, c.Now())
	require.NoError(t, err)
	require.Equal(t, Running, claim(t, s, key(2), other, time.Minute), "the other body's claim stays")
	require.Equal(t, Conflict, claim(t, s, key(2), fp, time.Minute))
	require.Equal(t, 2, s.Len())
	require.Equal(t, int64(2*EntryOverhead+cap(one)), s.Bytes(), "an answer and a claim, each charged once")

	// A claim whose lease ended but which no sweep reached (a claim with a
	// longer lease is ahead of it) becomes the answer through its Ticket.
	claim(t, s, key(3), fp, time.Hour)
	_, _, ended, err := s.Store.Claim(key(4), fp, time.Minute, c.Now())
	require.NoError(t, err)
	c.Add(2 * time.Minute)
	four := []byte("four")
	_, err = s.Store.Save(key(4), fp, ended, four, time.Hour, c.Now())
	require.NoError(t, err)
	require.Equal(t, Done, claim(t, s, key(4), fp, time.Minute))
	require.Equal(t, 3, s.Len(), "key 1's answer, key 3's claim and key 4's answer (key 2's claim expired)")
	require.Equal(t, int64(3*EntryOverhead+cap(one)+cap(four)), s.Bytes())

	// A Ticket given with another key is not used for it.
	_, _, five, err := s.Store.Claim(key(5), fp, time.Hour, c.Now())
	require.NoError(t, err)
	_, err = s.Store.Save(key(6), fp, five, []byte("six"), time.Hour, c.Now())
	require.NoError(t, err)
	require.Equal(t, Running, claim(t, s, key(5), fp, time.Minute), "key 5's claim is untouched")
	require.Equal(t, Done, claim(t, s, key(6), fp, time.Minute), "key 6's answer is kept as without a Ticket")
}

func TestExpiredEntriesAreDropped(t *testing.T) {
	s, c := newClocked(0)
	for i := range 100 {
		claim(t, s, key(i), fp, time.Minute)
		if i%2 == 0 {
			save(t, s, key(i), []byte("a"), 10*time.Minute)
		}
	}
	require.Equal(t, 100, s.Len())
	c.Add(time.Minute) // the 50 unanswered claims' leases end
	claim(t, s, key(1000), fp, time.Minute)
	require.Equal(t, 51, s.Len(), "the expired claims are dropped on the next Claim")
	c.Add(10 * time.Minute) // every answer's TTL ends, and key 1000's lease
	require.Zero(t, save(t, s, key(1001), []byte("late"), time.Minute), "expired answers are not evicted early")
	require.Equal(t, 1, s.Len(), "everything expired is dropped on the next Save")
	require.Equal(t, int64(8+EntryOverhead), s.Bytes(), "the bytes of dropped entries are given back")
}

func TestBudgetDropsOldestAnswersFirst(t *testing.T) {
	const budget = MinMaxBytes
	s, _ := newClocked(budget)
	answer := make([]byte, 4096) // each entry is charged 4096+overhead
	require.Equal(t, Acquired, claim(t, s, key(0), fp, time.Minute), "a claim older than every answer")
	evicted := 0
	for i := 1; i <= 40; i++ {
		claim(t, s, key(i), fp, time.Minute)
		evicted += save(t, s, key(i), answer, time.Hour)
		require.LessOrEqual(t, s.Bytes(), int64(budget), "after %d answers", i)
	}
	perEntry := int64(4096 + EntryOverhead)
	fit := int((budget - EntryOverhead) / perEntry)
	require.Equal(t, 40-fit, evicted, "each answer dropped before its TTL is counted")
	require.Equal(t, Running, claim(t, s, key(0), fp, time.Minute), "the running claim is kept while answers can go")
	require.Equal(t, Done, claim(t, s, key(40), fp, time.Minute), "the newest answer is kept")
	require.Equal(t, Done, claim(t, s, key(40-fit+1), fp, time.Minute), "the oldest answer that fits is kept")
	require.Equal(t, Acquired, claim(t, s, key(40-fit), fp, time.Minute), "older answers were dropped: the id runs again")
}

func TestBudgetDropsOldestClaimsOnlyWhenNoAnswerIsLeft(t *testing.T) {
	s, _ := newClocked(MinMaxBytes)
	perClaim := int64(EntryOverhead)
	n := int(MinMaxBytes / perClaim)
	for i := range n {
		require.Equal(t, Acquired, claim(t, s, key(i), fp, time.Minute))
	}
	require.Equal(t, n, s.Len())
	require.Equal(t, Acquired, claim(t, s, key(n), fp, time.Minute))
	require.Equal(t, n, s.Len())
	require.Equal(t, Acquired, claim(t, s, key(0), fp, time.Minute), "the oldest claim was dropped")
	require.Equal(t, Running, claim(t, s, key(2), fp, time.Minute), "newer claims are kept")
	// Claims dropped no answer: nothing to report.
	require.Zero(t, save(t, s, key(2), []byte("a"), time.Hour))
}

func TestEvictionsByClaimAreReportedByTheNextSave(t *testing.T) {
	s, _ := newClocked(MinMaxBytes)
	answer := make([]byte, 20_000) // kept in a 20,480-byte allocation
	for _, k := range []Digest{key(1), key(2)} {
		claim(t, s, k, fp, time.Minute)
		require.Zero(t, save(t, s, k, answer, time.Hour))
	}
	// Claims fill the rest, then push the oldest answer out.
	perClaim := int64(EntryOverhead)
	room := (MinMaxBytes - s.Bytes()) / perClaim
	for i := range int(room) + 1 {
		require.Equal(t, Acquired, claim(t, s, key(100+i), fp, time.Minute))
	}
	require.Equal(t, Acquired, claim(t, s, key(1), fp, time.Minute), "a claim dropped the oldest answer")
	require.Equal(t, Done, claim(t, s, key(2), fp, time.Minute), "and only that one")
	// An empty answer needs no more room than its claim: this Save drops
	// nothing itself, and reports what the Claim dropped.
	require.Equal(t, 1, save(t, s, key(100), nil, time.Hour), "the next Save reports it")
	require.Zero(t, save(t, s, key(101), nil, time.Hour), "once")
}

func TestAnswerLargerThanTheBudget(t *testing.T) {
	s, _ := newClocked(MinMaxBytes)
	claim(t, s, key(1), fp, time.Minute)
	save(t, s, key(1), []byte("small"), time.Hour)
	claim(t, s, key(2), fp, time.Minute)
	require.Equal(t, 1, save(t, s, key(2), make([]byte, MinMaxBytes), time.Hour), "an answer that cannot be kept is reported")
	require.Equal(t, Acquired, claim(t, s, key(2), fp, time.Minute), "its claim is gone: a repeat runs again instead of waiting")
	require.Equal(t, Done, claim(t, s, key(1), fp, time.Minute), "other answers are not dropped for it")
}

func TestBadArguments(t *testing.T) {
	s := newTest(Options{})
	_, _, err := s.Claim(key(1), fp, 0)
	require.ErrorContains(t, err, "lease must be positive")
	_, err = s.Save(key(1), fp, []byte("a"), -time.Second)
	require.ErrorContains(t, err, "TTL must be positive")
	_, err = s.Save(key(1), fp, []byte("a"), 0)
	require.ErrorContains(t, err, "TTL must be positive", "a zero TTL too")
	require.Zero(t, s.Len())
	require.Zero(t, s.Bytes())
	st, _, _, err := s.Store.Claim(key(1), fp, -1, time.Now())
	require.Error(t, err)
	assert.Zero(t, st, "an error comes with no status")
	n, err := s.Save(key(1), fp, []byte("a"), 0)
	require.Error(t, err)
	assert.Zero(t, n, "nor an eviction count")
	// The shortest lease and TTL there are, one nanosecond, are positive.
	_, _, err = s.Claim(key(2), fp, time.Nanosecond)
	require.NoError(t, err)
	_, err = s.Save(key(3), fp, []byte("a"), time.Nanosecond)
	require.NoError(t, err)
	_, err = s.Renew(key(2), fp, time.Nanosecond, time.Now())
	require.NoError(t, err)
	require.Equal(t, int64(DefaultMaxBytes), s.MaxBytes())
	require.Equal(t, int64(64<<10), newTest(Options{MaxBytes: 1}).MaxBytes(), "a tiny budget is raised to 64 KiB")
}

// built sums what the shards' indexes were built for.
func built(s testStore) int {
	n := 0
	for i := range s.shards {
		n += s.shards[i].built
	}
	return n
}

func TestIndexIsRebuiltWhenItEmpties(t *testing.T) {
	s, c := newClocked(1 << 20) // one shard
	require.Len(t, s.shards, 1)
	for i := range 4 * minIndexRebuild {
		claim(t, s, key(i), fp, time.Minute)
	}
	require.Equal(t, 4*minIndexRebuild, built(s))
	c.Add(time.Minute)
	claim(t, s, key(-1), fp, time.Minute)
	require.Equal(t, 1, s.Len())
	require.Less(t, built(s), minIndexRebuild, "the index was rebuilt for the few live entries")
}

// heapNoise is what the heap may grow by in a test besides the store: the
// testing package's and the runtime's own allocations.
const heapNoise = 32 << 10

// heapAlloc returns the live heap after a full collection.
func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestEntryOverheadCoversTheHeap measures what entries really cost and
// checks that the budget's charge (key + fingerprint + cap(answer) +
// EntryOverhead) covers it: at several sizes (a Go map's load varies as it
// grows), and again when just under half of them have expired, the worst
// case for the index (it is sized for twice the live entries).
func TestEntryOverheadCoversTheHeap(t *testing.T) {
	for _, n := range []int{1_000, 3_000, 10_000, 30_000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			s, c := newClocked(1 << 40)
			answer := []byte(`{"result":1}`)
			before := heapAlloc()
			for i := range n {
				// A fresh key and fingerprint, as the core makes per call.
				// keys spread evenly over the shards, so that in each
				// shard just under half expire
				k, f := key(i), Digest{uint64(i), 1}
				ttl := 2 * time.Minute
				if i < n/2-1 {
					ttl = time.Minute
				}
				if _, _, err := s.Claim(k, f, time.Minute); err != nil {
					t.Fatal(err)
				}
				// a fresh answer too: Save keeps the slice it is given
				if _, err := s.Save(k, f, bytes.Clone(answer), ttl); err != nil {
					t.Fatal(err)
				}
			}
			check := func(what string) {
				t.Helper()
				grown := int64(heapAlloc()) - int64(before)
				live := int64(s.Len())
				data := live * 16 // the answer in its 16-byte size class
				t.Logf("%s, %d entries: heap +%d bytes, %d per entry beyond the data; charged %d",
					what, live, grown, (grown-data)/live, int64(EntryOverhead))
				assert.LessOrEqual(t, grown, s.Bytes()+heapNoise, "%s: the heap grew more than the budget charged", what)
			}
			check("full")
			c.Add(time.Minute)
			_, _ = s.Save(key(0), fp, nil, time.Minute) // sweeps the expired ones
			require.Greater(t, built(s), s.Len(), "the index was not rebuilt: this is the worst case")
			check("just over half expired")
			runtime.KeepAlive(s)
		})
	}
}

// TestSweepReachesALaterFront: a claim that expires before the claim
// ahead of it in its list is dropped by the first sweep after the one
// ahead has gone (here, answered): the shard's sweep reads each list from
// its front, whichever entry is at the front now.
func TestSweepReachesALaterFront(t *testing.T) {
	s, c := newClocked(MinMaxBytes) // one shard
	claim(t, s, key(1), fp, time.Hour)
	claim(t, s, key(2), fp, time.Second)
	save(t, s, key(1), nil, time.Hour) // key 2's claim is now the oldest
	c.Add(2 * time.Second)
	claim(t, s, key(3), fp, time.Minute) // sweeps
	require.Equal(t, 2, s.Len(), "key 2's claim expired and must be swept: keys 1 and 3 are left")
}

func TestIndexGivesMemoryBack(t *testing.T) {
	const n = 20_000
	s, c := newClocked(1 << 40)
	before := heapAlloc()
	for i := range n {
		claim(t, s, key(i), fp, time.Minute)
		save(t, s, key(i), nil, time.Minute)
	}
	full := int64(heapAlloc()) - int64(before)
	c.Add(2 * time.Minute)
	claim(t, s, key(-1), fp, time.Minute) // sweeps every expired answer
	left := int64(heapAlloc()) - int64(before)
	t.Logf("heap: +%d bytes with %d entries, +%d after they expired", full, n, left)
	require.Less(t, left, int64(len(s.shards)*minIndexRebuild*EntryOverhead), "expired entries and their index slots must be freed")
	runtime.KeepAlive(s)
}

// BenchmarkClaimSave is the store's own cost per call: one claim and one
// save of a new id, with the digests of the id and of a 1 KiB body. With
// store=growing every id is kept (the store grows to what b.N calls
// leave); with store=1024 a new store takes over every 1,024 calls
// (untimed), as in protocol's BenchmarkTypedCall. Each call hands Save an
// answer of its own, as the core does (it encodes one per call), so its
// allocation is counted here too.
func BenchmarkClaimSave(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 1<<10)
	answer := []byte(`{"result":{"orderId":"A-1001","status":"shipped"}}`)
	ids := make([]string, 1<<20)
	for i := range ids {
		ids[i] = "call_" + strconv.Itoa(i)
	}
	for _, round := range []struct {
		name  string
		calls int
	}{{"growing", len(ids)}, {"1024", 1024}} {
		b.Run("store="+round.name, func(b *testing.B) {
			s := New(Options{})
			start := time.Now()
			now := func() time.Time { return start.Add(time.Since(start)) } // as the core reads it: the monotonic clock only
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if i == round.calls {
					b.StopTimer()
					s, i = New(Options{}), 0
					b.StartTimer()
				}
				k, fp := s.SumString(ids[i]), s.Fingerprint(body)
				_, _, ticket, err := s.Claim(k, fp, time.Minute, now())
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.Save(k, fp, ticket, bytes.Clone(answer), 10*time.Minute, now()); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

func TestShards(t *testing.T) {
	for _, c := range []struct {
		budget       int64
		want, shards int
	}{
		{MinMaxBytes, 16, 1}, {8<<20 - 1, 16, 1}, {8 << 20, 16, 2}, {DefaultMaxBytes, 16, 16}, {1 << 30, 64, 16},
		{DefaultMaxBytes, 1, 1}, {DefaultMaxBytes, 2, 2}, {DefaultMaxBytes, 3, 4}, {DefaultMaxBytes, 5, 8}, {16 << 20, 8, 4},
	} {
		s := newTest(Options{MaxBytes: c.budget, Shards: c.want})
		require.Equal(t, c.shards, len(s.shards), "budget %d, %d shards wanted", c.budget, c.want)
		var sum int64
		for i := range s.shards {
			sum += s.shards[i].max
		}
		require.LessOrEqual(t, sum, c.budget, "the shards' budgets add up to at most the whole")
	}
}

// TestShardsFollowTheProcessors: by default a store has a shard per
// processor.
func TestShardsFollowTheProcessors(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for procs, shards := range map[int]int{1: 1, 2: 2, 4: 4, 6: 8, 32: 16} {
		runtime.GOMAXPROCS(procs)
		require.Equal(t, shards, len(newTest(Options{}).shards), "GOMAXPROCS %d", procs)
	}
}

func TestShardsKeepTheBudget(t *testing.T) {
	s, _ := newClocked(DefaultMaxBytes)
	answer := make([]byte, 64<<10)
	evicted := 0
	for i := range 2000 { // 128 MiB of answers through 64 MiB
		k := s.SumString(fmt.Sprint("call_", i))
		claim(t, s, k, fp, time.Minute)
		evicted += save(t, s, k, answer, time.Hour)
		require.LessOrEqual(t, s.Bytes(), int64(DefaultMaxBytes), "after %d answers", i)
	}
	require.Equal(t, 2000-s.Len(), evicted, "every answer dropped early is counted")
	require.Greater(t, s.Bytes(), int64(DefaultMaxBytes)*9/10, "keys spread over the shards: the budget is nearly all used")
}

func TestAnswerLargerThanAShard(t *testing.T) {
	s, _ := newClocked(DefaultMaxBytes)
	k := s.SumString("call_big")
	claim(t, s, k, fp, time.Minute)
	require.Equal(t, 1, save(t, s, k, make([]byte, DefaultMaxBytes/16), time.Hour), "an answer larger than its shard is reported")
	require.Equal(t, Acquired, claim(t, s, k, fp, time.Minute), "and not kept")
	require.Equal(t, int64(EntryOverhead), s.Bytes())
}

func TestExpiredEntriesInEveryShardAreDropped(t *testing.T) {
	s, c := newClocked(DefaultMaxBytes)
	for i := range 1000 {
		k := s.SumString(fmt.Sprint("call_", i))
		claim(t, s, k, fp, time.Minute)
		save(t, s, k, []byte("a"), 10*time.Minute)
	}
	c.Add(10 * time.Minute)
	claim(t, s, key(1), fp, time.Minute)
	require.Equal(t, 1, s.Len(), "one call sweeps every shard once the sweep interval has passed")
	require.Equal(t, int64(EntryOverhead), s.Bytes())
}

// TestDigests: a key's digest is the same for an id's bytes and its
// string, and a body's fingerprint is its own one-pass digest (its hash and
// its length), the same for equal bodies whatever their backing; each
// store draws its own seeds.
func TestDigests(t *testing.T) {
	s, other := newTest(Options{}), newTest(Options{})
	require.Equal(t, s.Sum([]byte("call_1")), s.SumString("call_1"))
	require.NotEqual(t, s.SumString("call_1"), s.SumString("call_2"))
	require.NotEqual(t, s.SumString("call_1"), other.SumString("call_1"), "each store draws its own seeds")
	d := s.SumString("call_1")
	require.NotEqual(t, d[0], d[1], "the two halves come from different seeds")

	body := []byte(`{"tool":"t","toolCallId":"c","input":{}}`)
	require.Equal(t, s.Fingerprint(body), s.Fingerprint(bytes.Clone(body)))
	require.NotEqual(t, s.Fingerprint(body), other.Fingerprint(body), "each store draws its own seeds")
	require.Equal(t, uint64(len(body)), s.Fingerprint(body)[1], "the length is the second half")
	for i := range body {
		changed := bytes.Clone(body)
		changed[i] ^= 1
		require.NotEqual(t, s.Fingerprint(body), s.Fingerprint(changed), "byte %d", i)
	}
	require.NotEqual(t, s.Fingerprint(body), s.Fingerprint(append(bytes.Clone(body), ' ')))
	// A fingerprint is not a Sum (nothing may compare one with the other),
	// though both start with the first seed's hash.
	require.NotEqual(t, s.Sum(body), s.Fingerprint(body))
	require.Equal(t, s.Sum(body)[0], s.Fingerprint(body)[0])
	require.Equal(t, Digest{s.Sum(nil)[0], 0}, s.Fingerprint(nil))
	require.Equal(t, s.Fingerprint(nil), s.Fingerprint([]byte{}))
}

// TestConcurrentCalls runs claims and saves of shared and own keys from many
// goroutines (run it with -race): one claim wins each key, its answer is
// the one every later claim gets, and the budget holds.
func TestConcurrentCalls(t *testing.T) {
	s := newTest(Options{MaxBytes: 16 << 20})
	const workers, keys = 8, 500
	var wg sync.WaitGroup
	var won [keys]atomic.Int32
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range keys {
				k := s.SumString(fmt.Sprint("call_", i))
				st, _, err := s.Claim(k, fp, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if st == Acquired {
					won[i].Add(1)
					if _, err := s.Save(k, fp, []byte(fmt.Sprint("answer ", i, " from ", w)), time.Hour); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	for i := range keys {
		require.Equal(t, int32(1), won[i].Load(), "key %d was acquired once", i)
		st, answer, err := s.Claim(s.SumString(fmt.Sprint("call_", i)), fp, time.Minute)
		require.NoError(t, err)
		require.Equal(t, Done, st)
		require.Contains(t, string(answer), fmt.Sprint("answer ", i, " from "))
	}
	require.LessOrEqual(t, s.Bytes(), s.MaxBytes())
}

// TestFillBeforeTheFirstEarlyEviction fills a store of the default budget
// with small answers (a 50-byte answer, kept in a 64-byte allocation) until
// the first answer is dropped before its TTL: with the shards' budgets
// split evenly, that comes when the fullest shard is full, shortly before
// the whole budget is. docs/PERFORMANCE.md's capacity model uses the
// figure it logs.
func TestFillBeforeTheFirstEarlyEviction(t *testing.T) {
	for _, shards := range []int{16, 2} {
		t.Run(fmt.Sprint(shards, " shards"), func(t *testing.T) {
			s, _ := clocked(New(Options{MaxBytes: DefaultMaxBytes, Shards: shards}))
			answer := make([]byte, 50)
			perEntry := int64(cap(bytes.Clone(answer))) + EntryOverhead
			kept := 0
			for ; ; kept++ {
				k := s.SumString("call_" + strconv.Itoa(kept))
				claim(t, s, k, fp, time.Minute)
				if save(t, s, k, answer, 10*time.Minute) > 0 {
					break
				}
			}
			whole := int(DefaultMaxBytes / perEntry)
			t.Logf("%d answers of %d bytes (%d charged each) kept before the first early eviction: %.1f%% of the %d the whole %d MiB holds",
				kept, len(answer), perEntry, 100*float64(kept)/float64(whole), whole, DefaultMaxBytes>>20)
			require.Greater(t, kept, whole*95/100, "the shards fill evenly")
			require.LessOrEqual(t, kept, whole)
		})
	}
}

func TestSaveMakesRoomWithoutDroppingItsOwnClaim(t *testing.T) {
	s, _ := newClocked(MinMaxBytes)
	// Only claims: the oldest is the one that saves an answer needing room.
	perClaim := int64(EntryOverhead)
	n := int(MinMaxBytes / perClaim)
	for i := range n {
		claim(t, s, key(i), fp, time.Minute)
	}
	require.Zero(t, save(t, s, key(0), make([]byte, 4096), time.Hour), "dropping claims is no early eviction")
	st, answer, err := s.Claim(key(0), fp, time.Minute)
	require.NoError(t, err)
	require.Equal(t, Done, st, "the answer is kept: room was made from the other claims")
	require.Len(t, answer, 4096)
	require.Equal(t, Acquired, claim(t, s, key(1), fp, time.Minute), "the oldest other claims were dropped")
	require.LessOrEqual(t, s.Bytes(), int64(MinMaxBytes))
}

// BenchmarkDigest puts the store's fingerprint of a 1 KiB body (one seeded
// maphash pass) beside the hex SHA-256 a shared store is given.
func BenchmarkDigest(b *testing.B) {
	s := newTest(Options{})
	body := bytes.Repeat([]byte("x"), 1<<10)
	b.Run("impl=maphash", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			_ = s.Fingerprint(body)
		}
	})
	b.Run("impl=sha256-hex", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			sum := sha256.Sum256(body)
			_ = hex.EncodeToString(sum[:])
		}
	})
}

// saveExact saves for k, with no claim, an answer of n bytes whose
// capacity is n (save's copy would round it up to an allocation size).
func saveExact(t *testing.T, s testStore, k Digest, n int) int {
	t.Helper()
	evicted, err := s.Save(k, fp, make([]byte, n), time.Hour)
	require.NoError(t, err)
	return evicted
}

// TestAnswerOfExactlyAShardsBudget: an answer whose entry takes a shard's
// whole budget is kept (it drops the others to make room); one byte more
// is not.
func TestAnswerOfExactlyAShardsBudget(t *testing.T) {
	s, _ := newClocked(MinMaxBytes) // one shard
	require.Len(t, s.shards, 1)
	fits := int(MinMaxBytes - EntryOverhead)
	save(t, s, key(1), []byte("small"), time.Hour)
	require.Equal(t, 1, saveExact(t, s, key(2), fits), "the other answer is dropped for it")
	require.Equal(t, Done, claim(t, s, key(2), fp, time.Minute), "it is kept")
	require.Equal(t, 1, saveExact(t, s, key(3), fits+1), "one byte more is not kept")
	require.Equal(t, Acquired, claim(t, s, key(3), fp, time.Minute))
	// The same through a claim, whose entry becomes the answer.
	s, _ = newClocked(MinMaxBytes)
	require.Equal(t, Acquired, claim(t, s, key(4), fp, time.Minute))
	require.Zero(t, saveExact(t, s, key(4), fits))
	require.Equal(t, Done, claim(t, s, key(4), fp, time.Minute), "it is kept")
	require.Equal(t, Acquired, claim(t, s, key(5), fp, time.Minute))
	require.Equal(t, 2, saveExact(t, s, key(5), fits+1), "key 4's answer dropped by the claim, and this one")
	require.Equal(t, Acquired, claim(t, s, key(5), fp, time.Minute), "one byte more is not kept, nor its claim")
}

// TestSaveWithoutClaimReportsWhatItDrops: an answer saved after its
// claim's lease ended (no claim left) counts the answers it drops to make
// room, as any other save does.
func TestSaveWithoutClaimReportsWhatItDrops(t *testing.T) {
	s, _ := newClocked(MinMaxBytes) // one shard
	half := int(MinMaxBytes/2 - EntryOverhead)
	require.Zero(t, saveExact(t, s, key(1), half))
	require.Zero(t, saveExact(t, s, key(2), half))
	require.Equal(t, 1, saveExact(t, s, key(3), half), "the oldest answer is dropped, and counted")
	require.Equal(t, Acquired, claim(t, s, key(1), fp, time.Minute))
}

// TestClaimAndSaveSweepTheirShard: an expired entry is dropped by the next
// Claim or Save on its shard, before a sweep of every shard is due.
func TestClaimAndSaveSweepTheirShard(t *testing.T) {
	for _, op := range []string{"claim", "save"} {
		s, c := newClocked(1 << 20)               // one shard
		claim(t, s, key(1), fp, time.Millisecond) // sweeps every shard: the next is due in sweepEvery
		c.Add(2 * time.Millisecond)
		require.Equal(t, 1, s.Len())
		if op == "claim" {
			claim(t, s, key(2), fp, time.Minute)
		} else {
			save(t, s, key(2), []byte("a"), time.Hour)
		}
		assert.Equal(t, 1, s.Len(), "%s: the expired claim is gone, the new entry counted", op)
	}
}

// TestDeadlineSaturates: a lease or TTL that would pass the last instant
// an int64 holds ends there, from any start after the store's base.
func TestDeadlineSaturates(t *testing.T) {
	forever := time.Duration(math.MaxInt64)
	assert.Equal(t, int64(math.MaxInt64), deadline(0, forever))
	assert.Equal(t, int64(math.MaxInt64), deadline(1, forever))
	assert.Equal(t, int64(math.MaxInt64), deadline(1<<40, forever-1))
	assert.Equal(t, int64(15), deadline(5, 10))
	assert.Equal(t, int64(-5), deadline(-15, 10), "before the base: no saturation needed")
}

// TestSweepOfEveryShardAtMostOncePerInterval: a Claim sweeps the other
// shards only when sweepEvery has passed since the last such sweep (at that
// instant exactly, and not before), so a busy store does not lock every
// shard on every call.
func TestSweepOfEveryShardAtMostOncePerInterval(t *testing.T) {
	s, c := clocked(New(Options{MaxBytes: 2 * minShardBytes, Shards: 2}))
	require.Len(t, s.shards, 2)
	require.NotSame(t, s.shard(key(1)), s.shard(key(2)))
	claim(t, s, key(2), fp, time.Millisecond) // the first call sweeps every shard; the next is due sweepEvery later
	c.Add(2 * time.Millisecond)
	claim(t, s, key(1), fp, time.Hour) // another shard, before the next sweep is due
	require.Equal(t, 2, s.Len(), "key 2's expired claim waits for the next sweep")
	c.Add(time.Duration(sweepEvery) - 2*time.Millisecond) // sweepEvery after the first sweep, exactly
	claim(t, s, key(3), fp, time.Hour)
	require.Equal(t, 2, s.Len(), "swept: keys 1 and 3 are left")
}

// TestIndexIsRebuiltAtHalf: the index is rebuilt when the entries drop to
// half of what it was built for, not later.
func TestIndexIsRebuiltAtHalf(t *testing.T) {
	s, c := newClocked(1 << 20) // one shard
	for i := range 2 * minIndexRebuild {
		lease := time.Hour
		if i < minIndexRebuild {
			lease = time.Minute
		}
		claim(t, s, key(i), fp, lease)
	}
	require.Equal(t, 2*minIndexRebuild, built(s))
	c.Add(time.Minute)
	require.Equal(t, Running, claim(t, s, key(2*minIndexRebuild-1), fp, time.Hour)) // sweeps the first half
	require.Equal(t, minIndexRebuild, s.Len())
	assert.Equal(t, minIndexRebuild, built(s), "rebuilt when half were left")
}

// TestAnswerDroppedAtItsExpiryIsNotEarly: an answer that room is made
// from at the very instant its TTL ends is not counted as dropped early.
func TestAnswerDroppedAtItsExpiryIsNotEarly(t *testing.T) {
	s, c := newClocked(MinMaxBytes) // one shard
	half := int(MinMaxBytes/2 - EntryOverhead)
	_, err := s.Save(key(1), fp, make([]byte, half), time.Hour)
	require.NoError(t, err)
	_, err = s.Save(key(2), fp, make([]byte, half), time.Minute) // behind key 1: the sweep does not reach it
	require.NoError(t, err)
	c.Add(time.Minute) // key 2's TTL ends now, to the nanosecond
	require.Equal(t, 1, saveExact(t, s, key(3), int(MinMaxBytes-EntryOverhead)), "key 1 was dropped early; key 2 had ended")
}

// TestNewLeavesGOMAXPROCS: New reads the number of processors for its
// shards and sets nothing.
func TestNewLeavesGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	New(Options{})
	assert.Equal(t, 3, runtime.GOMAXPROCS(0))
}
