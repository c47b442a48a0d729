package pgstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/internal/testonly/pgtest"
	"github.com/median-go/median/internal/testonly/testsupport"
	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/pgstore"
	"github.com/median-go/median/protocol/storetest"
)

// smallPool returns a pool of at most two connections on url, closed when
// t ends.
func smallPool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// shop is the application of the pool tests: orders read through the
// app's own pool, notes written in the call's transaction.
type shop struct {
	pool          *pgxpool.Pool
	looks, writes atomic.Int64
}

func newShop(t *testing.T, pool *pgxpool.Pool) *shop {
	t.Helper()
	_, err := pool.Exec(context.Background(), `CREATE TABLE orders (id text PRIMARY KEY, status text NOT NULL);
		CREATE TABLE notes (tool_call_id text PRIMARY KEY, order_id text NOT NULL)`)
	require.NoError(t, err)
	return &shop{pool: pool}
}

// lookupOrder reads through the pool itself, as an application's code
// does (examples/catalog did; the call holds no connection meanwhile).
func (s *shop) lookupOrder() *protocol.Tool {
	return protocol.NewTool("lookup_order", protocol.RiskLow, "Looks an order up.",
		func(ctx context.Context, call protocol.ToolCall[cancelInput]) (map[string]string, error) {
			s.looks.Add(1)
			var status string
			err := s.pool.QueryRow(ctx, "SELECT coalesce((SELECT status FROM orders WHERE id = $1), 'processing')", call.Input.OrderID).Scan(&status)
			if err != nil {
				return nil, err
			}
			return map[string]string{"orderId": call.Input.OrderID, "status": status}, nil
		})
}

// noteOrder writes in its call's transaction, then reads through Querier,
// which gives that transaction: it sees its own write, and takes no second
// connection.
func (s *shop) noteOrder() *protocol.Tool {
	return protocol.NewTool("note_order", protocol.RiskLow, "Notes an order.",
		func(ctx context.Context, call protocol.ToolCall[cancelInput]) (map[string]any, error) {
			s.writes.Add(1)
			tx, ok := pgstore.Tx(ctx)
			if !ok {
				return nil, fmt.Errorf("no transaction")
			}
			if _, err := tx.Exec(ctx, "INSERT INTO notes VALUES ($1, $2)", call.ToolCallID, call.Input.OrderID); err != nil {
				return nil, err
			}
			var n int
			if err := pgstore.Querier(ctx, s.pool).QueryRow(ctx, "SELECT count(*) FROM notes WHERE order_id = $1", call.Input.OrderID).Scan(&n); err != nil {
				return nil, err
			}
			return map[string]any{"orderId": call.Input.OrderID, "notes": n}, nil
		})
}

// TestSmallPoolServesEveryCall: on a pool of two connections shared by the
// store and the tools, 16 calls of a tool reading through the pool and 16
// of one writing in its transaction, each sent to two Handlers at once,
// are all answered with what the tool returned, each tool runs once per
// call, and nothing is left holding a connection.
func TestSmallPoolServesEveryCall(t *testing.T) {
	srv := pgtest.Start(t)
	pool := smallPool(t, srv.URL)
	s := newShop(t, pool)
	store := newStore(t, pool, freshTable(t, pool))
	handlers := make([]*protocol.Handler, 2)
	for i := range handlers {
		h, err := protocol.New(protocol.Config{
			Keys:  []string{storetest.Key},
			Store: store,
			// Generous: the test is that every call gets a connection in
			// the end, on a machine that may be slow, not how fast.
			StoreTimeout: 10 * time.Second,
			Logger:       slog.New(slog.DiscardHandler),
			Tools:        []*protocol.Tool{s.lookupOrder(), s.noteOrder()},
		})
		require.NoError(t, err)
		handlers[i] = h
	}
	const calls = 16
	type sent struct {
		want    string
		answers [2]string
	}
	var all []*sent
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range calls {
		for _, tool := range []string{"lookup_order", "note_order"} {
			order := fmt.Sprintf("%s-%d", tool, i)
			c := &sent{want: fmt.Sprintf(`{"result":{"orderId":%q,"status":"processing"}}`, order)}
			if tool == "note_order" {
				c.want = fmt.Sprintf(`{"result":{"notes":1,"orderId":%q}}`, order)
			}
			all = append(all, c)
			req := signed(t, tool, storetest.NewID(), cancelInput{OrderID: order})
			for k, h := range handlers {
				wg.Go(func() {
					<-start
					c.answers[k] = string(serve(h, req).Body)
				})
			}
		}
	}
	close(start)
	wg.Wait()
	for _, c := range all {
		for k := range c.answers {
			assert.JSONEq(t, c.want, c.answers[k], "handler %d", k)
		}
		assert.Equal(t, c.answers[0], c.answers[1], "both copies get the same bytes")
	}
	assert.Equal(t, int64(calls), s.looks.Load(), "each read ran once")
	assert.Equal(t, int64(calls), s.writes.Load(), "each write ran once")
	var notes int
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM notes").Scan(&notes))
	assert.Equal(t, calls, notes, "each write committed once")
	requireNothingHeld(t, pool)
}

// requireNothingHeld checks that no connection of pool is in use and that
// the server holds no transaction and no advisory lock.
func requireNothingHeld(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	require.Zero(t, pool.Stat().AcquiredConns(), "a connection was not given back")
	var open, locks int
	require.NoError(t, pool.QueryRow(context.Background(),
		"SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%'").Scan(&open))
	require.Zero(t, open, "a transaction was left open")
	require.NoError(t, pool.QueryRow(context.Background(),
		"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'").Scan(&locks))
	require.Zero(t, locks, "an advisory lock was left held")
}

// TestExhaustedPoolIsNamed: while two calls hold the only two connections
// in their transactions, a third call cannot claim within the store's
// deadline: it is answered as not carried out, its tool not run, and the
// log and the diagnostics report name the exhausted pool. Once the two
// return, calls run again and nothing is left held.
func TestExhaustedPoolIsNamed(t *testing.T) {
	srv := pgtest.Start(t)
	pool := smallPool(t, srv.URL)
	s := newShop(t, pool)
	entered, release := make(chan struct{}, 2), make(chan struct{})
	hold := protocol.NewTool("hold_order", protocol.RiskLow, "Writes, then waits for the test.",
		func(ctx context.Context, call protocol.ToolCall[cancelInput]) (string, error) {
			tx, _ := pgstore.Tx(ctx)
			if _, err := tx.Exec(ctx, "INSERT INTO notes VALUES ($1, $2)", call.ToolCallID, call.Input.OrderID); err != nil {
				return "", err
			}
			entered <- struct{}{}
			<-release
			return "held", nil
		})
	logs := &testsupport.Buffer{}
	h, err := protocol.New(protocol.Config{
		Keys:         []string{storetest.Key},
		Store:        newStore(t, pool, freshTable(t, pool)),
		StoreTimeout: 300 * time.Millisecond,
		Logger:       slog.New(slog.NewTextHandler(logs, nil)),
		Tools:        []*protocol.Tool{s.noteOrder(), hold},
	})
	require.NoError(t, err)

	held := make(chan protocol.Response, 2)
	for i := range 2 {
		req := signed(t, "hold_order", storetest.NewID(), cancelInput{OrderID: fmt.Sprint("H-", i)})
		go func() { held <- serve(h, req) }()
		<-entered
	}
	require.Equal(t, int32(2), pool.Stat().AcquiredConns(), "both connections are in the two calls' transactions")

	resp := serve(h, signed(t, "note_order", storetest.NewID(), cancelInput{OrderID: "N-1"}))
	assert.Equal(t, protocol.CodeExecutionFailed, codeOf(resp), "%s", resp.Body)
	assert.Contains(t, string(resp.Body), "the tool was not run and nothing was changed")
	assert.Zero(t, s.writes.Load(), "the tool did not run")
	assert.Contains(t, logs.String(), "replay store failed; the tool was not run")
	assert.Contains(t, logs.String(), "connection pool exhausted: no connection was free within 300ms, all 2 of the pool's 2 (MaxConns) were in use")

	report := h.Report(context.Background())
	require.NotNil(t, report.Store.Reachable)
	assert.False(t, *report.Store.Reachable, "the store cannot serve a call now")
	assert.Contains(t, report.Store.Problem, "connection pool exhausted", "the report names the cause")
	assert.Equal(t, int64(1), report.Store.ClaimFailures)
	raw, err := json.Marshal(report)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), "127.0.0.1", "no address in the report")

	close(release)
	for range 2 {
		assert.Equal(t, `{"result":"held"}`, string((<-held).Body))
	}
	resp = serve(h, signed(t, "note_order", storetest.NewID(), cancelInput{OrderID: "N-2"}))
	assert.JSONEq(t, `{"result":{"notes":1,"orderId":"N-2"}}`, string(resp.Body), "calls run again")
	report = h.Report(context.Background())
	assert.True(t, *report.Store.Reachable)
	assert.Empty(t, report.Store.Problem)
	requireNothingHeld(t, pool)
}

// TestTxCannotBegin: when the tool asks for its transaction and no
// connection is free within the store's deadline, its statements fail
// with the exhausted pool; a tool that returns that error has its
// answer kept (nothing was written), one that returns a result all the
// same is answered as not carried out and its claim does not hold a copy.
func TestTxCannotBegin(t *testing.T) {
	srv := pgtest.Start(t)
	pool := smallPool(t, srv.URL)
	s := newShop(t, pool)
	opts := freshTable(t, pool)
	var runs atomic.Int64
	tool := protocol.NewTool("note_order", protocol.RiskLow, "Notes an order.",
		func(ctx context.Context, call protocol.ToolCall[cancelInput]) (string, error) {
			runs.Add(1)
			// Both connections are taken by the test from here on.
			blockers := make([]*pgxpool.Conn, 0, 2)
			for range 2 {
				c, err := pool.Acquire(ctx)
				require.NoError(t, err)
				blockers = append(blockers, c)
			}
			defer func() {
				for _, c := range blockers {
					c.Release()
				}
			}()
			tx, ok := pgstore.Tx(ctx)
			require.True(t, ok)
			_, err := tx.Exec(ctx, "INSERT INTO notes VALUES ($1, $2)", call.ToolCallID, call.Input.OrderID)
			require.ErrorIs(t, err, pgstore.ErrPoolExhausted)
			require.Nil(t, tx.Conn())
			require.ErrorIs(t, tx.QueryRow(ctx, "SELECT 1").Scan(new(int)), pgstore.ErrPoolExhausted)
			same, _ := pgstore.Tx(ctx)
			_, again := same.Exec(ctx, "SELECT 1")
			require.Equal(t, err, again, "the transaction is asked for once")
			require.Equal(t, pgstore.DBTX(pool), pgstore.Querier(ctx, pool), "with no transaction, Querier gives the pool")
			if call.Input.Then == "error" {
				return "", err
			}
			return "noted", nil
		})
	h, err := protocol.New(protocol.Config{
		Keys: []string{storetest.Key}, Store: newStore(t, pool, opts), StoreTimeout: 300 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler), Tools: []*protocol.Tool{tool},
	})
	require.NoError(t, err)

	req := signed(t, "note_order", storetest.NewID(), cancelInput{OrderID: "N-1", Then: "error"})
	first := serve(h, req)
	assert.Equal(t, protocol.CodeExecutionFailed, codeOf(first), "%s", first.Body)
	assert.Equal(t, string(first.Body), string(serve(h, req).Body), "the tool's error is kept")
	assert.Equal(t, int64(1), runs.Load())

	id := storetest.NewID()
	req = signed(t, "note_order", id, cancelInput{OrderID: "N-2"})
	resp := serve(h, req)
	assert.Contains(t, string(resp.Body), "rolled back and nothing was changed", "a result whose writes could not happen is not sent")
	key := sha256.Sum256([]byte(id))
	assert.Zero(t, rows(t, pool, opts, "call_key = $1", hex.EncodeToString(key[:])), "no answer is kept for it, and no claim holds")
	_ = serve(h, req)
	assert.Equal(t, int64(3), runs.Load(), "a copy runs it again")
	requireNothingHeld(t, pool)
	assert.Zero(t, s.writes.Load())
}

// TestQuerier: outside a call, and in a call whose tool has not begun its
// transaction, Querier gives the pool; once the tool has begun it, the
// transaction; after the tool returned, the pool again.
func TestQuerier(t *testing.T) {
	srv := pgtest.Start(t)
	pool := newPool(t, srv.URL)
	s := newStore(t, pool, freshTable(t, pool))
	ctx := context.Background()
	require.Equal(t, pgstore.DBTX(pool), pgstore.Querier(ctx, pool))
	var during context.Context
	st, _, err := s.RunClaimed(ctx, newKey(t), "fp", time.Minute, time.Minute, time.Second, func(ctx context.Context) ([]byte, bool) {
		during = ctx
		require.Equal(t, pgstore.DBTX(pool), pgstore.Querier(ctx, pool), "not begun: the pool")
		tx, ok := pgstore.Tx(ctx)
		require.True(t, ok)
		q := pgstore.Querier(ctx, pool)
		require.Equal(t, pgstore.DBTX(tx), q, "begun: the transaction")
		_, err := q.Exec(ctx, "CREATE TEMP TABLE during_the_call (x int) ON COMMIT DROP")
		require.NoError(t, err)
		var n int
		require.NoError(t, q.QueryRow(ctx, "SELECT count(*) FROM during_the_call").Scan(&n), "the next statement runs in the same transaction")
		return []byte(`{"result":1}`), true
	})
	require.NoError(t, err)
	require.Equal(t, protocol.ClaimAcquired, st)
	require.Equal(t, pgstore.DBTX(pool), pgstore.Querier(during, pool), "after the tool returned: the pool")
	late, ok := pgstore.Tx(during)
	require.True(t, ok)
	_, err = late.Exec(ctx, "SELECT 1")
	require.ErrorContains(t, err, "its transaction is over", "a transaction asked for after the tool returned")
	var n int
	err = pool.QueryRow(ctx, "SELECT count(*) FROM during_the_call").Scan(&n)
	require.Error(t, err, "the temporary table went with the transaction's commit")
	_, isTx := pgstore.Querier(during, pool).(pgx.Tx)
	require.False(t, isTx)
}

// TestSessionIsGivenBack: the call's transaction is ended by the server
// when left idle longer than the answer's TTL, and its connection goes back
// to the pool as the application set it up, with no lock held.
func TestSessionIsGivenBack(t *testing.T) {
	srv := pgtest.Start(t)
	cfg, err := pgxpool.ParseConfig(srv.URL)
	require.NoError(t, err)
	cfg.MaxConns = 1 // the call's connection is the one the test reads afterwards
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "SET idle_in_transaction_session_timeout = '42s'")
		return err
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	defer pool.Close()
	s := newStore(t, pool, freshTable(t, pool))
	ctx := context.Background()
	for _, commit := range []bool{true, false} {
		_, _, err = s.RunClaimed(ctx, newKey(t), "fp", time.Minute, 3*time.Minute, time.Second, func(ctx context.Context) ([]byte, bool) {
			tx, _ := pgstore.Tx(ctx)
			var during string
			require.NoError(t, tx.QueryRow(ctx, "SHOW idle_in_transaction_session_timeout").Scan(&during))
			require.Equal(t, "3min", during, "the tool's transaction ends when idle longer than the TTL")
			return []byte(`{"result":1}`), commit
		})
		require.NoError(t, err)
		var after string
		require.NoError(t, pool.QueryRow(ctx, "SHOW idle_in_transaction_session_timeout").Scan(&after))
		require.Equal(t, "42s", after, "the session's own setting is back (commit %v)", commit)
		requireNothingHeld(t, pool)
	}
}
