package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/median-go/median/internal/testonly/pgtest"
	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/pgstore"
	"github.com/median-go/median/protocol/storetest"
)

func TestMain(m *testing.M) {
	if instanceMain() { // a child process of the crash test
		return
	}
	goleak.VerifyTestMain(m)
}

// newPool returns a pool on srv's database, closed when t ends.
func newPool(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.MaxConns = 16
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// freshTable returns Options naming a table no other test uses, created by
// Migrate on pool.
func freshTable(t testing.TB, pool *pgxpool.Pool) pgstore.Options {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	opts := pgstore.Options{Schema: "median_test", Table: "calls_" + hex.EncodeToString(b[:])}
	require.NoError(t, pgstore.Migrate(context.Background(), pool, opts))
	return opts
}

func newStore(t testing.TB, pool *pgxpool.Pool, opts pgstore.Options) *pgstore.Store {
	t.Helper()
	s, err := pgstore.New(pool, opts)
	require.NoError(t, err)
	return s
}

func TestStoreBehaviour(t *testing.T) {
	srv := pgtest.Start(t)
	pool := newPool(t, srv.URL)
	storetest.Run(t, func(t *testing.T) protocol.Store {
		return newStore(t, pool, freshTable(t, pool))
	})
}

func TestTwoInstances(t *testing.T) {
	// Two instances: each its own pool (its own connections) and store, on
	// one database and one table. Their Handlers run the tool through
	// RunClaimed (one transaction per call).
	srv := pgtest.Start(t)
	a, b := newPool(t, srv.URL), newPool(t, srv.URL)
	storetest.RunHandlers(t, func(t *testing.T) (protocol.Store, protocol.Store) {
		opts := freshTable(t, a)
		return newStore(t, a, opts), newStore(t, b, opts)
	})
}

// plainStore hides RunClaimed, so the Handler uses Claim and Save.
type plainStore struct{ protocol.Store }

func TestTwoInstancesClaimAndSave(t *testing.T) {
	srv := pgtest.Start(t)
	a, b := newPool(t, srv.URL), newPool(t, srv.URL)
	storetest.RunHandlers(t, func(t *testing.T) (protocol.Store, protocol.Store) {
		opts := freshTable(t, a)
		return plainStore{newStore(t, a, opts)}, plainStore{newStore(t, b, opts)}
	})
}

func TestMigrateIsIdempotentAndConcurrent(t *testing.T) {
	srv := pgtest.Start(t)
	pool := newPool(t, srv.URL)
	opts := pgstore.Options{Schema: `odd "schema"`, Table: `calls; DROP TABLE x`}
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = pgstore.Migrate(context.Background(), pool, opts) })
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "Migrate %d of %d at once", i+1, n)
	}
	require.NoError(t, pgstore.Migrate(context.Background(), pool, opts), "Migrate again")
	var count int
	require.NoError(t, pool.QueryRow(context.Background(),
		"SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename = $2", opts.Schema, opts.Table).Scan(&count))
	require.Equal(t, 1, count, "the table exists under the names given, quoted")
	s := newStore(t, pool, opts)
	require.NoError(t, s.Probe(context.Background()))
	require.Equal(t, "postgres", s.Kind())

	missing := newStore(t, pool, pgstore.Options{Table: "never_migrated"})
	require.ErrorContains(t, missing.Probe(context.Background()), `"median"."never_migrated"`)
}

func TestMigrationSQLNamesTheTable(t *testing.T) {
	sql := pgstore.MigrationSQL(pgstore.Options{Schema: "app", Table: "median_calls"})
	require.Contains(t, sql, `CREATE TABLE IF NOT EXISTS "app"."median_calls"`)
	require.Contains(t, sql, `CREATE SCHEMA IF NOT EXISTS "app"`)
	require.Contains(t, sql, `"median_calls_expires_at_idx" ON "app"."median_calls"`)
	require.NotContains(t, sql, `"median"."calls"`)
	def := pgstore.MigrationSQL(pgstore.Options{})
	require.Contains(t, def, `CREATE TABLE IF NOT EXISTS "median"."calls"`)
}

func TestBadArguments(t *testing.T) {
	_, err := pgstore.New(nil, pgstore.Options{})
	require.ErrorContains(t, err, "nil")
	require.ErrorContains(t, pgstore.Migrate(context.Background(), nil, pgstore.Options{}), "nil")
	pool, err := pgxpool.New(context.Background(), "postgres://127.0.0.1:1/x")
	require.NoError(t, err)
	defer pool.Close()
	s := newStore(t, pool, pgstore.Options{})
	_, _, err = s.Claim(context.Background(), "not hex", "fp", time.Minute)
	require.ErrorContains(t, err, "hex")
	_, _, err = s.Claim(context.Background(), "0123456789abcdef0123", "", time.Minute)
	require.ErrorContains(t, err, "fingerprint")
	_, _, err = s.Claim(context.Background(), "0123456789abcdef0123", "fp", 0)
	require.ErrorContains(t, err, "lease")
	_, err = s.Save(context.Background(), "0123456789abcdef0123", "fp", nil, 0)
	require.ErrorContains(t, err, "TTL")
	_, err = pgstore.New(pool, pgstore.Options{Table: "a\x00b"})
	require.ErrorContains(t, err, "NUL")
}

// tableName is opts' table, quoted, with its schema.
func tableName(opts pgstore.Options) string {
	return pgx.Identifier{opts.Schema, opts.Table}.Sanitize()
}

// rows counts the rows of opts' table.
func rows(t testing.TB, pool *pgxpool.Pool, opts pgstore.Options, where string, args ...any) int {
	t.Helper()
	var n int
	q := "SELECT count(*) FROM " + tableName(opts)
	if where != "" {
		q += " WHERE " + where
	}
	require.NoError(t, pool.QueryRow(context.Background(), q, args...).Scan(&n))
	return n
}

// TestTheServerGivesUpToo: the store sets the deadline as the
// transaction's lock and statement timeouts, so PostgreSQL itself stops
// waiting: a Claim on a locked table, with no deadline on its context at
// all, fails within the 1 s fallback with the server's own timeout.
func TestTheServerGivesUpToo(t *testing.T) {
	srv := pgtest.Start(t)
	pool := newPool(t, srv.URL)
	opts := freshTable(t, pool)
	s := newStore(t, pool, opts)
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, "LOCK TABLE "+tableName(opts)+" IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)

	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, _, err := s.Claim(ctx, "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", "fp", time.Minute)
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		require.NoError(t, tx.Rollback(ctx)) // lets the claim end
		t.Fatal("the claim was still waiting after 20s: the server never gave up")
	}
	took := time.Since(start)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr, "the server ended the wait")
	require.Contains(t, []string{"55P03", "57014"}, pgErr.Code, "lock_timeout (lock_not_available) or statement_timeout (query_canceled)")
	require.Less(t, took, 5*time.Second)
	t.Logf("a claim on a locked table failed after %s: %s", took.Round(time.Millisecond), pgErr.Message)
}
