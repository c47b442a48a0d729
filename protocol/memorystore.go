package protocol

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// DefaultMemoryStoreEntries is how many toolCallIds a [MemoryStore] keeps
// when [MemoryStoreOptions.MaxEntries] is zero.
const DefaultMemoryStoreEntries = 100_000

// MemoryStoreOptions configures [NewMemoryStore].
type MemoryStoreOptions struct {
	// MaxEntries bounds memory: when full, the oldest entries are dropped
	// first (their ids could then run again if replayed). Default 100,000.
	MaxEntries int
	// Now is the store's clock; default time.Now.
	Now func() time.Time
}

// MemoryStore is the default [Store]: it keeps answers in this process's
// memory, bounded in size, and drops expired entries as it goes (no
// background goroutine). It protects one instance only; when several
// instances serve the endpoint, use a shared store such as redisstore.
type MemoryStore struct {
	mu      sync.Mutex
	max     int
	now     func() time.Time
	entries map[string]*memoryEntry
	order   *list.List // oldest first
}

type memoryEntry struct {
	id          string
	fingerprint string
	answer      []byte
	done        bool
	expires     time.Time     // lease end while running, TTL end once done
	ready       chan struct{} // closed by Save
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
	return &MemoryStore{max: opts.MaxEntries, now: opts.Now, entries: make(map[string]*memoryEntry), order: list.New()}
}

// Len returns how many entries the store holds, expired ones included until
// they are dropped.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// Claim implements [Store].
func (s *MemoryStore) Claim(ctx context.Context, id, fingerprint string, lease time.Duration) (ClaimResult, error) {
	for {
		s.mu.Lock()
		now := s.now()
		s.sweep(now)
		e := s.entries[id]
		if e != nil && now.After(e.expires) {
			s.remove(e)
			e = nil
		}
		if e == nil {
			s.insert(&memoryEntry{id: id, fingerprint: fingerprint, expires: now.Add(lease), ready: make(chan struct{})})
			s.mu.Unlock()
			return ClaimResult{Status: ClaimAcquired}, nil
		}
		if e.fingerprint != fingerprint {
			s.mu.Unlock()
			return ClaimResult{Status: ClaimConflict}, nil
		}
		if e.done {
			answer := e.answer
			s.mu.Unlock()
			return ClaimResult{Status: ClaimDone, Answer: answer}, nil
		}
		ready, wait := e.ready, e.expires.Sub(now)
		s.mu.Unlock()

		timer := time.NewTimer(wait + time.Millisecond)
		select {
		case <-ready:
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
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	e := s.entries[id]
	if e == nil || e.fingerprint != fingerprint {
		if e != nil {
			s.remove(e)
		}
		e = &memoryEntry{id: id, fingerprint: fingerprint, ready: make(chan struct{})}
		s.insert(e)
	} else {
		s.order.MoveToBack(e.elem)
	}
	if !e.done {
		e.done = true
		close(e.ready)
	}
	e.answer = append([]byte(nil), answer...)
	e.expires = now.Add(ttl)
	return nil
}

// insert adds e, dropping the oldest entry when the store is full.
func (s *MemoryStore) insert(e *memoryEntry) {
	for len(s.entries) >= s.max {
		s.remove(s.order.Front().Value.(*memoryEntry))
	}
	e.elem = s.order.PushBack(e)
	s.entries[e.id] = e
}

// remove drops e, waking anyone waiting on it.
func (s *MemoryStore) remove(e *memoryEntry) {
	s.order.Remove(e.elem)
	delete(s.entries, e.id)
	if !e.done {
		e.done = true
		close(e.ready)
	}
}

// sweep drops expired entries from the front of the list.
func (s *MemoryStore) sweep(now time.Time) {
	for f := s.order.Front(); f != nil; f = s.order.Front() {
		e := f.Value.(*memoryEntry)
		if !now.After(e.expires) {
			return
		}
		s.remove(e)
	}
}
