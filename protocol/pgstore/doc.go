// Package pgstore is a [protocol.Store] on PostgreSQL
// (github.com/jackc/pgx/v5, pgxpool), for teams whose instances share a
// Postgres database rather than a Redis: a toolCallId answered on one
// instance is answered with the same bytes on any other, and its tool runs
// once. It also lets a tool do its writes in the transaction that holds its
// call's claim, so that the writes and the kept answer commit together
// (docs/PROTOCOL.md §8.1).
//
//	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
//	err = pgstore.Migrate(ctx, pool, pgstore.Options{}) // at start; idempotent
//	store, err := pgstore.New(pool, pgstore.Options{})
//	h, err := protocol.New(protocol.Config{Store: store, Tools: tools})
//
// and in a tool:
//
//	tx, ok := pgstore.Tx(ctx)
//	_, err := tx.Exec(ctx, "UPDATE orders SET status = 'cancelled' WHERE id = $1", id)
//
// # The table
//
// One row per toolCallId, in "median"."calls" unless [Options] names
// another schema or table: call_key (the core's 64 hex digits of the id's
// SHA-256, so a long id costs what a short one costs), fingerprint (the
// body's SHA-256), answer (bytea, NULL while the call runs) and expires_at
// (the end of the lease, then of the TTL), with an index on expires_at.
// [Migrate] creates them under an advisory lock, so instances starting at
// once can all call it; teams that run their own migrations apply
// schema.sql (beside this file) or [MigrationSQL].
//
// A row costs about 250 bytes plus the answer, index entries included.
// Rows go by themselves: each saved answer deletes up to four rows whose
// time is up, oldest first (SKIP LOCKED, through the expires_at index), so
// the table holds about the calls of one TTL (10 minutes by default) and
// each call's work stays bounded. No cron, no goroutine, nothing to Close.
//
// # How it works
//
// Each operation is one simple query of a few statements in one
// transaction, one round trip: SET LOCAL statement_timeout and lock_timeout
// to what is left of the core's store deadline (so the server gives up when
// the caller does), then the work. Values go into the SQL as literals: the
// key must be hex, the fingerprint is quoted as an escape string, answers
// as hex; the table name is quoted with pgx.Identifier.
//
//   - Claim takes the call's advisory lock without waiting
//     (pg_try_advisory_xact_lock on the key) and, holding it, inserts the
//     running claim or takes over a row whose lease or TTL ended; then it
//     reads the row. Without the lock the call is held elsewhere:
//     ClaimRunning, and the core asks again shortly. Claim never waits.
//   - Save writes the answer unless the row holds an answer already or
//     another body's live claim: the first answer wins, byte for byte.
//
// # One transaction per call
//
// When a Handler runs a tool itself (not through protocol's Middleware), the
// core calls [Store.RunClaimed] instead of Claim and Save: BEGIN, the claim
// as above but kept in the open transaction, a savepoint, the tool (which
// gets the transaction from [Tx]), then the answer and COMMIT. Four round
// trips per new call, three for a repeat. A result commits the tool's
// writes with the answer; an error, a refusal or a panic rolls the writes
// back to the savepoint and the answer is kept all the same. If the
// commit fails after the tool returned a result, the writes are gone and
// the call is answered execution_failed saying nothing was changed. When
// the COMMIT reached the server but its reply was lost, the store asks again
// on another connection (once the call's lock is free) and answers the
// result if the commit happened. One case stays open, as with any
// database: a server that freezes with the COMMIT unread may commit it
// when it wakes, after the call was answered as not carried out; the kept
// answer is then the result, and the writes are there.
//
// A copy of the call that arrives meanwhile finds the advisory lock taken
// and asks again until the commit, then gets the same bytes: the writes
// happen once. If the instance dies before the commit, PostgreSQL rolls
// the transaction back as soon as it sees the connection gone: neither the
// writes nor the claim are left, and the next copy runs the tool as the
// first did. The server also ends a transaction idle for longer than the
// claim's lease (idle_in_transaction_session_timeout), and bounds each of
// the tool's statements by it.
//
// Each call running a tool holds one pooled connection until it commits:
// size the pool (pgxpool's MaxConns) for the tools that run at once.
//
// # What exactly-once covers
//
// Writes made through [Tx] and the answer: both commit, or neither. Not
// what the tool does elsewhere: an email sent, a payment API called or a
// message published inside the tool stays done when the transaction rolls
// back. Put such effects after the commit, from a row the tool wrote (an
// outbox table a worker reads, or a job enqueued in the same transaction,
// as River's InsertTx does), or make them idempotent by toolCallId.
//
// # Outages
//
// When PostgreSQL is frozen, unreachable or too slow, each operation gives
// up at the core's deadline (protocol.Config.StoreTimeout, default 1 s) and
// the call is answered execution_failed without running the tool, unless
// the tool is protocol.ReadOnly: it then runs, without a transaction, and
// its answer is sent but not kept. pgxpool reconnects by itself when the
// server is back.
package pgstore
