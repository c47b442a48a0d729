// Package redislimit is a [ratelimit.Backend] on Redis, for caps shared by
// every instance that serves one Median endpoint: a conversation's calls
// are counted once whichever instance answers them. It counts with
// github.com/go-redis/redis_rate (the GCRA algorithm, one small Lua script)
// on a github.com/redis/go-redis/v9 client.
//
// Each call is one round trip (EVALSHA; the first call after Redis starts
// loads the script with one more), under ratelimit.Config.Timeout. When
// Redis is frozen, unreachable or too slow, the call runs unlimited and
// the failure is logged: a limit is protection, not a contract (see
// package ratelimit).
//
// Each count is one Redis key, Prefix and the hex SHA-256 of the count's
// name (64 characters, so a long conversation id costs what a short one
// costs), which Redis expires once the count is full again: idle counts
// cost nothing. Build the client with ContextTimeoutEnabled: true, as for
// protocol/redisstore, so that the deadline reaches the socket.
package redislimit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/median-go/median/internal/base/redisopt"
	"github.com/median-go/median/protocol/ratelimit"
	"github.com/redis/go-redis/v9"
)

// DefaultPrefix is the key prefix when [Options.Prefix] is empty; redis_rate
// puts "rate:" before it.
const DefaultPrefix = "median:limit:"

// Options configures [New]. The zero value is ready to use.
type Options struct {
	// Prefix is put before each key; default "median:limit:". Give each
	// endpoint its own prefix when several share one Redis database.
	Prefix string
}

// Backend is a [ratelimit.Backend] on Redis. Build it with [New]; it is
// safe for concurrent use and holds no resources of its own (close the
// client when you are done with it).
type Backend struct {
	limiter *redis_rate.Limiter
	prefix  string
}

var _ ratelimit.Backend = (*Backend)(nil)

// ErrNoContextTimeout is returned by [New] for a client built without
// ContextTimeoutEnabled: true, which would let a frozen Redis hold every
// call far past ratelimit.Config.Timeout.
var ErrNoContextTimeout = errors.New("median: redislimit: the Redis client was built with ContextTimeoutEnabled false, so go-redis would ignore the limit's deadline and a frozen Redis would hold every call for ReadTimeout × retries; set ContextTimeoutEnabled: true in the client's options")

// New returns a Backend on client: a *redis.Client (a failover client is
// one), *redis.ClusterClient or *redis.Ring, built with
// ContextTimeoutEnabled: true ([ErrNoContextTimeout] otherwise). Pass it
// as ratelimit.Config.Backend.
func New(client redis.UniversalClient, opts Options) (*Backend, error) {
	if client == nil {
		return nil, errors.New("median: redislimit: the client is nil")
	}
	if enabled, known := redisopt.ContextTimeoutEnabled(client); known && !enabled {
		return nil, ErrNoContextTimeout
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	return &Backend{limiter: redis_rate.NewLimiter(client), prefix: opts.Prefix}, nil
}

// Allow implements [ratelimit.Backend]: one round trip.
func (b *Backend) Allow(ctx context.Context, key string, limit ratelimit.Limit) (bool, time.Duration, error) {
	sum := sha256.Sum256([]byte(key))
	res, err := b.limiter.Allow(ctx, b.prefix+hex.EncodeToString(sum[:]), redis_rate.Limit{Rate: limit.Calls, Burst: limit.Calls, Period: limit.Per})
	if err != nil {
		return false, 0, err
	}
	if res.Allowed > 0 {
		return true, 0, nil
	}
	return false, res.RetryAfter, nil
}
