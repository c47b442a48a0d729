package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/median-go/median/protocol"
)

// txKey carries a call's transaction on its tool's context.
type txKey struct{}

// Tx returns the transaction that holds the claim of the call whose tool
// is running on ctx, and true; false when there is none (another store, a
// call answered through protocol's Middleware, or a tool run after a store
// outage, see protocol.ReadOnly). Do the tool's writes in it: they commit
// with the kept answer when the tool returns a result, and are rolled back
// when it returns an error or a refusal, or panics, while that answer is
// still kept (PROTOCOL.md §8.1). Do not commit or roll it back yourself
// (both return an error); tx.Begin gives a savepoint of your own.
//
// Writes to anything outside this transaction (an email, another
// service's API, another database) are not rolled back: see the package
// documentation for how to order them.
func Tx(ctx context.Context) (pgx.Tx, bool) {
	tx, ok := ctx.Value(txKey{}).(callTx)
	return tx, ok
}

// callTx is the transaction a tool gets: the store commits or rolls it
// back when the tool returns.
type callTx struct{ pgx.Tx }

// errCallTx answers a tool that tries to end the call's transaction.
var errCallTx = errors.New("median: pgstore: the call's transaction is committed or rolled back by the store when the tool returns: return a result to commit your writes, an error or a refusal to roll them back (tx.Begin gives a savepoint of your own)")

// Commit refuses: the store commits when the tool returns a result.
func (callTx) Commit(context.Context) error { return errCallTx }

// Rollback refuses: the store rolls back when the tool returns an error.
func (callTx) Rollback(context.Context) error { return errCallTx }

// savepoint separates the tool's writes from the claim in the call's
// transaction.
const savepoint = "median_tool"

// RunClaimed claims the call as [Store.Claim] does, but inside a
// transaction it keeps open: on acquiring it calls run once, with ctx
// carrying that transaction ([Tx]), then writes the answer run returned in
// the same transaction and commits: with the tool's writes when commit is
// true, after rolling them back to a savepoint otherwise. A crash before
// the commit leaves neither the writes nor the claim. The core calls it for
// tools it runs itself (see protocol.Store); each of the store's own steps
// runs under timeout, the tool under its own.
//
// It returns what Claim would, without running anything, when the call is
// answered, held by another caller (ClaimRunning: the core asks again, and
// a copy of a call in a transaction waits for its commit that way) or used
// by another body. After run, a non-nil error means the commit did not
// happen: neither the writes nor the answer are kept.
//
// The claim's lease is the transaction's: the server ends a session that
// stays idle in it longer than lease, and bounds each of the tool's
// statements by lease too; a tool that outlives it has its writes rolled
// back and its answer not kept.
func (s *Store) RunClaimed(ctx context.Context, key, fingerprint string, lease, ttl, timeout time.Duration,
	run func(ctx context.Context) (answer []byte, commit bool)) (protocol.ClaimStatus, []byte, error) {
	q, err := s.query(key, fingerprint)
	if err != nil {
		return 0, nil, err
	}
	if lease < time.Millisecond || ttl < time.Millisecond {
		return 0, nil, fmt.Errorf("median: pgstore: the lease and the TTL must be at least 1ms, got %s and %s", lease, ttl)
	}
	leaseMs := strconv.FormatInt(lease.Milliseconds(), 10)
	claimCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tx, err := s.pool.BeginTx(claimCtx, pgx.TxOptions{BeginQuery: "BEGIN;" + timeouts(claimCtx) +
		"SET LOCAL idle_in_transaction_session_timeout = " + leaseMs + ";"})
	if err != nil {
		return 0, nil, s.fail(claimCtx, "begin a transaction in", err)
	}
	ended := false
	defer func() {
		if !ended {
			rbCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
			defer cancel()
			_ = tx.Rollback(rbCtx)
		}
	}()
	results, err := tx.Conn().PgConn().Exec(claimCtx, q.claim(lease)+"SAVEPOINT "+savepoint+";"+
		localTimeouts(leaseMs)).ReadAll()
	if err != nil {
		return 0, nil, s.fail(claimCtx, "claim a call in", err)
	}
	status, stored, err := claimResult(fingerprint, results[0], results[1])
	if err != nil || status != protocol.ClaimAcquired {
		return status, stored, err
	}

	answer, commit := run(context.WithValue(ctx, txKey{}, callTx{tx}))

	// The answer must be kept even when the caller has gone away.
	endCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	end := "ROLLBACK TO SAVEPOINT " + savepoint + ";"
	if commit {
		end = "RELEASE SAVEPOINT " + savepoint + ";"
	}
	results, err = tx.Conn().PgConn().Exec(endCtx, timeouts(endCtx)+end+q.keep(answer, ttl)+s.sweep()).ReadAll()
	if err == nil && results[3].CommandTag.RowsAffected() != 1 {
		err = errors.New("the call's row was not there to keep its answer")
	}
	if err != nil {
		if commit && sqlState(err) == "25P02" {
			err = fmt.Errorf("a statement the tool ran in pgstore.Tx failed and the tool returned a result all the same, so PostgreSQL had aborted the transaction: return that statement's error, or run it in a savepoint of its own (tx.Begin) to carry on after it: %w", err)
		}
		return protocol.ClaimAcquired, nil, s.fail(endCtx, "keep the answer in", err)
	}
	ended = true
	if err := tx.Commit(endCtx); err != nil && !s.committed(ctx, q, answer, timeout) {
		return protocol.ClaimAcquired, nil, s.fail(endCtx, "commit the call's transaction in", err)
	}
	return protocol.ClaimAcquired, nil, nil
}

// committed reports whether the call's answer is kept after all: a COMMIT
// whose reply was lost (the connection broke after the server had it) may
// have committed. It asks on another connection, under timeout, once the
// call's advisory lock is free (the transaction has ended, one way or the
// other). When the database does not answer in time, the commit counts as
// failed, which it may still not be (see the package documentation).
func (s *Store) committed(ctx context.Context, q call, answer []byte, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	results, err := s.exec(ctx, "BEGIN;"+timeouts(ctx)+"SELECT pg_advisory_xact_lock("+q.lock+");"+
		"SELECT answer = "+byteaLiteral(answer)+" FROM "+q.table+" WHERE call_key = "+q.key+" AND fingerprint = "+q.fp+";COMMIT;")
	// BEGIN, two SETs, the lock, the SELECT, COMMIT.
	return err == nil && len(results) == 6 && len(results[4].Rows) == 1 && string(results[4].Rows[0][0]) == "t"
}

// keep writes the answer on the row this transaction claimed.
func (c call) keep(answer []byte, ttl time.Duration) string {
	return "UPDATE " + c.table + " SET answer = " + byteaLiteral(answer) +
		", expires_at = clock_timestamp() + " + interval(ttl) + " " +
		"WHERE call_key = " + c.key + " AND fingerprint = " + c.fp + ";"
}

// sqlState returns the SQLSTATE of a PostgreSQL error in err's chain, or "".
func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}
