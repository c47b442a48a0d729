package memstore

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDefaultClock: on time.Now's readings the store runs on the
// monotonic clock: a lease ends when its time has passed, and a lease or
// TTL of math.MaxInt64 never ends.
func TestDefaultClock(t *testing.T) {
	s := newTest(Options{})
	forever := time.Duration(math.MaxInt64)
	require.Equal(t, Acquired, claim(t, s, key(1), fp, forever))
	require.Equal(t, Running, claim(t, s, key(1), fp, time.Minute), "a lease with no end stays held")
	require.Zero(t, save(t, s, key(1), []byte("a"), forever))
	require.Equal(t, Done, claim(t, s, key(1), fp, time.Minute), "an answer with no end is kept")
	require.Equal(t, Conflict, claim(t, s, key(1), other, time.Minute))

	require.Equal(t, Acquired, claim(t, s, key(2), fp, 200*time.Millisecond))
	require.Equal(t, Running, claim(t, s, key(2), fp, time.Minute))
	time.Sleep(250 * time.Millisecond)
	require.Equal(t, Acquired, claim(t, s, key(2), fp, time.Minute), "a lease that ended is given to the next caller")

	require.Equal(t, Acquired, claim(t, s, key(3), fp, time.Minute))
	require.Zero(t, save(t, s, key(3), []byte("b"), 200*time.Millisecond))
	require.Equal(t, Done, claim(t, s, key(3), fp, time.Minute))
	time.Sleep(250 * time.Millisecond)
	require.Equal(t, Acquired, claim(t, s, key(3), fp, time.Minute), "an answer whose TTL ended is dropped")

	require.GreaterOrEqual(t, s.since(time.Now()), int64(0), "time.Now's readings come after the store's base")
}
