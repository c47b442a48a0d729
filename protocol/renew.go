package protocol

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Claim renewal (PROTOCOL.md §8). A claim lasts one lease
// (Config.ReplayLease) unless it is renewed; the Handler renews the claim
// of every call whose tool still runs, or whose answer waits to be saved
// again (see resaves), every third of the lease, so that a tool may run
// for as long as it runs while a crashed instance's claims end within a
// lease.
//
// One timer serves the whole Handler: it is set for the earliest renewal
// due, and when it fires it renews every claim due then. The claims are
// kept in one list per stripe (see stripes), each with its own lock, so
// that calls on several processors do not wait for each other: keeping and
// dropping a claim is a lock and a few pointer writes, and a call that
// ends before a third of its lease (nearly all of them) costs no store
// round trip, no timer and no goroutine of its own. A renewal on a shared
// store runs in a goroutine of its own under the store deadline (the
// memory store's, which never waits, runs in the timer's).

// Renewal timing: every third of the lease; after a renewal that failed,
// again after a quarter of that, so that a claim outlives two failed
// renewals in a row and a store that is back is used at once.
const (
	renewalsPerLease = 3
	retriesPerRenew  = 4
)

// renewals keeps a Handler's held claims alive (see above).
type renewals struct {
	h     *Handler
	lease time.Duration // the lease each renewal asks for
	every time.Duration // between two renewals of one claim
	retry time.Duration // after a renewal that failed
	base  time.Time     // times below are nanoseconds since base, on the monotonic clock
	lists []renewList   // one per stripe

	at    atomic.Int64 // when the timer fires (since base), 0 when it is not set
	mu    sync.Mutex   // guards timer and closed, and orders arm with Close
	timer *time.Timer
	// closed is set by Close: nothing is renewed after it.
	closed bool
	ctx    context.Context // the renewals' context, ended by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // renewals under way in goroutines of their own
}

// renewList is one stripe's held claims, in no particular order.
type renewList struct {
	mu   sync.Mutex
	head *claim
	_    [48]byte // the next stripe's lock on another cache line
}

func newRenewals(h *Handler, stripes int) *renewals {
	every := max(h.cfg.ReplayLease/renewalsPerLease, time.Microsecond)
	r := &renewals{h: h, lease: h.cfg.ReplayLease, every: every, retry: max(every/retriesPerRenew, time.Microsecond),
		base: time.Now(), lists: make([]renewList, max(stripes, 1))}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r
}

// now is the time since base.
func (r *renewals) now() int64 { return int64(time.Since(r.base)) }

// after is now plus d, saturated (a lease of math.MaxInt64 has no end).
func (r *renewals) after(d time.Duration) int64 {
	now := r.now()
	if int64(d) > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + int64(d)
}

// keep starts renewing c, a claim the call just took (or one whose answer
// waits to be saved again), on stripe's list.
func (r *renewals) keep(c *claim, stripe int) {
	due := r.after(r.every)
	l := &r.lists[stripe%len(r.lists)]
	l.mu.Lock()
	c.list, c.due = l, due
	c.next, c.prev = l.head, nil
	if l.head != nil {
		l.head.prev = c
	}
	l.head = c
	c.kept = true
	l.mu.Unlock()
	r.arm(due)
}

// drop stops renewing c; a renewal under way ends without setting the
// next. It does nothing for a claim that is not kept.
func (r *renewals) drop(c *claim) {
	l := c.list
	if l == nil {
		return
	}
	l.mu.Lock()
	if c.kept {
		c.kept = false
		if c.prev != nil {
			c.prev.next = c.next
		} else {
			l.head = c.next
		}
		if c.next != nil {
			c.next.prev = c.prev
		}
		c.prev, c.next = nil, nil
	}
	l.mu.Unlock()
}

// arm sets the timer to fire at at, unless it fires sooner already.
func (r *renewals) arm(at int64) {
	if t := r.at.Load(); t != 0 && t <= at {
		return // the common case, without a lock: a renewal is due sooner
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.at.Load(); r.closed || (t != 0 && t <= at) {
		return
	}
	r.at.Store(at)
	d := time.Duration(at - r.now())
	if r.timer == nil {
		r.timer = time.AfterFunc(d, r.fire)
	} else {
		r.timer.Reset(d)
	}
}

// fire renews every kept claim that is due, and sets the timer for the
// next one.
func (r *renewals) fire() {
	r.mu.Lock()
	r.at.Store(0)
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return
	}
	now, next := r.now(), int64(math.MaxInt64)
	var due []*claim
	for i := range r.lists {
		l := &r.lists[i]
		l.mu.Lock()
		for c := l.head; c != nil; c = c.next {
			switch {
			case c.renewing:
			case c.due <= now:
				c.renewing = true
				due = append(due, c)
			default:
				next = min(next, c.due)
			}
		}
		l.mu.Unlock()
	}
	for _, c := range due {
		r.renew(c)
	}
	if next != math.MaxInt64 {
		r.arm(next)
	}
}

// renew renews c once, then sets its next renewal.
func (r *renewals) renew(c *claim) {
	if mem, inProcess := c.store.(memoryStore); inProcess {
		_, err := mem.s.Renew(c.memKey, c.memFingerprint, r.lease, time.Now())
		r.renewed(c, err)
		return
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		ctx, cancel := r.h.storeContext(r.ctx)
		defer cancel()
		_, err := protect(r.h, ctx, "the replay store's Renew", nil, func() (struct{}, error) {
			return struct{}{}, c.store.Renew(ctx, c.key, c.fingerprint, r.lease)
		})
		r.renewed(c, err)
	}()
}

// renewed records how c's renewal went and sets its next one: a third of
// the lease on, or sooner after a failure, which is logged (at most once
// per logInterval).
func (r *renewals) renewed(c *claim, err error) {
	wait := r.every
	if err != nil {
		wait = r.retry
		if ok, held := r.h.renewFailed.allow(time.Now()); ok && r.ctx.Err() == nil {
			r.h.cfg.Logger.Warn("median: the replay store could not renew a running call's claim; it is tried again, and a copy of the call may run the tool again if it cannot be renewed for a whole lease",
				"lease", r.lease, "error", errorText(err), "suppressed", held)
		}
	}
	at := r.after(wait)
	l := c.list
	l.mu.Lock()
	c.renewing = false
	kept := c.kept
	if kept {
		c.due = at
	}
	l.mu.Unlock()
	if kept {
		r.arm(at)
	}
}

// close stops the timer and the renewals under way, and waits for them.
// Claims kept afterwards are not renewed.
func (r *renewals) close() {
	r.mu.Lock()
	r.closed = true
	if r.timer != nil {
		r.timer.Stop()
	}
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
}
