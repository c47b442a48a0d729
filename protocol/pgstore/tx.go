package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/median-go/median/protocol"
)

// txKey carries a call's transaction, begun or not, on its tool's context.
type txKey struct{}

// Tx returns the transaction of the call whose tool is running on ctx,
// beginning it on the first call, and true; false when the call has none
// (another store, a call answered through protocol's Middleware, or a tool
// run after a store outage, see protocol.ReadOnly). Do the tool's writes in
// it: they commit with the kept answer when the tool returns a result, and
// are rolled back when it returns an error or a refusal, or panics, while
// that answer is still kept (PROTOCOL.md §8.1). Do not commit or roll it
// back yourself (both return an error); tx.Begin gives a savepoint of your
// own.
//
// The transaction holds a connection of the pool from the first call of
// Tx until the tool returns; a tool that never calls Tx holds none while it
// runs. Call Tx where the tool starts writing, and read through [Querier]
// so that a tool holding its transaction never waits for a second
// connection. When no connection is free within the store's deadline, or
// the database does not answer, every statement of the returned
// transaction fails with that error (its Conn is then nil): return it, and
// the call is answered as not carried out.
//
// Writes to anything outside this transaction (an email, another
// service's API, another database) are not rolled back: see the package
// documentation for how to order them.
func Tx(ctx context.Context) (pgx.Tx, bool) {
	l, ok := ctx.Value(txKey{}).(*lazyTx)
	if !ok {
		return nil, false
	}
	return l.get(ctx), true
}

// DBTX is what *pgxpool.Pool, *pgx.Conn and pgx.Tx have in common for
// running statements: the interface sqlc generates for pgx/v5 under the
// same name, so code written for one runs on any of them.
type DBTX interface {
	Exec(ctx context.Context, sql string, arguments ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	CopyFrom(ctx context.Context, tableName pgx.Identifier, columnNames []string, rowSrc pgx.CopyFromSource) (int64, error)
}

// Querier returns what a tool's statements should run on: the call's
// transaction once the tool has begun it with [Tx], else pool (usually
// your *pgxpool.Pool). Use it for every query of a tool, and of code that
// tools share with the rest of the application (it returns pool outside a
// tool call): a read sees the tool's own uncommitted writes, and a tool
// holding its transaction never asks the pool for a second connection,
// which a busy pool may not have. It never begins the transaction, so a
// tool that only reads holds a connection only for each statement.
func Querier(ctx context.Context, pool DBTX) DBTX {
	if l, ok := ctx.Value(txKey{}).(*lazyTx); ok {
		if tx := l.current(); tx != nil {
			return tx
		}
	}
	return pool
}

// callTx is the transaction a tool gets: the store commits or rolls it
// back when the tool returns, and from then on its statements fail (its
// connection is back in the pool, another call's).
type callTx struct {
	pgx.Tx
	l *lazyTx
}

// over returns errCallEnded once the call's tool has returned.
func (t callTx) over() error {
	t.l.mu.Lock()
	defer t.l.mu.Unlock()
	if t.l.ended {
		return errCallEnded
	}
	return nil
}

// Begin begins a savepoint of the tool's own (pgx's nested transaction).
func (t callTx) Begin(ctx context.Context) (pgx.Tx, error) {
	if err := t.over(); err != nil {
		return nil, err
	}
	return t.Tx.Begin(ctx)
}

// Exec runs sql in the call's transaction.
func (t callTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := t.over(); err != nil {
		return pgconn.CommandTag{}, err
	}
	return t.Tx.Exec(ctx, sql, args...)
}

// Query runs sql in the call's transaction.
func (t callTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := t.over(); err != nil {
		return nil, err
	}
	return t.Tx.Query(ctx, sql, args...)
}

// QueryRow runs sql in the call's transaction.
func (t callTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := t.over(); err != nil {
		return failedRow{err}
	}
	return t.Tx.QueryRow(ctx, sql, args...)
}

// SendBatch sends b in the call's transaction.
func (t callTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := t.over(); err != nil {
		return failedBatch{err}
	}
	return t.Tx.SendBatch(ctx, b)
}

// CopyFrom copies rows in the call's transaction.
func (t callTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, rows pgx.CopyFromSource) (int64, error) {
	if err := t.over(); err != nil {
		return 0, err
	}
	return t.Tx.CopyFrom(ctx, table, columns, rows)
}

// Prepare prepares sql on the call's connection.
func (t callTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if err := t.over(); err != nil {
		return nil, err
	}
	return t.Tx.Prepare(ctx, name, sql)
}

// errCallTx answers a tool that tries to end the call's transaction.
var errCallTx = errors.New("median: pgstore: the call's transaction is committed or rolled back by the store when the tool returns: return a result to commit your writes, an error or a refusal to roll them back (tx.Begin gives a savepoint of your own)")

// Commit refuses: the store commits when the tool returns a result.
func (callTx) Commit(context.Context) error { return errCallTx }

// Rollback refuses: the store rolls back when the tool returns an error.
func (callTx) Rollback(context.Context) error { return errCallTx }

// errCallEnded is the error of a transaction asked for after its call's
// tool returned (from a goroutine the tool left behind).
var errCallEnded = errors.New("median: pgstore: the call's tool has returned: its transaction is over")

// lazyTx is a call's transaction, begun when its tool first asks for it.
type lazyTx struct {
	s            *Store
	c            call
	ttl, timeout time.Duration

	mu    sync.Mutex
	ended bool          // the tool returned: no transaction begins any more
	conn  *pgxpool.Conn // the transaction's connection, once begun
	tx    pgx.Tx        // a callTx, once begun
	begun time.Time     // when it began, by this process's clock
	idle  string        // the session's idle_in_transaction_session_timeout before
	err   error         // why it could not begin
}

// get returns the call's transaction, beginning it first when it was not.
func (l *lazyTx) get(ctx context.Context) pgx.Tx {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.ended:
		return failedTx{errCallEnded}
	case l.tx != nil:
		return l.tx
	case l.err != nil:
		return failedTx{l.err}
	}
	var tx pgx.Tx
	l.conn, tx, l.idle, l.err = l.s.beginCall(ctx, l.c, l.ttl, l.timeout)
	l.begun = time.Now()
	if l.err != nil {
		return failedTx{l.err}
	}
	l.tx = callTx{Tx: tx, l: l}
	return l.tx
}

// current returns the call's transaction if it was begun and is not over.
func (l *lazyTx) current() pgx.Tx {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return nil
	}
	return l.tx
}

// over marks the tool returned and returns what it left: the transaction's
// connection and the transaction, or nil, and why it could not begin.
func (l *lazyTx) over() (*pgxpool.Conn, pgx.Tx, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ended = true
	return l.conn, l.tx, l.err
}

// beginCall hands the claim of c from its lease to a connection of the
// pool and begins the tool's transaction on it: two round trips, under
// timeout. See hold for how the claim is held: a crash from here on leaves
// no claim behind once the server sees the connection gone. The server
// ends the transaction if it stays idle longer than ttl, by when no copy
// of the call can still be accepted; idle is the session's own setting of
// that timeout, which endCall gives back.
func (s *Store) beginCall(ctx context.Context, c call, ttl, timeout time.Duration) (conn *pgxpool.Conn, tx pgx.Tx, idle string, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err = s.acquire(ctx)
	if err != nil {
		return nil, nil, "", s.fail(ctx, "begin the call's transaction in", err)
	}
	var p pipeline
	p.begin(ctx)
	c.hold(&p)
	p.add("COMMIT")
	// The session's own setting, given back when the call ends.
	p.add("SELECT current_setting('idle_in_transaction_session_timeout')")
	p.add("SELECT set_config('idle_in_transaction_session_timeout', $1, false)", strconv.FormatInt(max(ttl.Milliseconds(), 1), 10))
	// BEGIN, the timeouts, the lock, the UPDATE, COMMIT, current_setting,
	// set_config.
	results, err := p.send(ctx, conn.Conn().PgConn())
	if err == nil && results[3].CommandTag.RowsAffected() != 1 {
		err = errors.New("the call's claim is no longer this request's: its lease ended and another request took it over, or its answer is kept")
	}
	if err == nil {
		idle = string(results[5].Rows[0][0])
		tx, err = conn.BeginTx(ctx, pgx.TxOptions{})
	}
	if err != nil {
		discard(conn)
		return nil, nil, "", s.fail(ctx, "begin the call's transaction in", err)
	}
	return conn, tx, idle, nil
}

// discard closes conn, which the pool then drops: the server rolls back
// what it held and releases its locks, the call's advisory lock included.
func discard(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Conn().Close(ctx)
	conn.Release()
}

// RunClaimed implements the optional method of [protocol.Store] for tools
// a Handler runs itself: it claims the call as [Store.Claim] does (the
// claim commits on its own, one round trip) and, on acquiring it, calls
// run once with ctx carrying the call's transaction, begun only when the
// tool asks for it ([Tx]). A tool that does not ask runs holding no
// connection, and RunClaimed returns [ErrOutsideTransaction]: the core
// keeps the answer with Save. A tool that asks has its answer kept in
// its transaction, which commits with the tool's writes when commit is
// true, after rolling them back otherwise: one round trip. A non-nil
// error after run then means the commit did not happen: neither the
// writes nor the answer are kept, and the claim no longer holds copies of
// the call. Each of the store's own steps runs under timeout, the tool
// under its own.
//
// It returns what Claim would, without running anything, when the call is
// answered, held by another caller (ClaimRunning: the core asks again, and
// a copy of a call whose tool runs waits for its answer that way) or used
// by another body.
func (s *Store) RunClaimed(ctx context.Context, key, fingerprint string, lease, ttl, timeout time.Duration,
	run func(ctx context.Context) (answer []byte, commit bool)) (protocol.ClaimStatus, []byte, error) {
	c, err := s.call(key, fingerprint)
	if err != nil {
		return 0, nil, err
	}
	if lease < time.Millisecond || ttl < time.Millisecond {
		return 0, nil, fmt.Errorf("median: pgstore: the lease and the TTL must be at least 1ms, got %s and %s", lease, ttl)
	}
	claimCtx, cancel := context.WithTimeout(ctx, timeout)
	status, stored, err := s.Claim(claimCtx, key, fingerprint, lease)
	cancel()
	if err != nil || status != protocol.ClaimAcquired {
		return status, stored, err
	}

	l := &lazyTx{s: s, c: c, ttl: ttl, timeout: timeout}
	ended := false
	defer func() {
		if !ended { // run panicked: end what the tool began
			if conn, _, _ := l.over(); conn != nil {
				discard(conn)
			}
		}
	}()
	answer, commit := run(context.WithValue(ctx, txKey{}, l))
	ended = true
	conn, tx, beginErr := l.over()
	switch {
	case tx != nil:
		return protocol.ClaimAcquired, nil, s.endCall(ctx, c, conn, l.begun, l.idle, answer, commit, ttl, timeout)
	case beginErr != nil && commit:
		// The tool asked for its transaction, which could not begin, and
		// returned a result all the same: what it meant to write is not
		// there. The claim goes, so that a copy runs the tool again.
		s.release(ctx, c, timeout)
		return protocol.ClaimAcquired, nil, fmt.Errorf("the tool returned a result although its transaction could not begin: %w", beginErr)
	}
	return protocol.ClaimAcquired, nil, ErrOutsideTransaction
}

// ErrOutsideTransaction is what [Store.RunClaimed] returns after running a
// tool that never asked for its call's transaction: the store kept no
// answer (the core keeps it with Save), and nothing the tool did can be
// rolled back. Its OutsideTransaction method tells the core so.
var ErrOutsideTransaction error = outsideError{}

// outsideError is ErrOutsideTransaction's type.
type outsideError struct{}

func (outsideError) Error() string {
	return "median: pgstore: the tool ran outside its call's transaction; its answer is kept with Save"
}

// OutsideTransaction tells the core that the tool ran outside the store's
// transaction (see protocol.Store).
func (outsideError) OutsideTransaction() bool { return true }

// endCall keeps the answer in the call's transaction on conn and commits,
// with the tool's writes when commit is true, after rolling them back
// otherwise, then hands the connection back with its idle timeout as it
// was (idle): one round trip. begun is when the transaction began, by this
// process's clock. When the COMMIT's reply
// was lost, it asks on another connection whether the commit happened.
func (s *Store) endCall(ctx context.Context, c call, conn *pgxpool.Conn, begun time.Time, idle string, answer []byte, commit bool, ttl, timeout time.Duration) error {
	// The answer must be kept even when the caller has gone away.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	var p pipeline
	if !commit {
		p.add("ROLLBACK")
		p.begin(ctx)
	} else {
		p.timeouts(ctx)
	}
	keepAt := p.n
	c.keep(&p, answer, ttl)
	s.sweep(&p)
	guardAt := -1
	if commit {
		// A server that was paused with this round trip unread must not
		// commit the tool's writes when it wakes, after this call was
		// answered as not carried out: it fails this statement instead,
		// and rolls back, once the store's deadline has passed. The
		// deadline is measured from the transaction's start on each side's
		// own clock (now() is when BEGIN ran), so no clock need agree.
		deadline, _ := ctx.Deadline()
		guardAt = p.n
		p.add("SELECT 1 / (clock_timestamp() < now() + $1)::int", deadline.Sub(begun))
	}
	p.add("COMMIT")
	committedAt := p.n - 1
	p.add("SELECT set_config('idle_in_transaction_session_timeout', $1, false)", idle)
	c.unhold(&p)
	results, err := p.send(ctx, conn.Conn().PgConn())
	if err == nil {
		conn.Release()
		return nil
	}
	broken := conn.Conn().IsClosed()
	discard(conn)
	failedAt := len(results) - 1
	switch {
	case len(results) > committedAt && results[committedAt].Err == nil:
		return nil // committed; what failed came after
	case broken && !commit:
		// The connection broke before COMMIT (pgx closes it when the
		// tool's ctx ends mid-statement, as at Request.AnswerBy): the
		// tool's writes cannot commit now, and were not to. The answer is
		// kept apart, as Save keeps one, so that repeats get it instead
		// of running the tool again once the claim's session ends.
		if _, err = s.Save(ctx, c.key, c.fp, answer, ttl); err == nil {
			return nil
		}
	case failedAt == keepAt && sqlState(err) == "22012":
		err = errors.New("the call's row held an answer or another body's claim, so the answer could not be kept with the tool's writes")
	case failedAt == guardAt && sqlState(err) == "22012":
		err = errors.New("the database ran the commit after the store's deadline had passed (it was paused or too slow), so it rolled back instead")
	case commit && sqlState(err) == "25P02":
		err = fmt.Errorf("a statement the tool ran in pgstore.Tx failed and the tool returned a result all the same, so PostgreSQL had aborted the transaction: return that statement's error, or run it in a savepoint of its own (tx.Begin) to carry on after it: %w", err)
	case sqlState(err) == "" && s.committed(ctx, c, answer, timeout):
		return nil // the COMMIT reached the server, its reply did not come back
	}
	return s.fail(ctx, "keep the answer and commit the call's transaction in", err)
}

// committed reports whether answer is the call's kept answer after all: a
// COMMIT whose reply was lost (the connection broke after the server had
// it) may have committed. It asks on another connection, under timeout,
// once the call's advisory lock is free (the transaction has ended, one
// way or the other). When the database does not answer in time, the
// commit counts as failed, which it may still not be (see the package
// documentation).
func (s *Store) committed(ctx context.Context, c call, answer []byte, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	var p pipeline
	p.begin(ctx)
	c.kept(&p, answer)
	p.add("COMMIT")
	results, err := s.send(ctx, &p)
	// BEGIN, the timeouts, the lock, the SELECT, COMMIT.
	return err == nil && len(results) == 5 && len(results[3].Rows) == 1 &&
		len(results[3].Rows[0][0]) == 1 && results[3].Rows[0][0][0] == 1
}

// release removes the claim of c while it has no answer, so that a copy
// of the call runs at once: one round trip, under timeout, and nothing
// more when it fails (the claim then lasts until its lease ends).
func (s *Store) release(ctx context.Context, c call, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	var p pipeline
	p.add("DELETE FROM "+c.table+" WHERE call_key = $1 AND fingerprint = $2 AND answer IS NULL", c.key, c.fp)
	_, _ = s.send(ctx, &p)
}

// sqlState returns the SQLSTATE of a PostgreSQL error in err's chain, or "".
func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// failedTx is the transaction of a call whose transaction could not
// begin: every statement fails with why.
type failedTx struct{ err error }

func (f failedTx) Begin(context.Context) (pgx.Tx, error) { return nil, f.err }
func (f failedTx) Commit(context.Context) error          { return f.err }
func (f failedTx) Rollback(context.Context) error        { return f.err }
func (f failedTx) CopyFrom(context.Context, pgx.Identifier, []string, pgx.CopyFromSource) (int64, error) {
	return 0, f.err
}
func (f failedTx) SendBatch(context.Context, *pgx.Batch) pgx.BatchResults { return failedBatch(f) }
func (f failedTx) LargeObjects() pgx.LargeObjects                         { return pgx.LargeObjects{} }
func (f failedTx) Prepare(context.Context, string, string) (*pgconn.StatementDescription, error) {
	return nil, f.err
}
func (f failedTx) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, f.err
}
func (f failedTx) Query(context.Context, string, ...any) (pgx.Rows, error) { return nil, f.err }
func (f failedTx) QueryRow(context.Context, string, ...any) pgx.Row        { return failedRow(f) }
func (f failedTx) Conn() *pgx.Conn                                         { return nil }

// failedRow is a row whose Scan fails with why the transaction could not
// begin.
type failedRow struct{ err error }

func (r failedRow) Scan(...any) error { return r.err }

// failedBatch is the results of a batch sent on a failed transaction.
type failedBatch struct{ err error }

func (b failedBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }
func (b failedBatch) Query() (pgx.Rows, error)         { return nil, b.err }
func (b failedBatch) QueryRow() pgx.Row                { return failedRow(b) }
func (b failedBatch) Close() error                     { return b.err }
func (b failedBatch) Tx() pgx.Tx                       { return nil }
