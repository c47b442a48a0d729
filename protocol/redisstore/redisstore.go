// Package redisstore is a [protocol.Store] on Redis (github.com/redis/go-redis/v9),
// for replay protection shared by every instance that serves one Median
// endpoint: a toolCallId answered on one instance is answered with the same
// bytes on any other, and its tool runs once.
//
// # How it works
//
// Each toolCallId is one Redis string key, Prefix + toolCallId.
//
//   - Claim is SET key "running" NX PX lease: when it succeeds the caller
//     runs the tool (one round trip). Otherwise a GET tells the rest: an
//     answer (ClaimDone), another body (ClaimConflict), or the same body
//     still running, and then the caller waits.
//   - Save is one small Lua script (one round trip) that writes the answer
//     with PX ttl unless the key already holds an answer or another body's
//     claim: the first answer wins, so every repeat gets the same bytes.
//   - A waiter polls every PollInterval (GET, and SET NX again once the key
//     is gone) until the answer is there, its context ends, or the lease
//     expires and it takes the claim over. Waiters exist only when copies of
//     one call overlap (Median sends each call once; an overlapping copy is a
//     replay or a proxy's retry), so this rare path pays at most
//     PollInterval of latency instead of every instance holding a Pub/Sub
//     connection and a background goroutine. It uses pooled connections and
//     leaves nothing behind when it ends.
//
// The normal path is two round trips per call: the claim and the save.
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
// One string per id, not a hash: SET NX PX creates the claim and its expiry
// atomically in one command, which a hash cannot (HSETNX has no expiry).
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

	"github.com/median-go/median/protocol"
	"github.com/redis/go-redis/v9"
)

// Defaults of [Options].
const (
	DefaultPrefix       = "median:call:"
	DefaultPollInterval = 50 * time.Millisecond
)

// Options configures [New]. The zero value is ready to use.
type Options struct {
	// Prefix is put before each toolCallId to make its key; default
	// "median:call:". Give each endpoint its own prefix when several share
	// one Redis database.
	Prefix string
	// PollInterval is how often a caller waiting for a running copy of the
	// same call looks again; default 50 ms. It is the most a waiter's answer
	// is delayed.
	PollInterval time.Duration
}

// Store is a [protocol.Store] on Redis. Build it with [New]; it is safe for
// concurrent use and holds no resources of its own (close the client when
// you are done with it).
type Store struct {
	client redis.UniversalClient
	prefix string
	poll   time.Duration
}

var _ protocol.Store = (*Store)(nil)

// New returns a Store on client: a *redis.Client, *redis.ClusterClient,
// *redis.Ring or failover client. Pass it as [protocol.Config.Store]:
//
//	protocol.Config{Store: redisstore.New(redis.NewClient(opt), redisstore.Options{})}
func New(client redis.UniversalClient, opts Options) *Store {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	return &Store{client: client, prefix: opts.Prefix, poll: opts.PollInterval}
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

// Claim implements [protocol.Store]; see the package documentation.
func (s *Store) Claim(ctx context.Context, id, fingerprint string, lease time.Duration) (protocol.ClaimResult, error) {
	if err := checkFingerprint(fingerprint); err != nil {
		return protocol.ClaimResult{}, err
	}
	if lease < time.Millisecond {
		return protocol.ClaimResult{}, fmt.Errorf("median: redisstore: the lease must be at least 1ms, got %s", lease)
	}
	key := s.prefix + id
	running := encode(stateRunning, fingerprint, nil)
	var timer *time.Timer
	for {
		ok, err := s.client.SetNX(ctx, key, running, lease).Result()
		if err != nil {
			return protocol.ClaimResult{}, s.fail(ctx, "claim", key, err)
		}
		if ok {
			return protocol.ClaimResult{Status: protocol.ClaimAcquired}, nil
		}
		v, err := s.client.Get(ctx, key).Bytes()
		if errors.Is(err, redis.Nil) {
			continue // expired or evicted since the SET: claim it now
		}
		if err != nil {
			return protocol.ClaimResult{}, s.fail(ctx, "read", key, err)
		}
		state, fp, answer, ok := decode(v)
		switch {
		case !ok:
			return protocol.ClaimResult{}, fmt.Errorf("median: redisstore: key %q holds a value this store did not write; give the store a Prefix no other program uses", key)
		case string(fp) != fingerprint:
			return protocol.ClaimResult{Status: protocol.ClaimConflict}, nil
		case state == stateDone:
			return protocol.ClaimResult{Status: protocol.ClaimDone, Answer: answer}, nil
		}
		// The same call is running elsewhere: look again shortly.
		if timer == nil {
			timer = time.NewTimer(s.poll)
			defer timer.Stop()
		} else {
			timer.Reset(s.poll)
		}
		select {
		case <-timer.C:
		case <-ctx.Done():
			return protocol.ClaimResult{}, ctx.Err()
		}
	}
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

// Save implements [protocol.Store]; see the package documentation.
func (s *Store) Save(ctx context.Context, id, fingerprint string, answer []byte, ttl time.Duration) error {
	if err := checkFingerprint(fingerprint); err != nil {
		return err
	}
	if ttl < time.Millisecond {
		return fmt.Errorf("median: redisstore: the TTL must be at least 1ms, got %s", ttl)
	}
	key := s.prefix + id
	err := saveScript.Run(ctx, s.client, []string{key},
		encode(stateRunning, fingerprint, nil), encode(stateDone, fingerprint, answer), ttl.Milliseconds()).Err()
	if err != nil {
		return s.fail(ctx, "save the answer to", key, err)
	}
	return nil
}

// fail wraps a Redis error, or returns ctx.Err() when the context ended.
func (s *Store) fail(ctx context.Context, what, key string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("median: redisstore: could not %s key %q: %w", what, key, err)
}
