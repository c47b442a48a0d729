package pgstore

import (
	"context"
	"encoding/binary"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// The store's statements. Every value is a parameter ($1, $2, …), sent in
// binary form beside the statement (PostgreSQL's extended protocol); only
// the table's name, quoted with pgx.Identifier, is part of the SQL text.
// Each operation queues its statements in a batch and sends them in one
// write, with one Sync at the end: one round trip however many statements
// (see pipeline).

// OIDs of the parameters' types, so the server reads each as what it is
// rather than guessing.
const (
	oidInt8     = 20
	oidText     = 25
	oidBytea    = 17
	oidInterval = 1186
)

// binaryFormat is the one format code that applies to every parameter and
// every result column of a statement: binary. A text value is its UTF-8
// bytes, a bytea its bytes, a bool one byte.
var binaryFormat = []int16{1}

// pipeline is one round trip's statements.
type pipeline struct {
	b pgconn.Batch
	n int // statements queued
}

// add queues sql with args, each a string (text), []byte (bytea), int64
// (int8) or time.Duration (interval).
func (p *pipeline) add(sql string, args ...any) {
	values := make([][]byte, len(args))
	oids := make([]uint32, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			values[i], oids[i] = []byte(v), oidText
		case []byte:
			values[i], oids[i] = v, oidBytea
			if v == nil {
				values[i] = []byte{} // an empty bytea, not NULL
			}
		case int64:
			values[i], oids[i] = binary.BigEndian.AppendUint64(nil, uint64(v)), oidInt8
		case time.Duration:
			// interval's binary form: microseconds, days, months.
			values[i], oids[i] = binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(v.Microseconds())), oidInterval
			values[i] = append(values[i], 0, 0, 0, 0, 0, 0, 0, 0)
		default:
			panic("pgstore: unsupported parameter type") // the package's own statements only
		}
	}
	p.b.ExecParams(sql, values, oids, binaryFormat, binaryFormat)
	p.n++
}

// send writes the queued statements on conn, one write and one Sync, and
// returns each statement's result. A statement that fails ends the
// round trip: the server skips the rest (an explicit transaction is then
// left aborted, and the pool closes the connection when it is released).
func (p *pipeline) send(ctx context.Context, conn *pgconn.PgConn) ([]*pgconn.Result, error) {
	return conn.ExecBatch(ctx, &p.b).ReadAll()
}

// begin queues BEGIN and the transaction's statement and lock timeouts set
// to what is left of ctx's deadline (at least 1 ms), or to fallbackTimeout
// when ctx has none, so that the server gives up when the caller does: two
// statements.
func (p *pipeline) begin(ctx context.Context) {
	p.add("BEGIN")
	p.timeouts(ctx)
}

// timeouts queues the statement that sets the transaction's statement and
// lock timeouts as begin does.
func (p *pipeline) timeouts(ctx context.Context) {
	d := fallbackTimeout
	if deadline, ok := ctx.Deadline(); ok {
		d = time.Until(deadline)
	}
	ms := strconv.FormatInt(max(d.Milliseconds(), 1), 10)
	p.add("SELECT set_config('statement_timeout', $1, true), set_config('lock_timeout', $1, true)", ms)
}

// fallbackTimeout bounds the database's work when ctx carries no deadline:
// the core's default store deadline.
const fallbackTimeout = time.Second

// claim queues the INSERT that takes the call and the SELECT that tells
// what is there when it did not: two statements. The INSERT takes the
// call's advisory lock first, without waiting: a call whose tool holds its
// transaction ([Tx]) holds that lock, and a Claim never waits. With the
// lock, it inserts a running claim, or takes over a row whose lease or TTL
// ended. The SELECT is a statement of its own, so it sees what committed
// meanwhile.
func (c call) claim(p *pipeline, lease time.Duration) {
	p.add("INSERT INTO "+c.table+" AS c (call_key, fingerprint, answer, expires_at) "+
		"SELECT $1, $2, NULL, now() + $3 WHERE pg_try_advisory_xact_lock($4) "+
		"ON CONFLICT (call_key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, answer = NULL, expires_at = EXCLUDED.expires_at "+
		"WHERE c.expires_at <= now() RETURNING 1", c.key, c.fp, lease, c.lock)
	p.add("SELECT fingerprint, answer, expires_at > now() FROM "+c.table+" WHERE call_key = $1", c.key)
}

// save queues the statement that writes the answer for ttl unless the row
// holds an answer already or another body's live claim.
func (c call) save(p *pipeline, answer []byte, ttl time.Duration) {
	p.add("INSERT INTO "+c.table+" AS c (call_key, fingerprint, answer, expires_at) "+
		"VALUES ($1, $2, $3, clock_timestamp() + $4) "+
		"ON CONFLICT (call_key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, answer = EXCLUDED.answer, expires_at = EXCLUDED.expires_at "+
		"WHERE (c.answer IS NULL AND c.fingerprint = EXCLUDED.fingerprint) OR c.expires_at <= now()",
		c.key, c.fp, answer, ttl)
}

// keep queues the statement that writes the answer of the call whose tool
// holds its transaction: on its claim (or on a new row, should the sweep
// have removed that claim, which its ended lease allows), never over an
// answer or another body's claim. It affects one row when it wrote.
func (c call) keep(p *pipeline, answer []byte, ttl time.Duration) {
	p.add("INSERT INTO "+c.table+" AS c (call_key, fingerprint, answer, expires_at) "+
		"VALUES ($1, $2, $3, clock_timestamp() + $4) "+
		"ON CONFLICT (call_key) DO UPDATE SET answer = EXCLUDED.answer, expires_at = EXCLUDED.expires_at "+
		"WHERE c.answer IS NULL AND c.fingerprint = EXCLUDED.fingerprint",
		c.key, c.fp, answer, ttl)
}

// renew queues the statement that extends this body's running claim to
// lease from now. A claim whose lease has ended is not revived (as in the
// other stores: a copy may have taken it over), and neither is a claim
// held by its tool's transaction (expires_at -infinity, see [Tx]), which
// lasts as long as that transaction's session.
func (c call) renew(p *pipeline, lease time.Duration) {
	p.add("UPDATE "+c.table+" SET expires_at = now() + $3 "+
		"WHERE call_key = $1 AND fingerprint = $2 AND answer IS NULL AND expires_at > now()",
		c.key, c.fp, lease)
}

// hold queues the statements that hand the call's claim from its lease to
// the session about to begin the tool's transaction: the call's advisory
// lock taken for the session (it outlives the transaction that takes it,
// and the server drops it when the session ends, a crash included), and
// the claim's lease ended, so that once the lock is gone a copy of the call
// takes the claim over at once. It affects one row when the claim was
// still this body's and without an answer.
func (c call) hold(p *pipeline) {
	p.add("SELECT pg_advisory_lock($1)", c.lock)
	p.add("UPDATE "+c.table+" SET expires_at = '-infinity' "+
		"WHERE call_key = $1 AND fingerprint = $2 AND answer IS NULL", c.key, c.fp)
}

// unhold queues the statement that releases the session's advisory lock
// of the call.
func (c call) unhold(p *pipeline) {
	p.add("SELECT pg_advisory_unlock($1)", c.lock)
}

// kept queues the statements that wait for the call's advisory lock (the
// transaction holding it has ended, one way or the other) and then tell
// whether answer is the call's kept answer: two statements.
func (c call) kept(p *pipeline, answer []byte) {
	p.add("SELECT pg_advisory_xact_lock($1)", c.lock)
	p.add("SELECT answer = $3 FROM "+c.table+" WHERE call_key = $1 AND fingerprint = $2", c.key, c.fp, answer)
}

// sweep queues the statement that removes a few expired rows, oldest
// first, skipping rows another transaction holds.
func (s *Store) sweep(p *pipeline) {
	p.add("DELETE FROM " + s.table + " WHERE call_key IN (SELECT call_key FROM " + s.table +
		" WHERE expires_at < now() ORDER BY expires_at LIMIT " + strconv.Itoa(sweepPerSave) + " FOR UPDATE SKIP LOCKED)")
}
