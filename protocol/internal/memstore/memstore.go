// Package memstore is the in-process replay store: claims and answers by
// key, bounded in bytes. The protocol package wraps it as its default Store;
// it does not import protocol, so its outcomes are its own [Status]
// constants, which mirror protocol.ClaimStatus.
//
// # What the budget counts
//
// Every entry is charged len(key) + len(fingerprint) + cap(answer) +
// [EntryOverhead]. cap(answer) is the allocation the Go runtime made for the
// copy the store keeps (rounded up to its size class or page), so the
// charge follows the heap, not the JSON length. EntryOverhead covers the
// entry's own struct and its share of the index (a Go map); it was measured
// (see TestEntryOverheadCoversTheHeap) and is checked by that test.
//
// A Go map never gives memory back when entries are deleted, so the store
// rebuilds its index when the number of entries falls to half of what the
// index was built for: the index then never holds more than twice the live
// entries' slots, which EntryOverhead pays for.
//
// # Eviction
//
// When an entry does not fit, the store drops expired entries, then the
// oldest answers, then (only when no answer is left) the oldest running
// claims. Each answer dropped before its TTL is counted in Save's evicted
// result, because its key could then run again. An answer larger than the
// whole budget is not kept: its claim is dropped too (a repeat runs the tool
// again rather than waiting for an answer that will never come) and it is
// counted as evicted.
//
// Expired entries are dropped as the store goes, on each Claim and Save; it
// starts no goroutine and needs no Close.
package memstore

import (
	"bytes"
	"fmt"
	"sync"
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

// EntryOverhead is what each entry is charged on top of its key,
// fingerprint and answer bytes: its struct (112 bytes on 64-bit platforms)
// and its share of the index, which may be sized for twice the live entries
// (see the package documentation). Measured on Go 1.26, amd64: 146 to 172
// bytes per entry with the index full, up to 226 with it just over half
// empty. TestEntryOverheadCoversTheHeap fails if the heap ever grows past
// the charge.
const EntryOverhead = 256

// minIndexRebuild is the index size below which the store does not rebuild
// it: at most this many unused slots (~60 KiB) stay behind.
const minIndexRebuild = 1024

// Options configures [New].
type Options struct {
	// MaxBytes is the budget; default [DefaultMaxBytes], at least
	// [MinMaxBytes].
	MaxBytes int64
	// Now is the store's clock for leases and TTLs; default time.Now.
	Now func() time.Time
}

// Store keeps claims and answers by key in memory, bounded by
// [Options.MaxBytes]. It is safe for concurrent use.
//
// Keys and fingerprints are kept as given, without a copy: pass strings of
// their own (the core passes fresh hex digests), never a substring of a
// larger buffer, which would stay alive with them.
type Store struct {
	mu      sync.Mutex
	max     int64
	now     func() time.Time
	used    int64
	entries map[string]*entry
	built   int  // the most entries the index has held since it was built
	running list // live claims, oldest first
	done    list // answers, oldest first
	// unreported counts answers a Claim dropped before their TTL to make
	// room; the next Save reports them (Claim has no count to return).
	unreported int
}

// entry is one key's claim or answer. It sits in the index and in one list.
type entry struct {
	key         string
	fingerprint string
	answer      []byte    // the stored answer once done
	expires     time.Time // the lease's end while running, the TTL's end once done
	prev, next  *entry    // neighbours in its list
	done        bool
}

// size is what e is charged against the budget.
func (e *entry) size() int64 {
	return int64(len(e.key)+len(e.fingerprint)+cap(e.answer)) + EntryOverhead
}

// New returns an empty store.
func New(opts Options) *Store {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	opts.MaxBytes = max(opts.MaxBytes, MinMaxBytes)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Store{max: opts.MaxBytes, now: opts.Now, entries: make(map[string]*entry)}
}

// Len returns how many entries the store holds, expired ones not dropped yet
// included.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// Bytes returns what the entries are charged against the budget.
func (s *Store) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used
}

// MaxBytes returns the budget.
func (s *Store) MaxBytes() int64 { return s.max }

// Claim claims key for fingerprint for lease, without waiting: see
// [Status]. A claim whose lease ended without an answer is given to the
// caller. The answer returned with Done is a copy the caller owns.
func (s *Store) Claim(key, fingerprint string, lease time.Duration) (Status, []byte, error) {
	if lease <= 0 {
		return 0, nil, fmt.Errorf("median: memory store: the lease must be positive, got %s", lease)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.sweep(now)
	if e := s.live(key, now); e != nil {
		switch {
		case e.fingerprint != fingerprint:
			return Conflict, nil, nil
		case e.done:
			return Done, bytes.Clone(e.answer), nil
		default:
			return Running, nil, nil
		}
	}
	e := &entry{key: key, fingerprint: fingerprint, expires: now.Add(lease)}
	if e.size() > s.max {
		return 0, nil, fmt.Errorf("median: memory store: a %d-byte key does not fit in the %d-byte budget; pass a digest of the id", len(key), s.max)
	}
	s.unreported += s.makeRoom(e.size(), now)
	s.add(e, &s.running)
	return Acquired, nil, nil
}

// Save stores answer for key for ttl, unless key holds an answer already
// (the first answer wins) or a live claim of another fingerprint. It stores
// it even when the claim's lease has ended. evicted counts the answers
// dropped before their TTL to make room since the last Save (by this Save
// or by Claims), this one included when it is larger than the whole budget
// (then it is not kept, and neither is its claim).
func (s *Store) Save(key, fingerprint string, answer []byte, ttl time.Duration) (evicted int, err error) {
	if ttl <= 0 {
		return 0, fmt.Errorf("median: memory store: the TTL must be positive, got %s", ttl)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	evicted, s.unreported = s.unreported, 0
	now := s.now()
	s.sweep(now)
	e := s.live(key, now)
	if e != nil && (e.done || e.fingerprint != fingerprint) {
		return evicted, nil // the first answer wins; another body's live claim stays
	}
	if e != nil {
		s.remove(e) // added again below as an answer, at the back of the answers
	} else { // the lease ended and nobody took over: keep the answer anyway
		e = &entry{key: key, fingerprint: fingerprint}
	}
	e.answer, e.done, e.expires = bytes.Clone(answer), true, now.Add(ttl)
	if e.size() > s.max {
		return evicted + 1, nil
	}
	evicted += s.makeRoom(e.size(), now)
	s.add(e, &s.done)
	return evicted, nil
}

// live returns key's entry, or nil when there is none or it has expired
// (then it is dropped).
func (s *Store) live(key string, now time.Time) *entry {
	e := s.entries[key]
	if e != nil && !now.Before(e.expires) {
		s.remove(e)
		return nil
	}
	return e
}

// makeRoom drops entries until need more bytes fit (need is at most the
// budget): the oldest answers first, then the oldest claims. It returns how
// many answers it dropped before their TTL.
func (s *Store) makeRoom(need int64, now time.Time) (evicted int) {
	for s.used+need > s.max {
		e := s.done.front()
		if e == nil {
			e = s.running.front()
		}
		if e == nil {
			return evicted // empty: cannot happen while need <= s.max
		}
		if e.done && now.Before(e.expires) {
			evicted++
		}
		s.remove(e)
	}
	return evicted
}

// add puts e in the index and at the back of l, and charges it.
func (s *Store) add(e *entry, l *list) {
	s.entries[e.key] = e
	if len(s.entries) > s.built {
		s.built = len(s.entries)
	}
	l.pushBack(e)
	s.used += e.size()
}

// remove takes e out of the index and its list, and refunds it.
func (s *Store) remove(e *entry) {
	delete(s.entries, e.key)
	if e.done {
		s.done.unlink(e)
	} else {
		s.running.unlink(e)
	}
	s.used -= e.size()
	if s.built >= minIndexRebuild && len(s.entries) <= s.built/2 {
		s.rebuild()
	}
}

// rebuild copies the index into a map sized for the live entries, so the
// memory of deleted slots goes back to the runtime.
func (s *Store) rebuild() {
	m := make(map[string]*entry, len(s.entries))
	for k, e := range s.entries {
		m[k] = e
	}
	s.entries, s.built = m, len(m)
}

// sweep drops expired entries from the front of both lists. Each list is in
// the order its entries were added, which is expiry order as long as the
// lease (or TTL) stays the same; an entry that expires out of order is
// dropped when it reaches the front, is looked up, or is evicted.
func (s *Store) sweep(now time.Time) {
	for _, l := range []*list{&s.running, &s.done} {
		for e := l.front(); e != nil && !now.Before(e.expires); e = l.front() {
			s.remove(e)
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
