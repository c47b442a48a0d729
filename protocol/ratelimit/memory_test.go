package ratelimit

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeClock is a clock the test moves; safe for concurrent use.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_767_225_600, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var perMinute = Limit{Calls: 20, Per: time.Minute}

func allow(t testing.TB, m *Memory, key string, l Limit) (bool, time.Duration) {
	t.Helper()
	ok, wait, err := m.Allow(context.Background(), key, l)
	require.NoError(t, err)
	return ok, wait
}

func TestMemoryCounts(t *testing.T) {
	clock := newFakeClock()
	m := NewMemory(MemoryOptions{Now: clock.Now})
	for i := range 20 {
		ok, _ := allow(t, m, "conv_1", perMinute)
		require.True(t, ok, "call %d of 20", i+1)
	}
	ok, wait := allow(t, m, "conv_1", perMinute)
	assert.False(t, ok, "the 21st call in the minute")
	assert.Equal(t, 3*time.Second, wait, "one call comes back every 60 s / 20")
	ok, _ = allow(t, m, "conv_2", perMinute)
	assert.True(t, ok, "another conversation has its own count")

	clock.Advance(2 * time.Second)
	ok, wait = allow(t, m, "conv_1", perMinute)
	assert.False(t, ok)
	assert.Equal(t, time.Second, wait, "a refused call takes nothing: the wait only shrinks")
	clock.Advance(time.Second)
	ok, _ = allow(t, m, "conv_1", perMinute)
	assert.True(t, ok, "after the wait it said")
	ok, _ = allow(t, m, "conv_1", perMinute)
	assert.False(t, ok)

	// A new limit for the same key starts a new count.
	ok, _ = allow(t, m, "conv_1", Limit{Calls: 1, Per: time.Hour})
	assert.True(t, ok)
	ok, wait = allow(t, m, "conv_1", Limit{Calls: 1, Per: time.Hour})
	assert.False(t, ok)
	assert.Equal(t, time.Hour, wait)
}

func TestMemoryIdleCountsGo(t *testing.T) {
	clock := newFakeClock()
	m := NewMemory(MemoryOptions{Now: clock.Now})
	for i := range 1000 {
		allow(t, m, "conv_"+strconv.Itoa(i), perMinute)
	}
	require.Equal(t, 1000, m.Len())
	clock.Advance(59 * time.Second)
	allow(t, m, "active", perMinute)
	assert.Equal(t, 1001, m.Len(), "nothing is idle before its bucket is full again")
	clock.Advance(time.Second)
	for range 1000/sweepPerCall + 1 {
		allow(t, m, "active", perMinute)
	}
	assert.Equal(t, 1, m.Len(), "every idle count went; the active one stays")
	ok, _ := allow(t, m, "conv_1", perMinute)
	assert.True(t, ok, "a count that went starts full, as it would have been")
}

func TestMemoryMaxKeys(t *testing.T) {
	clock := newFakeClock()
	m := NewMemory(MemoryOptions{MaxKeys: 2, Now: clock.Now})
	one := Limit{Calls: 1, Per: time.Hour}
	for _, k := range []string{"a", "b"} {
		ok, _ := allow(t, m, k, one)
		require.True(t, ok)
	}
	ok, _ := allow(t, m, "a", one)
	require.False(t, ok, "a is spent")
	allow(t, m, "c", one) // evicts b, used longest ago
	assert.Equal(t, 2, m.Len())
	ok, _ = allow(t, m, "a", one)
	assert.False(t, ok, "a was used recently: it stays, spent")
	ok, _ = allow(t, m, "b", one)
	assert.True(t, ok, "b was evicted: it starts over (more calls through, never fewer)")
}

// heapGrowth returns how many bytes of heap fill holds once it returns.
func heapGrowth(fill func() *Memory) (int64, *Memory) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m := fill()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc), m
}

// TestMemoryBoundMillionConversations: a million conversation ids at once
// keep at most MaxKeys counts, within MaxKeys × BytesPerKey bytes.
func TestMemoryBoundMillionConversations(t *testing.T) {
	if testing.Short() {
		t.Skip("a million calls")
	}
	clock := newFakeClock()
	grew, m := heapGrowth(func() *Memory {
		m := NewMemory(MemoryOptions{Now: clock.Now})
		for i := range 1_000_000 {
			allow(t, m, "conversation_"+strconv.Itoa(i)+"_with_a_long_median_id_0123456789abcdef", perMinute)
		}
		return m
	})
	assert.Equal(t, DefaultMaxKeys, m.Len())
	t.Logf("1,000,000 conversations: %d counts kept in %d bytes (%d per count)", m.Len(), grew, grew/int64(m.Len()))
	assert.LessOrEqual(t, grew, int64(DefaultMaxKeys*BytesPerKey))
	runtime.KeepAlive(m)
}

// TestMemoryBoundSteadyLoad: 10,000 new conversations a second for 10
// seconds (on the fake clock) stay within the bound; with a one-second
// period, idle counts go as fast as new ones come.
func TestMemoryBoundSteadyLoad(t *testing.T) {
	for _, c := range []struct {
		limit   Limit
		maxKeys int
		atMost  int // counts kept at the end
	}{
		{perMinute, 50_000, 50_000},                    // all within one period: the cap holds
		{Limit{Calls: 5, Per: time.Second}, 0, 10_100}, // one second of conversations, and a few the sweep has not reached
	} {
		t.Run(c.limit.String(), func(t *testing.T) {
			clock := newFakeClock()
			grew, m := heapGrowth(func() *Memory {
				m := NewMemory(MemoryOptions{MaxKeys: c.maxKeys, Now: clock.Now})
				for i := range 100_000 { // 10 s × 10,000 a second
					clock.Advance(100 * time.Microsecond)
					allow(t, m, "conv_"+strconv.Itoa(i), c.limit)
					allow(t, m, "conv_"+strconv.Itoa(i), c.limit)
				}
				return m
			})
			t.Logf("%d counts kept in %d bytes", m.Len(), grew)
			assert.LessOrEqual(t, m.Len(), c.atMost)
			assert.LessOrEqual(t, grew, int64(c.atMost*BytesPerKey))
			runtime.KeepAlive(m)
		})
	}
}

// TestMemoryConcurrent: concurrent calls on shared and distinct keys (run
// with -race) count every call exactly once.
func TestMemoryConcurrent(t *testing.T) {
	clock := newFakeClock()
	m := NewMemory(MemoryOptions{Now: clock.Now})
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				ok, _, _ := m.Allow(context.Background(), "shared", Limit{Calls: 100, Per: time.Hour})
				if ok {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
				_, _, _ = m.Allow(context.Background(), "g"+strconv.Itoa(g)+"_"+strconv.Itoa(i), perMinute)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 100, allowed, "exactly the budget, across goroutines")
}
