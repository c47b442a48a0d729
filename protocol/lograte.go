package protocol

import (
	"sync/atomic"
	"time"
)

// logInterval is the shortest time between two lines of one rareLog.
const logInterval = 10 * time.Second

// rareLog lets a warning that could come once per request through at most
// once per logInterval, and counts the lines it held back in between, so
// that a busy server logs a line every ten seconds, not one per request.
type rareLog struct {
	next       atomic.Int64 // the Unix time in nanoseconds before which lines are held back
	suppressed atomic.Int64 // lines held back since the last one logged
}

// allow reports whether a line may be logged at now and, when it may, how
// many were held back before it.
func (l *rareLog) allow(now time.Time) (ok bool, suppressed int64) {
	t, next := now.UnixNano(), l.next.Load()
	if t < next || !l.next.CompareAndSwap(next, t+int64(logInterval)) {
		l.suppressed.Add(1)
		return false, 0
	}
	return true, l.suppressed.Swap(0)
}
