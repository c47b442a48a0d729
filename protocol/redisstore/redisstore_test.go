package redisstore_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/median-go/median/internal/testonly/redistest"
	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/redisstore"
	"github.com/median-go/median/protocol/storetest"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newClient returns a client on the test server, closed when t ends. The
// server is $MEDIAN_TEST_REDIS_URL or a local one (see redistest.URL); the
// test is skipped when there is none.
func newClient(t testing.TB) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(redistest.URL(t))
	require.NoError(t, err, "%s must be a redis:// URL", redistest.URLEnv)
	opt.ContextTimeoutEnabled = true
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, c.Ping(ctx).Err(), "the Redis server at %s does not answer", opt.Addr)
	return c
}

// ownClient returns a client on a redis-server of its own (redistest.Start),
// both closed when t ends, for a test that reads the server's global
// counters or state: on the shared server other tests' commands would be
// in them.
func ownClient(t testing.TB) *redis.Client {
	t.Helper()
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newStore returns a Store on c, failing the test on an error.
func newStore(t testing.TB, c redis.UniversalClient, opts redisstore.Options) *redisstore.Store {
	t.Helper()
	s, err := redisstore.New(c, opts)
	require.NoError(t, err)
	return s
}

// uniquePrefix returns a key prefix no other test or run uses, and deletes
// its keys when t ends.
func uniquePrefix(t testing.TB, c *redis.Client) string {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	prefix := "median:test:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		keys, _ := c.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			_ = c.Del(ctx, keys...).Err()
		}
	})
	return prefix
}

func TestStoreBehaviour(t *testing.T) {
	c := newClient(t)
	storetest.Run(t, func(t *testing.T) protocol.Store {
		return newStore(t, c, redisstore.Options{Prefix: uniquePrefix(t, c)})
	})
}

func TestTwoInstances(t *testing.T) {
	// Two instances: each has its own client (its own connections) and
	// store, on one Redis, with one prefix.
	a, b := newClient(t), newClient(t)
	storetest.RunHandlers(t, func(t *testing.T) (protocol.Store, protocol.Store) {
		prefix := uniquePrefix(t, a)
		return newStore(t, a, redisstore.Options{Prefix: prefix}), newStore(t, b, redisstore.Options{Prefix: prefix})
	})
}

const fp = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// key returns a store key in the core's format, 64 hex digits.
func key(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:])
}

func TestOneRoundTripPerStep(t *testing.T) {
	c := newClient(t)
	s := newStore(t, c, redisstore.Options{Prefix: uniquePrefix(t, c)})
	ctx := context.Background()
	// The first use of each script on a server may load it (EVALSHA, then EVAL).
	_, _, err := s.Claim(ctx, key("warm_up"), fp, time.Minute)
	require.NoError(t, err)
	_, err = s.Save(ctx, key("warm_up"), fp, []byte(`{"result":1}`), time.Minute)
	require.NoError(t, err)

	counter := &redistest.RoundTrips{}
	c.AddHook(counter)
	st, _, err := s.Claim(ctx, key("call_1"), fp, time.Minute)
	require.NoError(t, err)
	require.Equal(t, protocol.ClaimAcquired, st)
	require.Equal(t, int64(1), counter.Load(), "a claim must cost one round trip")
	st, _, err = s.Claim(ctx, key("call_1"), fp, time.Minute)
	require.NoError(t, err)
	require.Equal(t, protocol.ClaimRunning, st)
	require.Equal(t, int64(2), counter.Load(), "a copy's claim must cost one round trip, and never wait")
	_, err = s.Save(ctx, key("call_1"), fp, []byte(`{"result":2}`), time.Minute)
	require.NoError(t, err)
	require.Equal(t, int64(3), counter.Load(), "a save must cost one round trip")
	st, answer, err := s.Claim(ctx, key("call_1"), fp, time.Minute)
	require.NoError(t, err)
	require.Equal(t, protocol.ClaimDone, st)
	require.Equal(t, `{"result":2}`, string(answer))
	require.Equal(t, int64(4), counter.Load(), "a repeat must cost one round trip")
}

func TestStoredValue(t *testing.T) {
	c := newClient(t)
	prefix := uniquePrefix(t, c)
	s := newStore(t, c, redisstore.Options{Prefix: prefix})
	ctx := context.Background()
	k := key("call_1")

	_, _, err := s.Claim(ctx, k, fp, time.Minute)
	require.NoError(t, err)
	v, err := c.Get(ctx, prefix+k).Result()
	require.NoError(t, err)
	require.Equal(t, "r"+fp+"\n", v, "a running claim")
	ttl, err := c.PTTL(ctx, prefix+k).Result()
	require.NoError(t, err)
	require.True(t, ttl > 0 && ttl <= time.Minute, "the claim must expire with its lease, PTTL %s", ttl)

	evicted, err := s.Save(ctx, k, fp, []byte(`{"result":1}`), 10*time.Minute)
	require.NoError(t, err)
	require.Zero(t, evicted)
	v, err = c.Get(ctx, prefix+k).Result()
	require.NoError(t, err)
	require.Equal(t, "d"+fp+"\n"+`{"result":1}`, v, "an answer")
	ttl, err = c.PTTL(ctx, prefix+k).Result()
	require.NoError(t, err)
	require.True(t, ttl > time.Minute && ttl <= 10*time.Minute, "the answer must expire with its TTL, PTTL %s", ttl)
}

func TestForeignValue(t *testing.T) {
	c := newClient(t)
	prefix := uniquePrefix(t, c)
	s := newStore(t, c, redisstore.Options{Prefix: prefix})
	ctx := context.Background()
	require.NoError(t, c.Set(ctx, prefix+key("call_1"), "something else", time.Minute).Err())
	_, _, err := s.Claim(ctx, key("call_1"), "abc", time.Minute)
	require.ErrorContains(t, err, "did not write")
	require.ErrorContains(t, err, "Prefix")
}

func TestBadArguments(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer c.Close()
	s := newStore(t, c, redisstore.Options{})
	ctx := context.Background()
	_, _, err := s.Claim(ctx, key("call_1"), "a\nb", time.Minute)
	require.ErrorContains(t, err, "fingerprint")
	_, _, err = s.Claim(ctx, key("call_1"), "abc", 0)
	require.ErrorContains(t, err, "lease")
	_, err = s.Save(ctx, key("call_1"), "abc", nil, 0)
	require.ErrorContains(t, err, "TTL")
	_, err = redisstore.New(nil, redisstore.Options{})
	require.ErrorContains(t, err, "nil")
}

func TestNewRefusesAClientThatIgnoresDeadlines(t *testing.T) {
	clients := map[string]redis.UniversalClient{
		"Client":         redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}),
		"ClusterClient":  redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}}),
		"Ring":           redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}}),
		"FailoverClient": redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{"127.0.0.1:1"}}),
	}
	for name, c := range clients {
		_, err := redisstore.New(c, redisstore.Options{})
		require.ErrorIs(t, err, redisstore.ErrNoContextTimeout, name)
		require.ErrorContains(t, err, "ContextTimeoutEnabled: true", name)
		_ = c.Close()
	}
	ok := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, ContextTimeoutEnabled: true})
	defer ok.Close()
	_, err := redisstore.New(ok, redisstore.Options{})
	require.NoError(t, err)
}

func TestServerDown(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond, ContextTimeoutEnabled: true})
	defer c.Close()
	s := newStore(t, c, redisstore.Options{})
	_, _, err := s.Claim(context.Background(), key("call_1"), "abc", time.Minute)
	require.ErrorContains(t, err, `could not claim key "median:call:`+key("call_1")+`"`)
}

func BenchmarkServeRedisStore(b *testing.B) {
	c := newClient(b)
	storetest.BenchmarkServe(b, newStore(b, c, redisstore.Options{Prefix: uniquePrefix(b, c)}))
}
