package protocol_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/storetest"
	"github.com/stretchr/testify/require"
)

// Goroutine leaks are caught by TestMain in main_test.go (goleak).

func TestMemoryStoreBehaviour(t *testing.T) {
	storetest.Run(t, func(t *testing.T) protocol.Store {
		return protocol.NewMemoryStore(protocol.MemoryStoreOptions{})
	})
}

func TestMemoryStoreHandlers(t *testing.T) {
	// One process: both handlers share the store, as handlers of one
	// instance do.
	storetest.RunHandlers(t, func(t *testing.T) (protocol.Store, protocol.Store) {
		s := protocol.NewMemoryStore(protocol.MemoryStoreOptions{})
		return s, s
	})
}

// memClock is a settable clock for MemoryStoreOptions.Now.
type memClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *memClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *memClock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func newClockedStore(maxEntries int) (*protocol.MemoryStore, *memClock) {
	clock := &memClock{now: time.Unix(1_767_225_600, 0)}
	return protocol.NewMemoryStore(protocol.MemoryStoreOptions{MaxEntries: maxEntries, Now: clock.Now}), clock
}

const (
	memFP    = "1111111111111111111111111111111111111111111111111111111111111111"
	memOther = "2222222222222222222222222222222222222222222222222222222222222222"
)

// memClaim claims id and returns the status; it fails on an error.
func memClaim(t *testing.T, s protocol.Store, id, fp string, lease time.Duration) protocol.ClaimStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := s.Claim(ctx, id, fp, lease)
	require.NoError(t, err)
	return res.Status
}

func TestMemoryStoreBound(t *testing.T) {
	const max = 10
	s, _ := newClockedStore(max)
	ctx := context.Background()
	for i := range 3 * max {
		id := fmt.Sprintf("call_%d", i)
		require.Equal(t, protocol.ClaimAcquired, memClaim(t, s, id, memFP, time.Minute))
		require.NoError(t, s.Save(ctx, id, memFP, []byte(id), time.Hour))
		require.LessOrEqual(t, s.Len(), max, "after %d calls", i+1)
	}
	require.Equal(t, max, s.Len())
	// The newest answers are kept; the oldest were dropped and run again.
	require.Equal(t, protocol.ClaimDone, memClaim(t, s, fmt.Sprintf("call_%d", 3*max-1), memFP, time.Minute))
	require.Equal(t, protocol.ClaimAcquired, memClaim(t, s, "call_0", memFP, time.Minute))
}

func TestMemoryStoreBoundKeepsRunningClaims(t *testing.T) {
	s, _ := newClockedStore(3)
	ctx := context.Background()
	require.Equal(t, protocol.ClaimAcquired, memClaim(t, s, "running", memFP, time.Minute))
	for _, id := range []string{"done_1", "done_2", "done_3"} {
		require.Equal(t, protocol.ClaimAcquired, memClaim(t, s, id, memFP, time.Minute))
		require.NoError(t, s.Save(ctx, id, memFP, []byte(id), time.Hour))
	}
	require.Equal(t, 3, s.Len())
	// The oldest entry is the running claim, but answers go first: a running
	// claim dropped would let a concurrent copy run the tool again.
	require.Equal(t, protocol.ClaimConflict, memClaim(t, s, "running", memOther, time.Minute), "the running claim must survive")
	require.Equal(t, protocol.ClaimAcquired, memClaim(t, s, "done_1", memFP, time.Minute), "the oldest answer must be dropped")
}

func TestMemoryStoreEvictsExpired(t *testing.T) {
	s, clock := newClockedStore(0)
	ctx := context.Background()
	for i := range 100 {
		id := fmt.Sprintf("call_%d", i)
		require.Equal(t, protocol.ClaimAcquired, memClaim(t, s, id, memFP, time.Minute))
		if i%2 == 0 {
			require.NoError(t, s.Save(ctx, id, memFP, []byte(id), 10*time.Minute))
		}
	}
	require.Equal(t, 100, s.Len())

	clock.Add(time.Minute) // the 50 unanswered claims' leases end
	require.Equal(t, protocol.ClaimAcquired, memClaim(t, s, "probe_1", memFP, time.Minute))
	require.Equal(t, 51, s.Len(), "the expired claims must be dropped on the next Claim")
	require.Equal(t, protocol.ClaimDone, memClaim(t, s, "call_0", memFP, time.Minute), "answers live for their TTL")

	clock.Add(10 * time.Minute) // every answer's TTL ends, and probe_1's lease
	require.NoError(t, s.Save(ctx, "probe_2", memFP, []byte("late"), time.Minute))
	require.Equal(t, 1, s.Len(), "everything expired must be dropped on the next Save")
	require.Equal(t, protocol.ClaimAcquired, memClaim(t, s, "call_0", memFP, time.Minute), "an expired answer runs again")
}

func TestMemoryStoreTTLBoundary(t *testing.T) {
	s, clock := newClockedStore(0)
	require.Equal(t, protocol.ClaimAcquired, memClaim(t, s, "call_1", memFP, time.Minute))
	require.NoError(t, s.Save(context.Background(), "call_1", memFP, []byte("a"), 10*time.Minute))
	clock.Add(10*time.Minute - time.Nanosecond)
	require.Equal(t, protocol.ClaimDone, memClaim(t, s, "call_1", memFP, time.Minute), "just before the TTL ends")
	clock.Add(time.Nanosecond)
	require.Equal(t, protocol.ClaimAcquired, memClaim(t, s, "call_1", memFP, time.Minute), "when the TTL ends")
}

func TestMemoryStoreRejectsNonPositiveDurations(t *testing.T) {
	s := protocol.NewMemoryStore(protocol.MemoryStoreOptions{})
	_, err := s.Claim(context.Background(), "call_1", memFP, 0)
	require.ErrorContains(t, err, "lease must be positive")
	require.ErrorContains(t, s.Save(context.Background(), "call_1", memFP, []byte("a"), -time.Second), "TTL must be positive")
	require.Zero(t, s.Len())
}

// The benchmarks compare a call's cost without replay protection and with
// the default memory store (see storetest.BenchmarkServe).

func BenchmarkServeNoStore(b *testing.B) { storetest.BenchmarkServe(b, nil) }

func BenchmarkServeMemoryStore(b *testing.B) {
	storetest.BenchmarkServe(b, protocol.NewMemoryStore(protocol.MemoryStoreOptions{}))
}

// BenchmarkMemoryStoreClaimSave is the store's own cost per call: one
// Claim and one Save of a new id.
func BenchmarkMemoryStoreClaimSave(b *testing.B) {
	s := protocol.NewMemoryStore(protocol.MemoryStoreOptions{})
	ctx := context.Background()
	answer := []byte(`{"result":{"orderId":"A-1001","status":"shipped"}}`)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		id := fmt.Sprintf("call_%032x", i)
		if _, err := s.Claim(ctx, id, memFP, time.Minute); err != nil {
			b.Fatal(err)
		}
		if err := s.Save(ctx, id, memFP, answer, 10*time.Minute); err != nil {
			b.Fatal(err)
		}
	}
}
