package pgstore

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
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

// Probe checks that the database answers and the table is there: one round
// trip.
func (s *Store) Probe(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, "SELECT 1 FROM "+s.table+" LIMIT 0"); err != nil {
		return s.fail(ctx, "reach the table", err)
	}
	return nil
}

// Claim implements [protocol.Store]: one round trip, no waiting; see the
// package documentation.
func (s *Store) Claim(ctx context.Context, key, fingerprint string, lease time.Duration) (protocol.ClaimStatus, []byte, error) {
	q, err := s.query(key, fingerprint)
	if err != nil {
		return 0, nil, err
	}
	if lease < time.Millisecond {
		return 0, nil, fmt.Errorf("median: pgstore: the lease must be at least 1ms, got %s", lease)
	}
	sql := "BEGIN;" + timeouts(ctx) + q.claim(lease) + "COMMIT;"
	results, err := s.exec(ctx, sql)
	if err != nil {
		return 0, nil, s.fail(ctx, "claim a call in", err)
	}
	// BEGIN, two SETs, the INSERT, the SELECT, COMMIT.
	return claimResult(fingerprint, results[3], results[4])
}

// Save implements [protocol.Store]: one round trip. It writes the answer
// unless the call holds an answer already or another body's live claim,
// and removes a few expired rows. It always reports 0 evicted: rows go
// only when their time is up.
func (s *Store) Save(ctx context.Context, key, fingerprint string, answer []byte, ttl time.Duration) (int, error) {
	q, err := s.query(key, fingerprint)
	if err != nil {
		return 0, err
	}
	if ttl < time.Millisecond {
		return 0, fmt.Errorf("median: pgstore: the TTL must be at least 1ms, got %s", ttl)
	}
	sql := "BEGIN;" + timeouts(ctx) + q.save(answer, ttl) + s.sweep() + "COMMIT;"
	if _, err := s.exec(ctx, sql); err != nil {
		return 0, s.fail(ctx, "save an answer in", err)
	}
	return 0, nil
}

// exec sends sql as one simple query (one round trip, however many
// statements) and returns each statement's result. The connection goes
// back to the pool, or is closed when the query failed half-way.
func (s *Store) exec(ctx context.Context, sql string) ([]*pgconn.Result, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	return conn.Conn().PgConn().Exec(ctx, sql).ReadAll()
}

// fail wraps a database error, naming the context's end when it ended.
func (s *Store) fail(ctx context.Context, what string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		err = fmt.Errorf("%w (%w)", ctxErr, err)
	}
	return fmt.Errorf("median: pgstore: could not %s %s: %w", what, s.table, err)
}

// fallbackTimeout bounds the database's work when ctx carries no deadline:
// the core's default store deadline.
const fallbackTimeout = time.Second

// timeouts sets the statement and lock timeouts of the transaction to what
// is left of ctx's deadline (at least 1 ms), or to fallbackTimeout when ctx
// has none, so that the database gives up when the caller does: two
// statements.
func timeouts(ctx context.Context) string {
	d := fallbackTimeout
	if deadline, ok := ctx.Deadline(); ok {
		d = time.Until(deadline)
	}
	return localTimeouts(strconv.FormatInt(max(d.Milliseconds(), 1), 10))
}

// localTimeouts sets the transaction's statement and lock timeouts to ms
// milliseconds: two statements.
func localTimeouts(ms string) string {
	return "SET LOCAL statement_timeout = " + ms + ";SET LOCAL lock_timeout = " + ms + ";"
}

// interval is d as an SQL interval literal, in whole milliseconds.
func interval(d time.Duration) string {
	return "interval '" + strconv.FormatInt(d.Milliseconds(), 10) + " milliseconds'"
}

// call is one call's statements: the table, the key and fingerprint as SQL
// literals, and the call's advisory lock.
type call struct {
	table, key, fp string
	lock           string
}

// query checks key and fingerprint and builds their statements. Values go
// into the SQL as literals (one simple query is one round trip): the key
// must be hex, the fingerprint is quoted as an escape string, and answers
// go in as hex.
func (s *Store) query(key, fingerprint string) (call, error) {
	raw, err := hex.DecodeString(key)
	if err != nil || len(raw) < 8 {
		return call{}, fmt.Errorf("median: pgstore: the key must be the core's hex digest (at least 16 hex digits), got %q", key)
	}
	if fingerprint == "" || strings.IndexByte(fingerprint, 0) >= 0 || !utf8.ValidString(fingerprint) {
		return call{}, fmt.Errorf("median: pgstore: the fingerprint must be non-empty valid UTF-8 without NUL, got %q", fingerprint)
	}
	lock := int64(binary.BigEndian.Uint64(raw) ^ s.lock)
	return call{table: s.table, key: "'" + key + "'", fp: escapeString(fingerprint), lock: strconv.FormatInt(lock, 10)}, nil
}

// escapeString quotes s as an escape string literal, E'…', which means the
// same whatever standard_conforming_strings says.
func escapeString(s string) string { return "E'" + escaper.Replace(s) + "'" }

// escaper doubles the backslashes and quotes of an escape string literal.
var escaper = strings.NewReplacer(`\`, `\\`, `'`, `''`)

// claim is the INSERT that takes the call and the SELECT that tells what
// is there when it did not. The INSERT takes the call's advisory lock
// first, without waiting: a call held by a transaction (see
// [Store.RunClaimed]) has an uncommitted row an INSERT would wait on, and
// a Claim never waits. With the lock, it inserts a running claim, or takes
// over a row whose lease or TTL ended. The SELECT is a statement of its
// own, so it sees what committed meanwhile.
func (c call) claim(lease time.Duration) string {
	return "INSERT INTO " + c.table + " AS c (call_key, fingerprint, answer, expires_at) " +
		"SELECT " + c.key + ", " + c.fp + ", NULL, now() + " + interval(lease) + " " +
		"WHERE pg_try_advisory_xact_lock(" + c.lock + ") " +
		"ON CONFLICT (call_key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, answer = NULL, expires_at = EXCLUDED.expires_at " +
		"WHERE c.expires_at <= now() RETURNING 1;" +
		"SELECT fingerprint, answer, expires_at > now() FROM " + c.table + " WHERE call_key = " + c.key + ";"
}

// claimResult reads what the claim's INSERT and SELECT returned, for a
// caller whose body has fingerprint fp.
func claimResult(fp string, inserted, found *pgconn.Result) (protocol.ClaimStatus, []byte, error) {
	if len(inserted.Rows) == 1 {
		return protocol.ClaimAcquired, nil, nil
	}
	if len(found.Rows) == 0 {
		// Held by a transaction that has not committed yet.
		return protocol.ClaimRunning, nil, nil
	}
	row := found.Rows[0]
	switch {
	case string(row[2]) != "t":
		// Its time is up, but another caller holds the lock: it is taking
		// the call over right now.
		return protocol.ClaimRunning, nil, nil
	case string(row[0]) != fp:
		return protocol.ClaimConflict, nil, nil
	case row[1] == nil:
		return protocol.ClaimRunning, nil, nil
	}
	answer, err := decodeBytea(row[1])
	if err != nil {
		return 0, nil, err
	}
	return protocol.ClaimDone, answer, nil
}

// save writes the answer for ttl unless the row holds an answer already or
// another body's live claim.
func (c call) save(answer []byte, ttl time.Duration) string {
	return "INSERT INTO " + c.table + " AS c (call_key, fingerprint, answer, expires_at) " +
		"VALUES (" + c.key + ", " + c.fp + ", " + byteaLiteral(answer) + ", clock_timestamp() + " + interval(ttl) + ") " +
		"ON CONFLICT (call_key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, answer = EXCLUDED.answer, expires_at = EXCLUDED.expires_at " +
		"WHERE (c.answer IS NULL AND c.fingerprint = EXCLUDED.fingerprint) OR c.expires_at <= now();"
}

// sweep removes a few expired rows, oldest first, skipping rows another
// transaction holds.
func (s *Store) sweep() string {
	return "DELETE FROM " + s.table + " WHERE call_key IN (SELECT call_key FROM " + s.table +
		" WHERE expires_at < now() ORDER BY expires_at LIMIT " + strconv.Itoa(sweepPerSave) + " FOR UPDATE SKIP LOCKED);"
}

// byteaLiteral is answer as a bytea expression.
func byteaLiteral(answer []byte) string {
	return "decode('" + hex.EncodeToString(answer) + "', 'hex')"
}

// decodeBytea reads a bytea column in PostgreSQL's text form, \x and hex.
func decodeBytea(v []byte) ([]byte, error) {
	if len(v) < 2 || v[0] != '\\' || v[1] != 'x' {
		return nil, fmt.Errorf("median: pgstore: unexpected bytea text %.20q (want bytea_output = hex)", v)
	}
	out := make([]byte, hex.DecodedLen(len(v)-2))
	_, err := hex.Decode(out, v[2:])
	return out, err
}
