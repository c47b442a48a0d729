package ratelimit

import (
	"context"
	"hash/maphash"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// DefaultMaxKeys is [MemoryOptions.MaxKeys] when it is zero.
const DefaultMaxKeys = 100_000

// BytesPerKey bounds what one count costs a [Memory], in bytes: its
// entry, its token bucket and its place in the index (about 210 measured
// on Go 1.26 / amd64, with counts coming and going). A Memory holds at
// most MaxKeys counts: at most 25.6 MB with the default 100,000.
const BytesPerKey = 256

// sweepPerCall bounds how many idle counts one call removes.
const sweepPerCall = 8

// MemoryOptions configures [NewMemory]. The zero value is ready to use.
type MemoryOptions struct {
	// MaxKeys caps the counts kept (one per conversation, visitor or tool,
	// as Config.By says); default 100,000. When it is full the count used
	// longest ago goes first: that conversation starts over with a full
	// budget, so a cap far below the conversations active within one
	// period lets more calls through, never fewer.
	MaxKeys int
	// Now is the clock; default time.Now. Set it in tests.
	Now func() time.Time
}

// Memory is a [Backend] that counts in this process, on one
// golang.org/x/time/rate token bucket per count. Its memory is bounded
// whatever the number of conversations: a count that has been idle long
// enough to be full again is removed (it holds nothing a new one would
// not), and at most MaxKeys counts are kept, each at most BytesPerKey.
// Keys are kept by a 64-bit digest, so a long conversation id costs what a
// short one costs. It is safe for concurrent use; build it with
// [NewMemory].
type Memory struct {
	now  func() time.Time
	max  int
	seed maphash.Seed

	mu      sync.Mutex
	entries map[uint64]*entry
	head    entry // sentinel of the list by last use: head.next is the newest
}

// entry is one count, in the list by last use.
type entry struct {
	key        uint64
	bucket     *rate.Limiter
	limit      Limit
	idleAt     time.Time // when the bucket is full again if nothing is taken
	prev, next *entry
}

// NewMemory returns a Memory with opts.
func NewMemory(opts MemoryOptions) *Memory {
	m := &Memory{now: opts.Now, max: opts.MaxKeys, seed: maphash.MakeSeed(), entries: make(map[uint64]*entry)}
	if m.now == nil {
		m.now = time.Now
	}
	if m.max <= 0 {
		m.max = DefaultMaxKeys
	}
	m.head.prev, m.head.next = &m.head, &m.head
	return m
}

// Allow takes one call from key's count under limit; it never fails.
func (m *Memory) Allow(_ context.Context, key string, limit Limit) (bool, time.Duration, error) {
	h := maphash.String(m.seed, key) // hashed before the lock
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(now)
	e := m.entries[h]
	if e == nil || e.limit != limit {
		if e != nil {
			m.remove(e)
		}
		if len(m.entries) >= m.max {
			m.remove(m.head.prev) // the count used longest ago
		}
		e = &entry{key: h, limit: limit, bucket: rate.NewLimiter(rate.Every(limit.Per/time.Duration(limit.Calls)), limit.Calls)}
		m.entries[h] = e
	} else {
		m.unlink(e)
	}
	m.pushFront(e)
	e.idleAt = now.Add(limit.Per)
	if e.bucket.AllowN(now, 1) {
		return true, 0, nil
	}
	r := e.bucket.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	r.CancelAt(now)
	return false, wait, nil
}

// Len returns how many counts m keeps.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.entries)
}

// sweep removes a few of the counts used longest ago that are full again.
func (m *Memory) sweep(now time.Time) {
	for range sweepPerCall {
		e := m.head.prev
		if e == &m.head || now.Before(e.idleAt) {
			return
		}
		m.remove(e)
	}
}

func (m *Memory) remove(e *entry) {
	m.unlink(e)
	delete(m.entries, e.key)
}

func (m *Memory) unlink(e *entry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func (m *Memory) pushFront(e *entry) {
	e.prev, e.next = &m.head, m.head.next
	m.head.next.prev = e
	m.head.next = e
}
