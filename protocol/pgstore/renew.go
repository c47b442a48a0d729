package pgstore

import (
	"context"
	"fmt"
	"time"
)

// Renew implements [protocol.Store]: one round trip. It sets the running
// claim's end to lease from now when the row still holds this body's
// claim and its lease has not ended; an answer, another body's claim and
// a call held by another transaction (whose advisory lock is taken) are
// left as they are, without waiting.
func (s *Store) Renew(ctx context.Context, key, fingerprint string, lease time.Duration) error {
	q, err := s.query(key, fingerprint)
	if err != nil {
		return err
	}
	if lease < time.Millisecond {
		return fmt.Errorf("median: pgstore: the lease must be at least 1ms, got %s", lease)
	}
	sql := "BEGIN;" + timeouts(ctx) + q.renew(lease) + "COMMIT;"
	if _, err := s.exec(ctx, sql); err != nil {
		return s.fail(ctx, "renew a claim in", err)
	}
	return nil
}

// renew moves the end of this body's running claim to lease from now,
// holding the call's advisory lock (taken without waiting) as claim does.
func (c call) renew(lease time.Duration) string {
	return "UPDATE " + c.table + " SET expires_at = now() + " + interval(lease) + " " +
		"WHERE call_key = " + c.key + " AND fingerprint = " + c.fp + " AND answer IS NULL AND expires_at > now() " +
		"AND pg_try_advisory_xact_lock(" + c.lock + ");"
}
