package catalog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/pgstore"
)

// DatabaseURLEnv is the environment variable that switches the demo to
// PostgreSQL, e.g. postgres://app:secret@localhost:5432/shop: the replay
// store and the orders are kept there, and cancel_order cancels inside its
// call's transaction (docs/PROTOCOL.md §8.1).
const DatabaseURLEnv = "DATABASE_URL"

// ordersTable is where the Postgres mode keeps cancelled orders (every
// other id is processing), beside the replay store's table.
var ordersTable = pgx.Identifier{pgstore.DefaultSchema, "demo_orders"}.Sanitize()

// ordersLock is the advisory lock the demo's migration holds, so that
// instances starting at once create its table once (an arbitrary
// constant).
const ordersLock int64 = 0x6d656469616e6f72

// dbTimeout bounds the demo's own queries outside a tool call (the order
// routes of the examples) and pgx's dial; the core bounds the store's.
const dbTimeout = 2 * time.Second

// newPostgres connects to url, runs the migrations (the replay store's
// table and the demo's orders table, each under an advisory lock, so two
// instances starting at once both come up) and returns the store and the
// pool.
func newPostgres(url string) (protocol.Store, *pgxpool.Pool, error) {
	if !strings.HasPrefix(url, "postgres://") && !strings.HasPrefix(url, "postgresql://") {
		return nil, nil, fmt.Errorf("%s must be a postgres:// URL (postgres://user:password@host:5432/db)", DatabaseURLEnv)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, nil, fmt.Errorf("%s is not a PostgreSQL URL: %w", DatabaseURLEnv, err)
	}
	cfg.ConnConfig.ConnectTimeout = dbTimeout
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (protocol.Store, *pgxpool.Pool, error) {
		pool.Close()
		return nil, nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		return fail(fmt.Errorf("PostgreSQL at %s:%d does not answer (check %s): %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, DatabaseURLEnv, err))
	}
	if err := pgstore.Migrate(ctx, pool, pgstore.Options{}); err != nil {
		return fail(err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", ordersLock); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+ordersTable+
			" (order_id text PRIMARY KEY, status text NOT NULL, changed_at timestamptz NOT NULL DEFAULT now())")
		return err
	})
	if err != nil {
		return fail(fmt.Errorf("could not create the demo's orders table %s: %w", ordersTable, err))
	}
	store, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		return fail(err)
	}
	return store, pool, nil
}

// newTableOrders returns an order state kept in pool's orders table.
func newTableOrders(pool *pgxpool.Pool) *Orders {
	return &Orders{pool: pool}
}

// tableStatus reads the status of id from the orders table, through
// pgstore.Querier: in the call's transaction when the tool on ctx has begun
// one (it then sees its own writes, on the connection it holds), on the
// pool otherwise.
func (o *Orders) tableStatus(ctx context.Context, id string) (string, error) {
	var status string
	err := pgstore.Querier(ctx, o.pool).QueryRow(ctx, "SELECT status FROM "+ordersTable+" WHERE order_id = $1", id).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return StatusProcessing, nil
	}
	if err != nil {
		return "", fmt.Errorf("could not read order %s: %w", id, err)
	}
	return status, nil
}

// tableCancelled counts the cancelled orders in the orders table.
func (o *Orders) tableCancelled(ctx context.Context) (int, error) {
	var n int
	if err := pgstore.Querier(ctx, o.pool).QueryRow(ctx, "SELECT count(*) FROM "+ordersTable+" WHERE status = $1", StatusCancelled).Scan(&n); err != nil {
		return 0, fmt.Errorf("could not count the cancelled orders: %w", err)
	}
	return n, nil
}

// tableCancel cancels id in the orders table: inside the call's
// transaction when the call has one (pgstore.Tx begins it), so the
// cancellation commits with the answer that reports it; on the pool
// otherwise (a call answered through the middleware, the order routes).
// Of concurrent cancels of one order, one inserts the row and the others,
// waiting for its commit, find it.
func (o *Orders) tableCancel(ctx context.Context, id string) error {
	var db pgstore.DBTX = o.pool
	if tx, ok := pgstore.Tx(ctx); ok {
		db = tx
	}
	tag, err := db.Exec(ctx, "INSERT INTO "+ordersTable+" (order_id, status) VALUES ($1, $2) ON CONFLICT (order_id) DO NOTHING", id, StatusCancelled)
	if err != nil {
		return fmt.Errorf("could not cancel order %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return &AlreadyCancelledError{OrderID: id}
	}
	return nil
}
