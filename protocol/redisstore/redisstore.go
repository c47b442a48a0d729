// Package redisstore is a [protocol.Store] on Redis (github.com/redis/go-redis/v9),
// for replay protection shared by every instance that serves one Median
// endpoint: a toolCallId answered on one instance is answered with the same
// bytes on any other, and its tool runs once.
//
// # The client must honour deadlines
//
// The core gives each store call a deadline (protocol.Config.StoreTimeout,
// default 1 s), and go-redis puts a context's deadline on the socket only
// when the client is built with ContextTimeoutEnabled: true. Without it a
// frozen Redis holds every request for the client's own ReadTimeout times
// its retries (15 s with go-redis's defaults) before the call fails. So
// [New] refuses a *redis.Client, *redis.ClusterClient or *redis.Ring whose
// options have it false. Build the client like this:
//
//	opt, err := redis.ParseURL(url)
//	opt.ContextTimeoutEnabled = true // the store's deadline reaches the socket
//	opt.DialTimeout = 500 * time.Millisecond
//	opt.ReadTimeout = 500 * time.Millisecond
//	opt.WriteTimeout = 500 * time.Millisecond
//	opt.PoolTimeout = 500 * time.Millisecond
//	opt.MaxRetries = 1
//	store, err := redisstore.New(redis.NewClient(opt), redisstore.Options{})
//
// # How it works
//
// Each toolCallId is one Redis string key: Prefix + the core's key, the hex
// SHA-256 of the id (64 characters, so a long id costs what a short one
// costs).
//
//   - Claim is one small Lua script, one round trip: it returns the value
//     under the key, or, when there is none, sets the running claim with PX
//     lease. The value tells the rest: an answer (ClaimDone), another body
//     (ClaimConflict), or the same body still running (ClaimRunning). Claim
//     never waits: on ClaimRunning the core asks again shortly, until the
//     answer is there, the lease ends, or its request ends.
//   - Save is one small Lua script (one round trip) that writes the answer
//     with PX ttl unless the key already holds an answer or another body's
//     claim: the first answer wins, so every repeat gets the same bytes.
//   - Renew is one small Lua script (one round trip) that sets the running
//     claim's expiry to the lease from now (PEXPIRE), when the key still
//     holds this body's claim; an answer or another body's claim is left
//     as it is.
//
// The normal path is two round trips per call: the claim and the save. The
// first use of each script on a server (after a restart too) costs one more
// (EVALSHA, then EVAL).
//
// # Bounds
//
// Redis expires every key itself: a claim after its lease, an answer after
// ReplayTTL (default 10 minutes). Ids cost nothing extra: the key is a
// digest. A key costs Redis about 200 bytes plus the answer (measured with
// MEMORY USAGE on Redis 7.0: 312 bytes for a 100-byte answer, about 112 KiB
// for a 100 KB one), so size maxmemory for calls per minute × 10 × that.
// Set maxmemory-policy to noeviction: every key of this store has a TTL, so
// any eviction policy (volatile-* included) may drop answers early, which
// this store cannot report, and their toolCallIds could run again. With
// noeviction a full Redis refuses the claim and the call is answered
// execution_failed without running the tool.
// Save always reports 0 evicted.
//
// When Redis is frozen, unreachable or too slow, each Claim gives up at the
// core's deadline and the call is answered execution_failed without running
// the tool; a failed Save is logged and the answer still goes out.
//
// # When an instance crashes mid-call
//
// Its claim stays until the lease ends (Redis expires the key), so the
// toolCallId is blocked for at most one lease: copies that arrive meanwhile
// wait, or give up when their request ends. After the lease the next copy
// claims the id and runs the tool again. Delivery is then at-least-once, not
// exactly-once: keep tools that change things idempotent on their own (by
// toolCallId) when a second run would hurt. The same holds when a tool runs
// longer than its lease; the core sets the lease to 1 minute, or the tool's
// timeout plus 10 seconds when that is longer.
//
// # Stored value
//
// One string per key, not a hash, with its expiry set in the same command.
// The value is one state byte ('r' running, 'd' done), the fingerprint (the
// core's 64 hex digits of the body's SHA-256), a newline, then the answer:
// 66 bytes over the answer itself.
package redisstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/median-go/median/internal/base/redisopt"
	"github.com/median-go/median/protocol"
	"github.com/redis/go-redis/v9"
)

// DefaultPrefix is the key prefix when [Options.Prefix] is empty.
const DefaultPrefix = "median:call:"

// Options configures [New]. The zero value is ready to use.
type Options struct {
	// Prefix is put before each key; default "median:call:". Give each
	// endpoint its own prefix when several share one Redis database.
	Prefix string
}

// Store is a [protocol.Store] on Redis. Build it with [New]; it is safe for
// concurrent use and holds no resources of its own (close the client when
// you are done with it).
type Store struct {
	client redis.UniversalClient
	prefix string
}

var _ protocol.Store = (*Store)(nil)

// ErrNoContextTimeout is returned by [New] for a client built without
// ContextTimeoutEnabled: true, which would let a frozen Redis hold requests
// far past protocol.Config.StoreTimeout.
var ErrNoContextTimeout = errors.New("median: redisstore: the Redis client was built with ContextTimeoutEnabled false, so go-redis would ignore the store's deadline and a frozen Redis would hold every request for ReadTimeout × retries (15 s by default); set ContextTimeoutEnabled: true in the client's options (see the package documentation for timeouts that fit)")

// New returns a Store on client: a *redis.Client (a failover client is
// one), *redis.ClusterClient or *redis.Ring. Pass it as
// [protocol.Config.Store].
//
// The client must be built with ContextTimeoutEnabled: true, so that the
// core's deadline on each store call reaches the socket: New returns
// [ErrNoContextTimeout] when one of the clients above has it false. For
// another implementation of redis.UniversalClient it cannot tell; make sure
// yourself. Keep the client's DialTimeout, ReadTimeout, WriteTimeout and
// PoolTimeout under a second or so too (see the package documentation).
func New(client redis.UniversalClient, opts Options) (*Store, error) {
	if client == nil {
		return nil, errors.New("median: redisstore: the client is nil")
	}
	if enabled, known := redisopt.ContextTimeoutEnabled(client); known && !enabled {
		return nil, ErrNoContextTimeout
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	return &Store{client: client, prefix: opts.Prefix}, nil
}

// States of a stored value, its first byte.
const (
	stateRunning = 'r'
	stateDone    = 'd'
)

// encode builds a stored value: state, fingerprint, '\n', answer.
func encode(state byte, fingerprint string, answer []byte) []byte {
	v := make([]byte, 0, 2+len(fingerprint)+len(answer))
	v = append(v, state)
	v = append(v, fingerprint...)
	v = append(v, '\n')
	return append(v, answer...)
}

// decode splits a stored value; ok is false when this store did not write it.
func decode(v []byte) (state byte, fingerprint, answer []byte, ok bool) {
	if len(v) < 2 || (v[0] != stateRunning && v[0] != stateDone) {
		return 0, nil, nil, false
	}
	fingerprint, answer, ok = bytes.Cut(v[1:], []byte{'\n'})
	return v[0], fingerprint, answer, ok
}

// checkFingerprint refuses a fingerprint the encoding cannot hold.
func checkFingerprint(fp string) error {
	if fp == "" || strings.IndexByte(fp, '\n') >= 0 {
		return fmt.Errorf("median: redisstore: the fingerprint must be non-empty and hold no newline, got %q", fp)
	}
	return nil
}

// claimScript returns the value under the key, or sets the running claim
// when there is none and returns 1. KEYS[1] the key; ARGV[1] the running
// value; ARGV[2] the lease in milliseconds.
var claimScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then
  return v
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`)

// Claim implements [protocol.Store]: one round trip, no waiting; see the
// package documentation.
func (s *Store) Claim(ctx context.Context, key, fingerprint string, lease time.Duration) (protocol.ClaimStatus, []byte, error) {
	if err := checkFingerprint(fingerprint); err != nil {
		return 0, nil, err
	}
	if lease < time.Millisecond {
		return 0, nil, fmt.Errorf("median: redisstore: the lease must be at least 1ms, got %s", lease)
	}
	k := s.prefix + key
	res, err := claimScript.Run(ctx, s.client, []string{k}, encode(stateRunning, fingerprint, nil), lease.Milliseconds()).Result()
	if err != nil {
		return 0, nil, s.fail(ctx, "claim", k, err)
	}
	v, isValue := res.(string)
	if !isValue {
		return protocol.ClaimAcquired, nil, nil
	}
	state, fp, answer, ok := decode([]byte(v))
	switch {
	case !ok:
		return 0, nil, fmt.Errorf("median: redisstore: key %q holds a value this store did not write; give the store a Prefix no other program uses", k)
	case string(fp) != fingerprint:
		return protocol.ClaimConflict, nil, nil
	case state == stateDone:
		return protocol.ClaimDone, answer, nil
	}
	return protocol.ClaimRunning, nil, nil
}

// saveScript writes the answer unless the key holds an answer already or
// another body's claim. KEYS[1] the key; ARGV[1] this call's running value;
// ARGV[2] the done value; ARGV[3] the TTL in milliseconds. It returns 1 when
// it wrote, 0 when it kept what was there.
var saveScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v == false or v == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0
`)

// Save implements [protocol.Store]; see the package documentation. It
// always reports 0 evicted: Redis expires keys itself and tells no one when
// it evicts one early (see Bounds in the package documentation).
func (s *Store) Save(ctx context.Context, key, fingerprint string, answer []byte, ttl time.Duration) (int, error) {
	if err := checkFingerprint(fingerprint); err != nil {
		return 0, err
	}
	if ttl < time.Millisecond {
		return 0, fmt.Errorf("median: redisstore: the TTL must be at least 1ms, got %s", ttl)
	}
	k := s.prefix + key
	err := saveScript.Run(ctx, s.client, []string{k},
		encode(stateRunning, fingerprint, nil), encode(stateDone, fingerprint, answer), ttl.Milliseconds()).Err()
	if err != nil {
		return 0, s.fail(ctx, "save the answer to", k, err)
	}
	return 0, nil
}

// renewScript sets a new expiry on this call's running claim, and on
// nothing else. KEYS[1] the key; ARGV[1] this call's running value; ARGV[2]
// the lease in milliseconds. It returns 1 when it renewed, 0 when the key
// holds an answer, another body's claim or nothing.
var renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
`)

// Renew implements [protocol.Store]: one round trip. It sets the running
// claim's expiry to lease from now, and leaves an answer, another body's
// claim and a key that is gone (its lease ended) as they are.
func (s *Store) Renew(ctx context.Context, key, fingerprint string, lease time.Duration) error {
	if err := checkFingerprint(fingerprint); err != nil {
		return err
	}
	if lease < time.Millisecond {
		return fmt.Errorf("median: redisstore: the lease must be at least 1ms, got %s", lease)
	}
	k := s.prefix + key
	if err := renewScript.Run(ctx, s.client, []string{k}, encode(stateRunning, fingerprint, nil), lease.Milliseconds()).Err(); err != nil {
		return s.fail(ctx, "renew the claim on", k, err)
	}
	return nil
}

// fail wraps a Redis error, naming the context's end when it ended.
func (s *Store) fail(ctx context.Context, what, key string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		err = fmt.Errorf("%w (%w)", ctxErr, err)
	}
	return fmt.Errorf("median: redisstore: could not %s key %q: %w", what, key, err)
}

// Kind names the store in the diagnostics report: "redis".
func (s *Store) Kind() string { return "redis" }

// Probe sends one PING, for the diagnostics report's store.reachable. The
// report bounds it with its own deadline; its error may hold the server's
// address, so the report shows only whether it failed.
func (s *Store) Probe(ctx context.Context) error {
	if err := s.client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("median: redisstore: PING failed: %w", err)
	}
	return nil
}
