package pgstore_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/internal/testonly/pgtest"
	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/pgstore"
	"github.com/median-go/median/protocol/storetest"
)

// countingConn counts the writes to the server: pgx sends each query (and
// each simple query of many statements) in one write, then waits for the
// answer, so a write is a round trip.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// wrappedPool is a pool on url whose connections are wrap of the dialled
// ones, closed when t ends.
func wrappedPool(t *testing.T, url string, minConns int32, wrap func(net.Conn) net.Conn) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.MinConns = minConns
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return wrap(c), nil
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

func TestRoundTripsPerCall(t *testing.T) {
	srv := pgtest.Start(t)
	var writes atomic.Int64
	pool := wrappedPool(t, srv.URL, 1, func(c net.Conn) net.Conn { return countingConn{c, &writes} })
	s := newStore(t, pool, freshTable(t, pool))
	ctx := context.Background()
	key := "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	fp := "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	_, _, err := s.Claim(ctx, key, fp, time.Minute) // opens the connection
	require.NoError(t, err)

	measure := func(what string, want int64, fn func()) {
		t.Helper()
		before := writes.Load()
		fn()
		require.Equal(t, want, writes.Load()-before, "%s: round trips", what)
	}
	measure("Claim of a running call", 1, func() {
		st, _, err := s.Claim(ctx, key, fp, time.Minute)
		require.NoError(t, err)
		require.Equal(t, protocol.ClaimRunning, st)
	})
	measure("Save", 1, func() {
		_, err := s.Save(ctx, key, fp, []byte(`{"result":1}`), time.Minute)
		require.NoError(t, err)
	})
	measure("Claim of a kept answer", 1, func() {
		st, _, err := s.Claim(ctx, key, fp, time.Minute)
		require.NoError(t, err)
		require.Equal(t, protocol.ClaimDone, st)
	})

	h, err := protocol.New(protocol.Config{
		Keys: []string{storetest.Key}, Store: s, Logger: slog.New(slog.DiscardHandler),
		Tools: []*protocol.Tool{
			protocol.NewTool("lookup_order", protocol.RiskLow, "Looks an order up.",
				func(ctx context.Context, c protocol.ToolCall[cancelInput]) (string, error) { return "processing", nil }),
			protocol.NewTool("note_order", protocol.RiskLow, "Writes a note in the call's transaction.",
				func(ctx context.Context, c protocol.ToolCall[cancelInput]) (string, error) {
					tx, _ := pgstore.Tx(ctx)
					_, err := tx.Exec(ctx, "SELECT 1") // one round trip of the tool's own (no arguments: nothing to prepare)
					return "noted", err
				}),
		},
	})
	require.NoError(t, err)
	req := signed(t, "lookup_order", storetest.NewID(), cancelInput{OrderID: "A-1001"})
	measure("a new call whose tool does not ask for its transaction (claim, save)", 2, func() {
		require.Equal(t, `{"result":"processing"}`, string(serve(h, req).Body))
	})
	measure("a repeat of it (claim)", 1, func() {
		require.Equal(t, `{"result":"processing"}`, string(serve(h, req).Body))
	})
	req = signed(t, "note_order", storetest.NewID(), cancelInput{OrderID: "A-1001"})
	measure("a new call whose tool writes in its transaction (claim, hold, begin, the tool's statement, keep and commit)", 5, func() {
		require.Equal(t, `{"result":"noted"}`, string(serve(h, req).Body))
	})
	measure("a repeat of it (claim)", 1, func() {
		require.Equal(t, `{"result":"noted"}`, string(serve(h, req).Body))
	})
}

func BenchmarkServePgStore(b *testing.B) {
	srv := pgtest.Start(b)
	pool := newPool(b, srv.URL)
	storetest.BenchmarkServe(b, newStore(b, pool, freshTable(b, pool)))
}

func BenchmarkServePgStoreClaimAndSave(b *testing.B) {
	srv := pgtest.Start(b)
	pool := newPool(b, srv.URL)
	storetest.BenchmarkServe(b, plainStore{newStore(b, pool, freshTable(b, pool))})
}

// TestRowSizeAndSweep: what a kept answer costs the database, and that
// expired rows go by themselves as answers are saved.
func TestRowSizeAndSweep(t *testing.T) {
	srv := pgtest.Start(t)
	pool := newPool(t, srv.URL)
	opts := freshTable(t, pool)
	s := newStore(t, pool, opts)
	ctx := context.Background()
	answer := []byte(`{"result":"` + strings.Repeat("x", 87) + `"}`) // 100 bytes
	require.Len(t, answer, 100)
	const n = 2000
	save := func(i int, ttl time.Duration) {
		key := fmt.Sprintf("%064x", i)
		st, _, err := s.Claim(ctx, key, "fp", time.Minute)
		require.NoError(t, err)
		require.Equal(t, protocol.ClaimAcquired, st)
		_, err = s.Save(ctx, key, "fp", answer, ttl)
		require.NoError(t, err)
	}
	for i := range n {
		save(i, time.Minute)
	}
	var size int64
	table := tableName(opts)
	_, err := pool.Exec(ctx, "VACUUM FULL "+table) // the live rows only, without the versions each save leaves behind
	require.NoError(t, err)
	require.NoError(t, pool.QueryRow(ctx, "SELECT pg_total_relation_size($1::regclass)", table).Scan(&size))
	perRow := size / int64(rows(t, pool, opts, ""))
	t.Logf("a row with a 100-byte answer costs %d bytes, table and indexes", perRow)
	require.Less(t, perRow, int64(600))

	const expiring = 1000
	for i := range expiring {
		save(n+i, time.Minute)
	}
	// Their TTL is over (set here rather than waited for: the saves above
	// would sweep each other).
	_, err = pool.Exec(ctx, "UPDATE "+table+" SET expires_at = now() - interval '1 second' WHERE call_key >= $1", fmt.Sprintf("%064x", n))
	require.NoError(t, err)
	require.Equal(t, expiring, rows(t, pool, opts, "expires_at < now()"))
	for i := range 200 {
		save(2*n+i, time.Minute)
	}
	require.Equal(t, expiring-200*4, rows(t, pool, opts, "expires_at < now()"), "each save removed four expired rows")
	for i := range 50 {
		save(3*n+i, time.Minute)
	}
	require.Zero(t, rows(t, pool, opts, "expires_at < now()"), "every expired row is gone")
	require.Equal(t, n+250, rows(t, pool, opts, ""), "live rows stay")
}

// commitBreaker is a connection that, once armed, loses the reply to the
// round trip that ends a call's transaction (the only one that releases
// the call's advisory lock): it reads the server's whole reply, up to the
// ReadyForQuery that ends it, so the server has committed and has nothing
// more to send, then closes and tells pgx the connection broke.
type commitBreaker struct {
	net.Conn
	armed *atomic.Bool
	cut   bool // the round trip was sent: its reply is to be lost
}

func (c *commitBreaker) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err == nil && c.armed.Load() && bytes.Contains(b, []byte("COMMIT\x00")) && bytes.Contains(b, []byte("pg_advisory_unlock")) {
		c.armed.Store(false)
		c.cut = true
	}
	return n, err
}

func (c *commitBreaker) Read(b []byte) (int, error) {
	if !c.cut {
		return c.Conn.Read(b)
	}
	var reply []byte
	buf := make([]byte, 4096)
	for !bytes.Contains(reply, []byte("Z\x00\x00\x00\x05I")) { // ReadyForQuery, idle: the COMMIT is done
		n, err := c.Conn.Read(buf)
		reply = append(reply, buf[:n]...)
		if err != nil {
			break
		}
	}
	_ = c.Conn.Close()
	return 0, io.ErrUnexpectedEOF
}

func TestLostCommitReplyIsChecked(t *testing.T) {
	// The COMMIT reached the server but its reply was lost: the store asks
	// again on another connection, finds the answer kept, and the call is
	// answered with its result, which is what happened.
	b := newBench(t)
	var armed atomic.Bool
	pool := wrappedPool(t, b.srv.URL, 0, func(c net.Conn) net.Conn { return &commitBreaker{Conn: c, armed: &armed} })
	h, err := protocol.New(protocol.Config{
		Keys: []string{storetest.Key}, Store: newStore(t, pool, b.opts), Logger: slog.New(slog.DiscardHandler),
		Tools: []*protocol.Tool{b.cancelOrder()},
	})
	require.NoError(t, err)

	id := storetest.NewID()
	req := signed(t, "cancel_order", id, cancelInput{OrderID: "A-1001"})
	armed.Store(true)
	resp := serve(h, req)
	require.False(t, armed.Load(), "the commit's reply was cut")
	require.Contains(t, string(resp.Body), `"status":"cancelled"`, "the commit happened, so the result goes out: %s", resp.Body)
	require.Equal(t, 1, b.cancellations(t, id))
	pool.Reset() // the cut connection may still sit in the pool
	require.Equal(t, string(resp.Body), string(serve(h, req).Body), "and it is the kept answer")
	require.Equal(t, int64(1), b.runs.Load())
}
