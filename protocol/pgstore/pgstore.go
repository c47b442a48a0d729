package pgstore

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/median-go/median/protocol"
)

// DefaultSchema is the schema of the store's table when [Options.Schema]
// is empty.
const DefaultSchema = "median"

// DefaultTable is the store's table when [Options.Table] is empty.
const DefaultTable = "calls"

// sweepPerSave is how many expired rows each saved answer removes at most:
// more than the one row a call adds, so the table never grows past what
// the TTL keeps, and a bounded amount of work per call.
const sweepPerSave = 4

// Options configures [New], [Migrate] and [MigrationSQL]. The zero value is
// ready to use: table "median"."calls".
type Options struct {
	// Schema holds the table; default "median". Any name: it is quoted as
	// an identifier.
	Schema string
	// Table is the table's name; default "calls". Give each endpoint its
	// own table when several share one database.
	Table string
}

func (o Options) withDefaults() Options {
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	if o.Table == "" {
		o.Table = DefaultTable
	}
	return o
}

// check refuses names PostgreSQL cannot hold.
func (o Options) check() error {
	o = o.withDefaults()
	for _, n := range []string{o.Schema, o.Table} {
		if strings.IndexByte(n, 0) >= 0 || !utf8.ValidString(n) || len(n) > 50 {
			return fmt.Errorf("median: pgstore: the name %q must be valid UTF-8 without NUL, at most 50 bytes", n)
		}
	}
	return nil
}

// qualified is the table's name, quoted, with its schema.
func (o Options) qualified() string { return pgx.Identifier{o.Schema, o.Table}.Sanitize() }

// Store is a [protocol.Store] on PostgreSQL. Build it with [New]; it is
// safe for concurrent use, starts no goroutine and holds no resources of
// its own (close the pool when you are done with it).
type Store struct {
	pool  *pgxpool.Pool
	table string // quoted, with its schema
	lock  uint64 // mixed into each call's advisory lock: one table's locks are its own
}

var _ protocol.Store = (*Store)(nil)

// New returns a Store on pool, for the table [Migrate] created with the
// same opts. Pass it as [protocol.Config.Store]. It does not connect: the
// first call does (use [Store.Probe] to check the database at start).
func New(pool *pgxpool.Pool, opts Options) (*Store, error) {
	if pool == nil {
		return nil, errors.New("median: pgstore: the pool is nil")
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	table := opts.qualified()
	h := fnv.New64a()
	_, _ = h.Write([]byte(table))
	return &Store{pool: pool, table: table, lock: h.Sum64()}, nil
}

// Kind names the store for diagnostics: "postgres".
func (s *Store) Kind() string { return "postgres" }

// Probe checks that a connection of the pool can be had and that the
// database answers with the table there: one round trip. When every
// connection of the pool stays in use until ctx ends, its error wraps
// [ErrPoolExhausted] and says so in the diagnostics report.
func (s *Store) Probe(ctx context.Context) error {
	// It stops waiting for a connection before ctx ends, to say why
	// rather than be cut off by the caller's deadline.
	waitCtx := ctx
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithDeadline(ctx, deadline.Add(-time.Until(deadline)/5))
		defer cancel()
	}
	conn, err := s.acquire(waitCtx)
	if err != nil {
		return s.fail(ctx, "reach the table", err)
	}
	defer conn.Release()
	var p pipeline
	p.add("SELECT 1 FROM " + s.table + " LIMIT 0")
	if _, err := p.send(ctx, conn.Conn().PgConn()); err != nil {
		return s.fail(ctx, "reach the table", err)
	}
	return nil
}

// Claim implements [protocol.Store]: one round trip, no waiting; see the
// package documentation.
func (s *Store) Claim(ctx context.Context, key, fingerprint string, lease time.Duration) (protocol.ClaimStatus, []byte, error) {
	c, err := s.call(key, fingerprint)
	if err != nil {
		return 0, nil, err
	}
	if lease < time.Millisecond {
		return 0, nil, fmt.Errorf("median: pgstore: the lease must be at least 1ms, got %s", lease)
	}
	var p pipeline
	p.begin(ctx)
	c.claim(&p, lease)
	p.add("COMMIT")
	results, err := s.send(ctx, &p)
	if err != nil {
		return 0, nil, s.fail(ctx, "claim a call in", err)
	}
	// BEGIN, the timeouts, the INSERT, the SELECT, COMMIT.
	return claimResult(fingerprint, results[2], results[3])
}

// Save implements [protocol.Store]: one round trip. It writes the answer
// unless the call holds an answer already or another body's live claim,
// and removes a few expired rows. It always reports 0 evicted: rows go
// only when their time is up.
func (s *Store) Save(ctx context.Context, key, fingerprint string, answer []byte, ttl time.Duration) (int, error) {
	c, err := s.call(key, fingerprint)
	if err != nil {
		return 0, err
	}
	if ttl < time.Millisecond {
		return 0, fmt.Errorf("median: pgstore: the TTL must be at least 1ms, got %s", ttl)
	}
	var p pipeline
	p.begin(ctx)
	c.save(&p, answer, ttl)
	s.sweep(&p)
	p.add("COMMIT")
	if _, err := s.send(ctx, &p); err != nil {
		return 0, s.fail(ctx, "save an answer in", err)
	}
	return 0, nil
}

// Renew implements [protocol.Store]: one round trip. It extends this
// body's running claim of key to lease from now; an answer, another body's
// claim, a claim whose lease has ended or no row at all is left as it is,
// and Renew returns nil. A claim whose tool holds its transaction ([Tx])
// needs no renewal: it lasts as long as that transaction's connection.
func (s *Store) Renew(ctx context.Context, key, fingerprint string, lease time.Duration) error {
	c, err := s.call(key, fingerprint)
	if err != nil {
		return err
	}
	if lease < time.Millisecond {
		return fmt.Errorf("median: pgstore: the lease must be at least 1ms, got %s", lease)
	}
	var p pipeline
	p.begin(ctx)
	c.renew(&p, lease)
	p.add("COMMIT")
	if _, err := s.send(ctx, &p); err != nil {
		return s.fail(ctx, "renew a claim in", err)
	}
	return nil
}

// send runs p on a connection of the pool: one round trip. The connection
// goes back to the pool, or is closed when the round trip failed half-way
// (the pool does that by itself).
func (s *Store) send(ctx context.Context, p *pipeline) ([]*pgconn.Result, error) {
	conn, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	return p.send(ctx, conn.Conn().PgConn())
}

// acquire takes a connection of the pool before ctx ends. When it cannot
// because every connection stays in use, its error wraps ErrPoolExhausted.
func (s *Store) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	start := time.Now()
	conn, err := s.pool.Acquire(ctx)
	if err == nil {
		return conn, nil
	}
	if st := s.pool.Stat(); ctx.Err() != nil && st.AcquiredConns() >= st.MaxConns() {
		waited := time.Since(start)
		if deadline, ok := ctx.Deadline(); ok {
			waited = deadline.Sub(start) // what it could wait: the deadline as configured
		}
		return nil, &poolExhaustedError{inUse: st.AcquiredConns(), max: st.MaxConns(), waited: waited, err: err}
	}
	return nil, err
}

// ErrPoolExhausted is in the chain of a store error when no connection of
// the pool was free before the store's deadline (protocol.Config
// StoreTimeout): every connection was in use, by this store's calls or by
// the application's own queries on the same pool. The error says how many.
// From a claim, the call was answered execution_failed without running its
// tool (§8); from [Tx], the tool's statements fail with it. Raise the
// pool's MaxConns, or find what holds connections for long: tools that
// keep their call's transaction while they wait on something slow, or code
// that takes a second connection while holding one (use [Querier]).
var ErrPoolExhausted = errors.New("median: pgstore: the connection pool is exhausted")

// poolExhaustedError is the error when no connection of the pool could be
// had in time because every one was in use.
type poolExhaustedError struct {
	inUse, max int32
	waited     time.Duration
	err        error // pgxpool's, the context's end
}

func (e *poolExhaustedError) Error() string { return e.Problem() + " (" + e.err.Error() + ")" }

// Problem says what is wrong in words for the diagnostics report: no
// address, user or database name.
func (e *poolExhaustedError) Problem() string {
	return fmt.Sprintf("connection pool exhausted: no connection was free within %s, all %d of the pool's %d (MaxConns) were in use",
		e.waited.Round(time.Millisecond), e.inUse, e.max)
}

func (e *poolExhaustedError) Is(target error) bool { return target == ErrPoolExhausted }

func (e *poolExhaustedError) Unwrap() error { return e.err }

// fail wraps a database error, naming the context's end when it ended.
func (s *Store) fail(ctx context.Context, what string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		err = fmt.Errorf("%w (%w)", ctxErr, err)
	}
	return fmt.Errorf("median: pgstore: could not %s %s: %w", what, s.table, err)
}

// call is one call's parameters: the table (quoted), the key and
// fingerprint, and the call's advisory lock.
type call struct {
	table, key, fp string
	lock           int64
}

// call checks key and fingerprint and returns the call's parameters. The
// key must be the core's hex digest; the fingerprint must be text
// PostgreSQL can hold (valid UTF-8 without NUL).
func (s *Store) call(key, fingerprint string) (call, error) {
	raw, err := hex.DecodeString(key)
	if err != nil || len(raw) < 8 {
		return call{}, fmt.Errorf("median: pgstore: the key must be the core's hex digest (at least 16 hex digits), got %q", key)
	}
	if fingerprint == "" || strings.IndexByte(fingerprint, 0) >= 0 || !utf8.ValidString(fingerprint) {
		return call{}, fmt.Errorf("median: pgstore: the fingerprint must be non-empty valid UTF-8 without NUL, got %.80q", fingerprint)
	}
	return call{table: s.table, key: key, fp: fingerprint, lock: int64(binary.BigEndian.Uint64(raw) ^ s.lock)}, nil
}

// claimResult reads what the claim's INSERT and SELECT returned, for a
// caller whose body has fingerprint fp.
func claimResult(fp string, inserted, found *pgconn.Result) (protocol.ClaimStatus, []byte, error) {
	if len(inserted.Rows) == 1 {
		return protocol.ClaimAcquired, nil, nil
	}
	if len(found.Rows) == 0 {
		// Another caller holds the lock and its row is not committed yet,
		// or was swept while its tool holds the call's transaction.
		return protocol.ClaimRunning, nil, nil
	}
	row := found.Rows[0]
	switch {
	case len(row[2]) != 1 || row[2][0] != 1:
		// Its time is up, but another caller holds the lock: it is taking
		// the call over, or its tool holds the call's transaction.
		return protocol.ClaimRunning, nil, nil
	case string(row[0]) != fp:
		return protocol.ClaimConflict, nil, nil
	case row[1] == nil:
		return protocol.ClaimRunning, nil, nil
	}
	return protocol.ClaimDone, row[1], nil
}
