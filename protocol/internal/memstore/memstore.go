// Package memstore is the in-process replay store: claims and answers by
// key, bounded in bytes. The protocol package wraps it as its default Store;
// it does not import protocol, so its outcomes are its own [Status]
// constants, which mirror protocol.ClaimStatus.
//
// # Keys
//
// Keys and fingerprints are [Digest] values of seeded hashes
// (hash/maphash, two seeds drawn for each store). A key is 128 bits, made
// by [Store.Sum] or [Store.SumString]: two different ids share one with a
// chance of about 2⁻¹²⁸ per pair. A body's fingerprint, made by
// [Store.Fingerprint], is one 64-bit hash and the body's length, in one
// pass: it only has to tell apart two bodies sent under the same id, which
// share one with a chance of about 2⁻⁶⁴ when their lengths are equal.
// Digests are fixed-size, so a long toolCallId costs no more than a short
// one, and cheap: a 1 KiB body's fingerprint takes about a tenth of the
// time of its hex SHA-256 (BenchmarkDigest). The seeds never leave the
// process, and only signed bodies reach the store, so nobody who cannot
// sign a call chooses what is hashed.
//
// # What the budget counts
//
// Every entry is charged cap(answer) + [EntryOverhead]. The store keeps
// the answer it is given, not a copy (see [Store.Save]), and the core
// allocates each answer so that its capacity is the whole allocation the
// Go runtime made (the length rounded up to its size class or page), so
// the charge follows the heap, not the JSON length. EntryOverhead covers
// the entry's own struct, its two digests and its share of the index (a Go
// map); it was measured (see TestEntryOverheadCoversTheHeap) and is
// checked by that test.
//
// A Go map never gives memory back when entries are deleted, so each shard
// rebuilds its index when the number of entries falls to half of what the
// index was built for: the index then never holds more than twice the live
// entries' slots, which EntryOverhead pays for.
//
// # Shards
//
// A store of at least 8 MiB is split into shards by key, one per processor
// (GOMAXPROCS when the store is made, rounded up to a power of two, at most
// 16), each with its own lock, its own part of the budget (at least 4 MiB)
// and its own eviction order, so calls on several cores rarely wait for
// each other. The locks are held only for the index and the lists, about a
// tenth of a microsecond a call: digests are computed by the caller,
// entries are made before a lock is taken, a repeat's copy of its answer
// after it is let go, and a Save finds its claim through the [Ticket] its
// Claim returned instead of looking the key up again. No more shards than
// processors, because each call's shard is one its processor has likely not
// touched for several calls, and its lock and index are then fetched from
// further out in the memory hierarchy: on two processors, 16 shards
// measured about 1% of a call more than two in one interleaved comparison
// (docs/PERFORMANCE.md, Results). Keys spread evenly, so the store starts
// to drop answers early when the fullest shard is full, a little before the
// whole budget is (1–2.5% before with 16 shards at the default budget and
// small answers, under 0.5% with 2: TestFillBeforeTheFirstEarlyEviction).
//
// # Eviction
//
// When an entry does not fit in its shard, the store drops the shard's
// expired entries, then its oldest answers, then (only when no answer is
// left) its oldest running claims. Each answer dropped before its TTL is
// counted in Save's evicted result, because its key could then run again.
// An answer larger than a shard's whole budget is not kept: its claim is
// dropped too (a repeat runs the tool again rather than waiting for an
// answer that will never come) and it is counted as evicted.
//
// Expired entries are dropped as the store goes: each Claim and Save sweeps
// its shard, and every shard at most once a second. The store starts no
// goroutine and needs no Close.
package memstore

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Status is the outcome of [Store.Claim]; the values mirror
// protocol.ClaimStatus.
type Status int

// The outcomes of [Store.Claim].
const (
	Acquired Status = iota + 1 // run the tool, then Save
	Running                    // a live claim with the same fingerprint: ask again shortly
	Done                       // the answer is stored
	Conflict                   // the key was used with another fingerprint
)

// Budgets: DefaultMaxBytes when [Options.MaxBytes] is zero, and never less
// than MinMaxBytes (a smaller budget is raised to it), so a few hundred
// claims always fit.
const (
	DefaultMaxBytes = 64 << 20
	MinMaxBytes     = 64 << 10
)

// Sharding: at most maxShards shards, each with at least minShardBytes of
// the budget (see shardCount).
const (
	maxShards     = 16
	minShardBytes = 4 << 20
)

// EntryOverhead is what each entry is charged on top of its answer bytes:
// its struct with the two digests (96 bytes with its size class on 64-bit
// platforms) and its share of its shard's index, which may be sized for
// twice the live entries (see the package documentation). Measured on Go
// 1.26, amd64: 131 to 154 bytes per entry with the index full, up to 207
// with it just over half empty. TestEntryOverheadCoversTheHeap fails if the
// heap ever grows past the charge.
const EntryOverhead = 224

// minIndexRebuild is the index size below which a shard does not rebuild
// it: at most this many unused slots (~2 KiB) stay behind in each shard.
const minIndexRebuild = 64

// Digest is a fixed-size digest of a key, made by [Store.Sum] or
// [Store.SumString], or a body's fingerprint, made by [Store.Fingerprint],
// of the same store.
type Digest [2]uint64

// Options configures [New].
type Options struct {
	// MaxBytes is the budget; default [DefaultMaxBytes], at least
	// [MinMaxBytes].
	MaxBytes int64
	// Shards is how many shards the store asks for, default GOMAXPROCS:
	// it gets that many rounded up to a power of two, at most 16, and
	// fewer when the budget cannot give each 4 MiB (see the package
	// documentation).
	Shards int
}

// Store keeps claims and answers by key in memory, bounded by
// [Options.MaxBytes]. It is safe for concurrent use.
type Store struct {
	max    int64
	base   time.Time // expiries are kept as durations since base
	seeds  [2]maphash.Seed
	shards []shard
	mask   uint64 // len(shards)-1
	// unreported counts answers a Claim dropped before their TTL to make
	// room; the next Save reports them (Claim has no count to return).
	unreported atomic.Int64
	// nextSweep is when (since base, as expires) the next Claim or Save
	// sweeps every shard, not only its own.
	nextSweep atomic.Int64
}

// sweepEvery is how often a Claim or Save sweeps every shard: an expired
// entry in a shard no call reaches is dropped within this time of the next
// call.
const sweepEvery = int64(time.Second)

// shard is one lock's part of the store.
type shard struct {
	mu      sync.Mutex
	max     int64
	used    int64
	entries map[Digest]*entry
	built   int  // the most entries the index has held since it was built
	running list // live claims, oldest first
	done    list // answers, oldest first
	_       [64]byte
}

// entry is one key's claim or answer. It sits in its shard's index and in
// one of its lists.
type entry struct {
	key         Digest
	fingerprint Digest
	answer      []byte // the stored answer once done; never written to once kept
	expires     int64  // since the store's base, in nanoseconds: the lease's end while running, the TTL's end once done
	prev, next  *entry // neighbours in its list
	done        bool
	removed     bool // out of the index for good: a Ticket to it is stale
}

// Ticket is the claim an Acquired [Store.Claim] took, for [Store.Save] to
// reach without looking the key up again; the zero Ticket makes Save look
// it up. A Ticket whose entry has since left the store (dropped once its
// lease ended, by a sweep or by a Claim of its key, or to make room) is
// stale, and Save then looks the key up; a claim whose lease ended but
// that is still in the store is reached through its Ticket all the same.
type Ticket struct{ e *entry }

// size is what e is charged against the budget.
func (e *entry) size() int64 { return int64(cap(e.answer)) + EntryOverhead }

// New returns an empty store.
func New(opts Options) *Store {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	opts.MaxBytes = max(opts.MaxBytes, MinMaxBytes)
	if opts.Shards <= 0 {
		opts.Shards = runtime.GOMAXPROCS(0)
	}
	n := shardCount(opts.MaxBytes, opts.Shards)
	s := &Store{max: opts.MaxBytes, base: time.Now(), seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		shards: make([]shard, n), mask: uint64(n - 1)}
	for i := range s.shards {
		s.shards[i].max = opts.MaxBytes / int64(n)
		s.shards[i].entries = make(map[Digest]*entry)
	}
	s.nextSweep.Store(math.MinInt64) // the first call sweeps
	return s
}

// shardCount is how many shards a store with budget maxBytes has when it
// wants want: the smallest power of two at or above want, but at most
// maxShards and no more than leave each shard minShardBytes.
func shardCount(maxBytes int64, want int) int {
	n := 1
	for n < min(want, maxShards) && maxBytes/int64(2*n) >= minShardBytes {
		n *= 2
	}
	return n
}

// Sum returns the digest of b.
func (s *Store) Sum(b []byte) Digest {
	return Digest{maphash.Bytes(s.seeds[0], b), maphash.Bytes(s.seeds[1], b)}
}

// Fingerprint returns the fingerprint of a body: its 64-bit hash and its
// length, in half the time of Sum (see the package documentation).
func (s *Store) Fingerprint(body []byte) Digest {
	return Digest{maphash.Bytes(s.seeds[0], body), uint64(len(body))}
}

// SumString returns the digest of str, the same as Sum of its bytes.
func (s *Store) SumString(str string) Digest {
	return Digest{maphash.String(s.seeds[0], str), maphash.String(s.seeds[1], str)}
}

// Len returns how many entries the store holds, expired ones not dropped yet
// included.
func (s *Store) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.entries)
		sh.mu.Unlock()
	}
	return n
}

// Bytes returns what the entries are charged against the budget.
func (s *Store) Bytes() int64 {
	var n int64
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += sh.used
		sh.mu.Unlock()
	}
	return n
}

// MaxBytes returns the budget.
func (s *Store) MaxBytes() int64 { return s.max }

// shard returns key's shard.
func (s *Store) shard(key Digest) *shard { return &s.shards[key[0]&s.mask] }

// since returns now as a duration since the store's base: on the monotonic
// clock when now has a monotonic reading, as time.Now's has, else on the
// wall clock (time.Time.Sub). A time more than 292 years from the base
// saturates at the int64 bounds, where leases no longer run right.
func (s *Store) since(now time.Time) int64 { return int64(now.Sub(s.base)) }

// Claim claims key for fingerprint for lease, without waiting: see
// [Status]. A claim whose lease ended without an answer is given to the
// caller. The answer returned with Done is a copy the caller owns; the
// Ticket returned with Acquired is for the Save of the answer.
//
// now is the time of the call, which the caller reads (the store reads no
// clock; the core passes the reading it already took for the request). Every
// call to one store must pass times of one clock: time.Now's (readings
// with a monotonic part, so a step of the wall clock moves no lease), or a
// test's that starts near the time the store was made (see since).
func (s *Store) Claim(key, fingerprint Digest, lease time.Duration, now time.Time) (Status, []byte, Ticket, error) {
	if lease <= 0 {
		return 0, nil, Ticket{}, fmt.Errorf("median: memory store: the lease must be positive, got %s", lease)
	}
	e := &entry{key: key, fingerprint: fingerprint} // made before the lock; unused unless acquired
	at := s.since(now)
	s.sweepAll(at)
	sh := s.shard(key)
	sh.mu.Lock()
	sh.sweep(at)
	if old := sh.live(key, at); old != nil {
		status, answer := Running, []byte(nil)
		switch {
		case old.fingerprint != fingerprint:
			status = Conflict
		case old.done:
			status, answer = Done, old.answer
		}
		sh.mu.Unlock()
		if answer != nil {
			answer = bytes.Clone(answer) // a kept answer is never written to: copy it unlocked
		}
		return status, answer, Ticket{}, nil
	}
	e.expires = deadline(at, lease)
	evicted := sh.makeRoom(e.size(), at)
	sh.add(e, &sh.running)
	sh.mu.Unlock()
	if evicted > 0 {
		s.unreported.Add(int64(evicted))
	}
	return Acquired, nil, Ticket{e}, nil
}

// Save stores answer for key for ttl, unless key holds an answer already
// (the first answer wins) or a live claim of another fingerprint. It stores
// it even when the claim's lease has ended. evicted counts the answers
// dropped before their TTL to make room since the last Save (by this Save
// or by Claims), this one included when it is larger than a shard's whole
// budget (then it is not kept, and neither is its claim). now is the time
// of the call, as in Claim.
//
// Save keeps answer itself, not a copy: nothing may write to it after the
// call (the core hands over an answer it encoded for the call; a caller
// that keeps writing to its slice passes bytes.Clone of it). It is charged
// cap(answer), so a slice with spare capacity costs that too.
//
// t is the Ticket that key's Claim returned, or the zero Ticket: with a
// Ticket that is not stale Save finds the claim without looking key up, and
// a claim whose lease has ended becomes the answer as a new entry would.
func (s *Store) Save(key, fingerprint Digest, t Ticket, answer []byte, ttl time.Duration, now time.Time) (evicted int, err error) {
	if ttl <= 0 {
		return 0, fmt.Errorf("median: memory store: the TTL must be positive, got %s", ttl)
	}
	if s.unreported.Load() != 0 {
		evicted = int(s.unreported.Swap(0))
	}
	at := s.since(now)
	s.sweepAll(at)
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.sweep(at)
	// The Ticket's claim, while it is in the index (its lease may have
	// ended: it then becomes the answer as a new entry would); a Ticket of
	// another key would be another shard's.
	e := t.e
	if e == nil || e.removed || e.key != key {
		e = sh.live(key, at)
	}
	if e != nil && (e.done || e.fingerprint != fingerprint) {
		return evicted, nil // the first answer wins; another body's live claim stays
	}
	if e == nil { // the lease ended and nobody took over: keep the answer anyway
		e = &entry{key: key, fingerprint: fingerprint, answer: answer, done: true, expires: deadline(at, ttl)}
		if e.size() > sh.max {
			return evicted + 1, nil
		}
		evicted += sh.makeRoom(e.size(), at)
		sh.add(e, &sh.done)
		return evicted, nil
	}
	// The claim becomes the answer: it moves from the claims to the back of
	// the answers and stays in the index.
	grown := int64(cap(answer))
	if e.size()+grown > sh.max {
		sh.remove(e)
		return evicted + 1, nil
	}
	sh.running.unlink(e) // in no list while room is made, so it cannot be dropped
	evicted += sh.makeRoom(grown, at)
	e.answer, e.done, e.expires = answer, true, deadline(at, ttl)
	sh.done.pushBack(e)
	sh.used += grown
	return evicted, nil
}

// Renew extends key's running claim of fingerprint so that it lasts lease
// from now, and reports whether there was one: an answer, a claim of
// another fingerprint, a claim whose lease has ended and no entry at all
// are left as they are. now is the time of the call, as in Claim. The
// claim moves to the back of its shard's claims, which then stay in the
// order their leases end as long as the lease stays the same (see sweep).
func (s *Store) Renew(key, fingerprint Digest, lease time.Duration, now time.Time) (bool, error) {
	if lease <= 0 {
		return false, fmt.Errorf("median: memory store: the lease must be positive, got %s", lease)
	}
	at := s.since(now)
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.live(key, at)
	if e == nil || e.done || e.fingerprint != fingerprint {
		return false, nil
	}
	e.expires = deadline(at, lease)
	sh.running.unlink(e)
	sh.running.pushBack(e)
	return true, nil
}

// deadline returns now (since the store's base) plus d, or the last
// instant an int64 holds when the sum does not fit: a lease or TTL of
// math.MaxInt64 (no end) must not wrap round to the past, which would
// give the key up at once.
func deadline(now int64, d time.Duration) int64 {
	if now > 0 && int64(d) > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + int64(d)
}

// sweepAll sweeps every shard in turn, at most once per sweepEvery; the
// caller holds no shard's lock.
func (s *Store) sweepAll(now int64) {
	next := s.nextSweep.Load()
	if now < next || !s.nextSweep.CompareAndSwap(next, now+sweepEvery) {
		return
	}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.sweep(now)
		sh.mu.Unlock()
	}
}

// live returns key's entry, or nil when there is none or it has expired
// (then it is dropped).
func (sh *shard) live(key Digest, now int64) *entry {
	e := sh.entries[key]
	if e != nil && now >= e.expires {
		sh.remove(e)
		return nil
	}
	return e
}

// makeRoom drops entries until need more bytes fit (need is at most the
// shard's budget): the oldest answers first, then the oldest claims. It
// returns how many answers it dropped before their TTL.
func (sh *shard) makeRoom(need int64, now int64) (evicted int) {
	for sh.used+need > sh.max {
		e := sh.done.front()
		if e == nil {
			e = sh.running.front()
		}
		if e == nil {
			return evicted // empty: cannot happen while need <= sh.max
		}
		if e.done && now < e.expires {
			evicted++
		}
		sh.remove(e)
	}
	return evicted
}

// add puts e in the index and at the back of l, and charges it.
func (sh *shard) add(e *entry, l *list) {
	sh.entries[e.key] = e
	if len(sh.entries) > sh.built {
		sh.built = len(sh.entries)
	}
	l.pushBack(e)
	sh.used += e.size()
}

// remove takes e out of the index and its list, and refunds it.
func (sh *shard) remove(e *entry) {
	delete(sh.entries, e.key)
	e.removed = true
	if e.done {
		sh.done.unlink(e)
	} else {
		sh.running.unlink(e)
	}
	sh.used -= e.size()
	if sh.built >= minIndexRebuild && len(sh.entries) <= sh.built/2 {
		sh.rebuild()
	}
}

// rebuild copies the index into a map sized for the live entries, so the
// memory of deleted slots goes back to the runtime. It runs at most once
// per halving of the index, so its cost per call stays constant.
func (sh *shard) rebuild() {
	m := make(map[Digest]*entry, len(sh.entries))
	for k, e := range sh.entries {
		m[k] = e
	}
	sh.entries, sh.built = m, len(m)
}

// sweep drops expired entries from the front of both lists. Each list is in
// the order its entries were added, which is expiry order as long as the
// lease (or TTL) stays the same; an entry that expires out of order is
// dropped when it reaches the front, is looked up, or is evicted.
func (sh *shard) sweep(now int64) {
	for _, l := range [2]*list{&sh.running, &sh.done} {
		for e := l.front(); e != nil && now >= e.expires; e = l.front() {
			sh.remove(e)
		}
	}
}

// list is an intrusive doubly linked list of entries, oldest first; its
// links live in the entries, so it costs no allocation of its own.
type list struct{ head, tail *entry }

func (l *list) front() *entry { return l.head }

func (l *list) pushBack(e *entry) {
	e.prev, e.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = e
	} else {
		l.head = e
	}
	l.tail = e
}

func (l *list) unlink(e *entry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		l.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		l.tail = e.prev
	}
	e.prev, e.next = nil, nil
}
