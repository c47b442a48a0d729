package protocol

import (
	"sync"
	"time"
)

// Saving again (PROTOCOL.md §8). When a shared store fails to save an
// answer after the tool ran (a connection cut mid-command or mid-reply, a
// store that is down for a while), the answer still goes out, and the
// Handler saves it again in the background, with a growing pause, until
// the store keeps it or its TTL (Config.ReplayTTL) has passed since it was
// answered, renewing the call's claim meanwhile: a copy of the call that
// arrives in between waits for the answer, and gets it once it is kept,
// instead of running the tool a second time when the claim's lease ends.
//
// One goroutine does it, alive only while answers wait, one save at a
// time under the store deadline; once a save succeeds (the store is back)
// every answer waiting is tried at once. At most maxResaves answers, and
// maxResaveBytes of them, wait: past that an answer is not saved again
// (its claim then ends with its lease, and a repeat may run the tool
// again), which is logged. Handler.Close stops it.

// Bounds of the answers waiting to be saved again, and the pauses between
// two tries of one answer.
const (
	maxResaves     = 1000
	maxResaveBytes = 32 << 20
	firstResave    = 100 * time.Millisecond
	maxResavePause = 2 * time.Second
)

// resaves is a Handler's answers waiting to be saved again (see above).
type resaves struct {
	h        *Handler
	max      int   // maxResaves; tests lower it
	maxBytes int64 // maxResaveBytes

	mu      sync.Mutex
	waiting []*resave
	bytes   int64
	running bool          // the goroutine runs
	closed  bool          // Close was called: nothing waits any more
	wake    chan struct{} // tells the goroutine that something changed
	done    chan struct{} // closed when the goroutine has ended after Close
}

// resave is one answer waiting to be saved again, with its claim, which is
// renewed meanwhile.
type resave struct {
	held   claim
	answer []byte
	tool   string    // for the log
	callID string    // for the log
	until  time.Time // its TTL's end: it is not saved after that
	next   time.Time // its next try
	pause  time.Duration
}

func newResaves(h *Handler) *resaves {
	return &resaves{h: h, max: maxResaves, maxBytes: maxResaveBytes, wake: make(chan struct{}, 1)}
}

// add queues the answer of a call whose save failed, taking over the
// renewal of its claim c; it reports false when the answer cannot wait
// (too many wait already, or the Handler is closed), and c is then left
// as it was.
func (q *resaves) add(c *claim, call *Call, answer []byte) bool {
	now := time.Now()
	rs := &resave{held: claim{store: c.store, key: c.key, fingerprint: c.fingerprint}, answer: answer,
		tool: call.Tool, callID: call.ToolCallID, until: now.Add(q.h.cfg.ReplayTTL), next: now.Add(firstResave), pause: firstResave}
	q.mu.Lock()
	if q.closed || len(q.waiting) >= q.max || q.bytes+int64(len(answer)) > q.maxBytes {
		q.mu.Unlock()
		return false
	}
	q.h.renewals.keep(&rs.held, 0) // before the goroutine can see it, and drop it
	q.waiting = append(q.waiting, rs)
	q.bytes += int64(len(answer))
	start := !q.running
	q.running = true
	q.mu.Unlock()
	if start {
		go q.run()
	} else {
		q.signal()
	}
	return true
}

// signal wakes the goroutine without waiting.
func (q *resaves) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// run saves the waiting answers again until none is left or Close.
func (q *resaves) run() {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		q.mu.Lock()
		if q.closed || len(q.waiting) == 0 {
			q.running = false
			if q.closed && q.done != nil {
				close(q.done)
			}
			q.mu.Unlock()
			return
		}
		rs := q.waiting[0]
		for _, w := range q.waiting[1:] {
			if w.next.Before(rs.next) {
				rs = w
			}
		}
		q.mu.Unlock()
		if wait := time.Until(rs.next); wait > 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			select {
			case <-timer.C:
			case <-q.wake:
				timer.Stop()
			}
			continue // something may have changed: pick again
		}
		q.try(rs)
	}
}

// try saves rs once: it leaves the queue when the store kept it or its TTL
// has passed; otherwise its next try comes after a longer pause.
func (q *resaves) try(rs *resave) {
	h := q.h
	if !time.Now().Before(rs.until) {
		q.remove(rs)
		h.cfg.Logger.Error("median: replay store could not save the answer within its TTL; a repeat of this call would run the tool again",
			"tool", rs.tool, "toolCallId", rs.callID)
		return
	}
	evicted, err := h.storeSave(h.renewals.ctx, rs.held.store, rs.held.key, rs.held.fingerprint, rs.answer)
	if err != nil {
		q.mu.Lock()
		rs.pause = min(2*rs.pause, maxResavePause)
		rs.next = time.Now().Add(rs.pause)
		q.mu.Unlock()
		return
	}
	q.remove(rs)
	h.cfg.Logger.Info("median: replay store saved an answer it had failed to save; repeats of the call get it", "tool", rs.tool, "toolCallId", rs.callID)
	if evicted > 0 {
		h.stats.evictedEarly(evicted)
		h.cfg.Logger.Warn(evictedWarning, "tool", rs.tool, "toolCallId", rs.callID, "evicted", evicted)
	}
	// The store is back: every answer waiting is tried now.
	now := time.Now()
	q.mu.Lock()
	for _, w := range q.waiting {
		w.next = now
	}
	q.mu.Unlock()
}

// remove takes rs out of the queue and stops renewing its claim.
func (q *resaves) remove(rs *resave) {
	q.mu.Lock()
	for i, w := range q.waiting {
		if w == rs {
			q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
			q.bytes -= int64(len(rs.answer))
			break
		}
	}
	q.mu.Unlock()
	q.h.renewals.drop(&rs.held)
}

// close stops saving again and waits for the goroutine to end; it returns
// how many answers were still waiting.
func (q *resaves) close() int {
	q.mu.Lock()
	q.closed = true
	left := len(q.waiting)
	for _, rs := range q.waiting {
		q.h.renewals.drop(&rs.held)
	}
	q.waiting, q.bytes = nil, 0
	var done chan struct{}
	if q.running {
		done = make(chan struct{})
		q.done = done
	}
	q.mu.Unlock()
	if done != nil {
		q.signal()
		<-done
	}
	return left
}
