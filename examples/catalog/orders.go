package catalog

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The statuses an order can have in the demo.
const (
	StatusProcessing = "processing"
	StatusCancelled  = "cancelled"
)

// MaxCancelledOrders bounds the memory the demo uses: once this many orders
// are cancelled, further cancels fail until the process restarts.
const MaxCancelledOrders = 100_000

// MissingOrderID is the one order id the demo does not know: looking it up
// or cancelling it fails with "order missing not found".
const MissingOrderID = "missing"

// NotFoundError is the error for an order the demo does not know. Its
// message, "order <id> not found", is what the agent reads.
type NotFoundError struct{ OrderID string }

// Error returns "order <id> not found".
func (e *NotFoundError) Error() string { return "order " + e.OrderID + " not found" }

// AlreadyCancelledError is the error for cancelling an order twice. Its
// message, "order <id> is already cancelled", is what the agent reads.
type AlreadyCancelledError struct{ OrderID string }

// Error returns "order <id> is already cancelled".
func (e *AlreadyCancelledError) Error() string {
	return "order " + e.OrderID + " is already cancelled"
}

// Orders is the demo's order state, kept in memory (or, in the Postgres
// mode, in a table: postgres.go) and safe for concurrent use. Every order
// id exists and is processing until it is cancelled, except
// MissingOrderID, which does not exist.
type Orders struct {
	mu        sync.Mutex
	cancelled map[string]bool
	pool      *pgxpool.Pool // the Postgres mode's database, nil in memory
}

// NewOrders returns an order state in which no order is cancelled.
func NewOrders() *Orders {
	return &Orders{cancelled: make(map[string]bool)}
}

// Status returns the status of the order id, or a *NotFoundError.
func (o *Orders) Status(id string) (string, error) {
	return o.status(context.Background(), id)
}

// status is Status on ctx: in the Postgres mode, inside the transaction of
// the tool call on ctx when its tool has begun one, on the pool otherwise.
func (o *Orders) status(ctx context.Context, id string) (string, error) {
	if id == MissingOrderID {
		return "", &NotFoundError{OrderID: id}
	}
	if o.pool != nil {
		ctx, cancel := context.WithTimeout(ctx, dbTimeout)
		defer cancel()
		return o.tableStatus(ctx, id)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cancelled[id] {
		return StatusCancelled, nil
	}
	return StatusProcessing, nil
}

// Cancelled returns how many orders are cancelled, and how many can be
// (MaxCancelledOrders in memory; 0, no limit, in the Postgres mode, which
// counts its orders table under ctx).
func (o *Orders) Cancelled(ctx context.Context) (n, limit int, err error) {
	if o.pool != nil {
		n, err = o.tableCancelled(ctx)
		return n, 0, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.cancelled), MaxCancelledOrders, nil
}

// Cancel cancels the order id. It returns an *AlreadyCancelledError when the
// order was cancelled before and a *NotFoundError for an unknown order.
// Exactly one of any number of concurrent cancels of the same order succeeds.
func (o *Orders) Cancel(id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), dbTimeout)
	defer cancel()
	return o.cancel(ctx, id)
}

// cancel is Cancel on ctx: in the Postgres mode, inside the transaction of
// the tool call on ctx, if any.
func (o *Orders) cancel(ctx context.Context, id string) error {
	if id == MissingOrderID {
		return &NotFoundError{OrderID: id}
	}
	if o.pool != nil {
		return o.tableCancel(ctx, id)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cancelled[id] {
		return &AlreadyCancelledError{OrderID: id}
	}
	if len(o.cancelled) >= MaxCancelledOrders {
		return fmt.Errorf("the demo keeps at most %d cancelled orders; restart it to cancel more", MaxCancelledOrders)
	}
	o.cancelled[id] = true
	return nil
}
