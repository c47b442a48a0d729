// Package pgstore is a [protocol.Store] on PostgreSQL
// (github.com/jackc/pgx/v5, pgxpool), for teams whose instances share a
// Postgres database rather than a Redis: a toolCallId answered on one
// instance is answered with the same bytes on any other, and its tool runs
// once. It also lets a tool do its writes in a transaction of its call, so
// that the writes and the kept answer commit together (docs/PROTOCOL.md
// §8.1).
//
//	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
//	err = pgstore.Migrate(ctx, pool, pgstore.Options{}) // at start; idempotent
//	store, err := pgstore.New(pool, pgstore.Options{})
//	h, err := protocol.New(protocol.Config{Store: store, Tools: tools})
//
// and in a tool that writes:
//
//	tx, ok := pgstore.Tx(ctx) // begins the call's transaction
//	_, err := tx.Exec(ctx, "UPDATE orders SET status = 'cancelled' WHERE id = $1", id)
//
// while every query of a tool (and of code tools share with the rest of
// the application) goes through [Querier]:
//
//	err := pgstore.Querier(ctx, pool).QueryRow(ctx, "SELECT status FROM orders WHERE id = $1", id).Scan(&status)
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
// Every value (key, fingerprint, answer, lease, timeouts) reaches
// PostgreSQL as a parameter of the extended protocol, in binary; only the
// table's name is in the SQL text, quoted with pgx.Identifier. Each
// operation is one round trip whatever the pool's QueryExecMode: its
// statements go in one pgconn batch (one write, one Sync), in a
// transaction whose statement and lock timeouts are what is left of the
// core's store deadline, so the server gives up when the caller does.
//
//   - Claim takes the call's advisory lock without waiting
//     (pg_try_advisory_xact_lock on the key) and, holding it, inserts the
//     running claim or takes over a row whose lease or TTL ended; then it
//     reads the row. Without the lock the call is held elsewhere:
//     ClaimRunning, and the core asks again shortly. Claim never waits.
//   - Save writes the answer unless the row holds an answer already or
//     another body's live claim: the first answer wins, byte for byte.
//   - Renew moves a running claim's end to a lease from now; the core
//     calls it while the tool runs. It never revives a claim whose lease
//     ended, nor touches an answer or another body's claim.
//
// A connection is taken from the pool for each of these round trips and
// given back at once: a call holds none while its tool runs, unless the
// tool asks for its transaction. When no connection is free before the
// store's deadline, the call is answered execution_failed without running
// its tool, and the error, in the log, says the pool is exhausted
// ([ErrPoolExhausted]); so does the diagnostics report's store.problem
// when the probe cannot get one either.
//
// # A transaction per call, when the tool asks
//
// When a Handler runs a tool itself (not through protocol's Middleware),
// the core calls [Store.RunClaimed]: the claim commits on its own, as
// above, and the tool runs holding no connection. A tool that never calls
// [Tx] is done then: the core saves its answer. Tools that only read, with
// [Querier] or straight on the pool, cannot starve the pool however many
// run at once: none holds a connection while it waits for another.
//
// The first call of [Tx] takes a connection and hands the claim from its
// lease to that connection's session: it takes the call's advisory lock
// for the session and ends the lease (expires_at -infinity), committed,
// then begins the tool's transaction (two round trips). From then on the
// claim lasts exactly as long as the session: copies find the lock taken
// and wait; if the instance dies, PostgreSQL rolls the transaction back
// and drops the lock as soon as it sees the connection gone, and the next
// copy takes the claim over at once and runs the tool as the first did.
// When the tool returns, one round trip keeps its answer in the
// transaction and commits, with the tool's writes for a result, after
// rolling them back for an error, a refusal or a panic (whose answer is
// kept all the same), then releases the lock. Hold the transaction only
// while the tool needs it: the server ends a transaction left idle longer
// than the answer's TTL (idle_in_transaction_session_timeout), by when no
// copy of the call can be accepted any more.
//
// If the commit fails after the tool returned a result, the writes are
// gone and the call is answered execution_failed saying nothing was
// changed. When the COMMIT reached the server but its reply was lost, the
// store asks again on another connection (once the call's lock is free)
// and answers the result if the commit happened. A server paused with the
// last round trip unread rolls it back when it wakes after the store's
// deadline (a statement before COMMIT compares the time since the
// transaction began with the deadline, each on its own side's clock), so
// the call answered as not carried out stays so. One case stays open, as
// with any database: a server that freezes between that statement and the
// COMMIT, for longer than the deadline.
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
