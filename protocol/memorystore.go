package protocol

import (
	"bytes"
	"context"
	"time"

	"github.com/median-go/median/protocol/internal/memstore"
)

// memoryStore is the default [Store]: protocol/internal/memstore, which
// keeps claims and answers in this process's memory, bounded in bytes
// (Config.ReplayMaxBytes), and drops expired entries as it goes; it starts
// no goroutine and needs no Close. It protects one instance only.
type memoryStore struct {
	s   *memstore.Store
	now func() time.Time // the clock of Claim, Save and Renew; the core ignores it and passes its own readings
}

var _ Store = memoryStore{}

// newMemoryStore returns an empty memory store with a budget of maxBytes
// (0 for the default) whose Claim, Save and Renew read clock now (nil for
// time.Now). A Handler given it as its Store calls memstore directly with
// readings of time.Now's monotonic clock whatever now is, so a store on
// another clock must reach the Handler behind a Store of its own, as the
// fuzz tests' does.
func newMemoryStore(maxBytes int64, now func() time.Time) memoryStore {
	if now == nil {
		now = time.Now
	}
	return memoryStore{memstore.New(memstore.Options{MaxBytes: maxBytes}), now}
}

// Claim implements [Store]; it never waits. The core does not call it: it
// gives the store digests of its own (see Handler.acquireClaim); this is for a
// memoryStore used as any other Store.
func (m memoryStore) Claim(_ context.Context, key, fingerprint string, lease time.Duration) (ClaimStatus, []byte, error) {
	st, answer, _, err := m.s.Claim(m.s.SumString(key), m.s.SumString(fingerprint), lease, m.now())
	return claimStatus(st), answer, err
}

// Save implements [Store]. It keeps a copy of answer: a Store's caller
// owns the slice it passes.
func (m memoryStore) Save(_ context.Context, key, fingerprint string, answer []byte, ttl time.Duration) (int, error) {
	return m.s.Save(m.s.SumString(key), m.s.SumString(fingerprint), memstore.Ticket{}, bytes.Clone(answer), ttl, m.now())
}

// Renew implements [Store]; it never waits. Like Claim, the core does not
// call it: it renews the claims of the memory store through their digests.
func (m memoryStore) Renew(_ context.Context, key, fingerprint string, lease time.Duration) error {
	_, err := m.s.Renew(m.s.SumString(key), m.s.SumString(fingerprint), lease, m.now())
	return err
}

// claimStatus is the ClaimStatus of a memstore status.
func claimStatus(st memstore.Status) ClaimStatus {
	switch st {
	case memstore.Acquired:
		return ClaimAcquired
	case memstore.Running:
		return ClaimRunning
	case memstore.Done:
		return ClaimDone
	case memstore.Conflict:
		return ClaimConflict
	}
	return 0
}

// Kind names the store in the diagnostics report.
func (memoryStore) Kind() string { return "memory" }

// Probe always succeeds: the store is in the process.
func (memoryStore) Probe(context.Context) error { return nil }
