package protocol

import (
	"bytes"
	"container/list"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// DefaultMemoryStoreEntries is how many toolCallIds a [MemoryStore] keeps
// when [MemoryStoreOptions.MaxEntries] is zero.
const DefaultMemoryStoreEntries = 100_000

// MemoryStoreOptions configures [NewMemoryStore].
type MemoryStoreOptions struct {
	// MaxEntries bounds memory. When the store is full it drops expired
	// entries first, then the oldest answer, and a running claim only when
	// it holds nothing but claims. A dropped id runs again if it is
	// replayed. Default 100,000.
	MaxEntries int
	// Now is the store's clock for leases and TTLs; default time.Now. Set
	// it in tests to expire entries without waiting. Waiters still wait in
	// real time.
	Now func() time.Time
}

// MemoryStore is the default [Store]: it keeps answers in this process's
// memory, bounded in size (see [MemoryStoreOptions.MaxEntries]), and drops
// expired entries as it goes, on each Claim and Save; it starts no
// goroutine and needs no Close. It protects one instance only; when several
// instances serve the endpoint, use a shared store such as
// protocol/redisstore.
type MemoryStore struct {
	mu      sync.Mutex
	max     int
	now     func() time.Time
	entries map[string]*memoryEntry
	running *list.List // live claims, oldest first
	done    *list.List // answers, oldest first
}

type memoryEntry struct {
	id          string
	fingerprint string
	answer      []byte
	done        bool          // answered (in the done list), or dropped
	expires     time.Time     // lease end while running, TTL end once done
	ready       chan struct{} // made by the first waiter; closed when answered or dropped
	elem        *list.Element
}

// NewMemoryStore returns an empty in-memory store.
func NewMemoryStore(opts MemoryStoreOptions) *MemoryStore {
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultMemoryStoreEntries
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &MemoryStore{
		max:     opts.MaxEntries,
		now:     opts.Now,
		entries: make(map[string]*memoryEntry),
		running: list.New(),
		done:    list.New(),
	}
}

// Len returns how many entries the store holds: live claims and answers,
// plus expired ones not dropped yet.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// Claim implements [Store].
func (s *MemoryStore) Claim(ctx context.Context, id, fingerprint string, lease time.Duration) (ClaimResult, error) {
	if lease <= 0 {
		return ClaimResult{}, fmt.Errorf("median: MemoryStore.Claim: the lease must be positive, got %s", lease)
	}
	for {
		s.mu.Lock()
		now := s.now()
		s.sweep(now)
		e := s.live(id, now)
		if e == nil {
			// The id may be a substring of the whole request body: keep a copy,
			// not the body, for as long as the entry lives.
			e = &memoryEntry{id: strings.Clone(id), fingerprint: fingerprint, expires: now.Add(lease)}
			s.insert(e, s.running)
			s.mu.Unlock()
			return ClaimResult{Status: ClaimAcquired}, nil
		}
		if e.fingerprint != fingerprint {
			s.mu.Unlock()
			return ClaimResult{Status: ClaimConflict}, nil
		}
		if e.done {
			answer := bytes.Clone(e.answer)
			s.mu.Unlock()
			return ClaimResult{Status: ClaimDone, Answer: answer}, nil
		}
		if e.ready == nil {
			e.ready = make(chan struct{})
		}
		ready, wait := e.ready, e.expires.Sub(now)
		s.mu.Unlock()

		timer := time.NewTimer(wait + time.Millisecond)
		select {
		case <-ready: // answered or dropped: look again
		case <-timer.C: // lease over: look again, and take it over
		case <-ctx.Done():
			timer.Stop()
			return ClaimResult{}, ctx.Err()
		}
		timer.Stop()
	}
}

// Save implements [Store].
func (s *MemoryStore) Save(_ context.Context, id, fingerprint string, answer []byte, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("median: MemoryStore.Save: the TTL must be positive, got %s", ttl)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.sweep(now)
	e := s.live(id, now)
	switch {
	case e == nil: // the lease ended and nobody took over: keep the answer anyway
		e = &memoryEntry{id: id, fingerprint: fingerprint, done: true}
		s.insert(e, s.done)
	case e.done || e.fingerprint != fingerprint:
		return nil // the first answer wins; a different body's live claim stays
	default:
		s.running.Remove(e.elem)
		e.elem = s.done.PushBack(e)
		e.wake()
	}
	e.answer = bytes.Clone(answer)
	e.expires = now.Add(ttl)
	return nil
}

// live returns id's entry, or nil when there is none or it has expired
// (then it is dropped).
func (s *MemoryStore) live(id string, now time.Time) *memoryEntry {
	e := s.entries[id]
	if e != nil && !now.Before(e.expires) {
		s.remove(e)
		return nil
	}
	return e
}

// insert adds e to the map and to l (s.running or s.done), first making
// room: the oldest answer goes before any live claim.
func (s *MemoryStore) insert(e *memoryEntry, l *list.List) {
	for len(s.entries) >= s.max {
		oldest := s.done.Front()
		if oldest == nil {
			oldest = s.running.Front()
		}
		s.remove(oldest.Value.(*memoryEntry))
	}
	e.elem = l.PushBack(e)
	s.entries[e.id] = e
}

// remove drops e, waking anyone waiting on it (they look again).
func (s *MemoryStore) remove(e *memoryEntry) {
	delete(s.entries, e.id)
	if e.done {
		s.done.Remove(e.elem)
		return
	}
	s.running.Remove(e.elem)
	e.wake()
}

// wake marks a running entry done and wakes its waiters.
func (e *memoryEntry) wake() {
	e.done = true
	if e.ready != nil {
		close(e.ready)
	}
}

// sweep drops expired entries from the front of both lists. Each list is in
// the order its entries were added, which is expiry order as long as the
// lease (or TTL) stays the same; an entry that expires out of order is
// dropped when it reaches the front or is looked up.
func (s *MemoryStore) sweep(now time.Time) {
	for _, l := range []*list.List{s.running, s.done} {
		for f := l.Front(); f != nil; f = l.Front() {
			e := f.Value.(*memoryEntry)
			if now.Before(e.expires) {
				break
			}
			s.remove(e)
		}
	}
}

// newMemoryStore is the default store (replaced by the byte-bounded store).
func newMemoryStore(maxBytes int64) Store { return NewMemoryStore(MemoryStoreOptions{}) }
