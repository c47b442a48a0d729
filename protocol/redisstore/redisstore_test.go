package redisstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

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

// redisURL returns the test server's URL: MEDIAN_TEST_REDIS_URL, else a
// server answering on 127.0.0.1:6379 or :6399. It skips the test when there
// is none.
func redisURL(t testing.TB) string {
	t.Helper()
	if u := os.Getenv("MEDIAN_TEST_REDIS_URL"); u != "" {
		return u
	}
	for _, port := range []string{"6379", "6399"} {
		conn, err := net.DialTimeout("tcp", "127.0.0.1:"+port, 300*time.Millisecond)
		if err == nil {
			_ = conn.Close()
			return "redis://127.0.0.1:" + port + "/0"
		}
	}
	t.Skip("no Redis server: start one and run MEDIAN_TEST_REDIS_URL=redis://127.0.0.1:6379/0 go test ./protocol/redisstore")
	return ""
}

// newClient returns a client on the test server, closed when t ends.
func newClient(t testing.TB) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(redisURL(t))
	require.NoError(t, err, "MEDIAN_TEST_REDIS_URL must be a redis:// URL")
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, c.Ping(ctx).Err(), "the Redis server at %s does not answer", opt.Addr)
	return c
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
		return redisstore.New(c, redisstore.Options{Prefix: uniquePrefix(t, c), PollInterval: 10 * time.Millisecond})
	})
}

func TestTwoInstances(t *testing.T) {
	// Two instances: each has its own client (its own connections) and
	// store, on one Redis, with one prefix.
	a, b := newClient(t), newClient(t)
	storetest.RunHandlers(t, func(t *testing.T) (protocol.Store, protocol.Store) {
		prefix := uniquePrefix(t, a)
		return redisstore.New(a, redisstore.Options{Prefix: prefix}), redisstore.New(b, redisstore.Options{Prefix: prefix})
	})
}

// commandCounter is a go-redis hook that counts commands sent.
type commandCounter struct{ n atomic.Int64 }

func (h *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1) // one round trip
		return next(ctx, cmds)
	}
}

func TestTwoRoundTripsPerCall(t *testing.T) {
	c := newClient(t)
	s := redisstore.New(c, redisstore.Options{Prefix: uniquePrefix(t, c)})
	ctx := context.Background()
	const fp = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	// The first Save of a process may load the script (EVALSHA, then EVAL).
	_, err := s.Claim(ctx, "warm_up", fp, time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.Save(ctx, "warm_up", fp, []byte(`{"result":1}`), time.Minute))

	counter := &commandCounter{}
	c.AddHook(counter)
	res, err := s.Claim(ctx, "call_1", fp, time.Minute)
	require.NoError(t, err)
	require.Equal(t, protocol.ClaimAcquired, res.Status)
	require.NoError(t, s.Save(ctx, "call_1", fp, []byte(`{"result":2}`), time.Minute))
	require.Equal(t, int64(2), counter.n.Load(), "a call must cost one round trip to claim and one to save")
}

func TestStoredValue(t *testing.T) {
	c := newClient(t)
	prefix := uniquePrefix(t, c)
	s := redisstore.New(c, redisstore.Options{Prefix: prefix})
	ctx := context.Background()
	const fp = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

	_, err := s.Claim(ctx, "call_1", fp, time.Minute)
	require.NoError(t, err)
	v, err := c.Get(ctx, prefix+"call_1").Result()
	require.NoError(t, err)
	require.Equal(t, "r"+fp+"\n", v, "a running claim")
	ttl, err := c.PTTL(ctx, prefix+"call_1").Result()
	require.NoError(t, err)
	require.True(t, ttl > 0 && ttl <= time.Minute, "the claim must expire with its lease, PTTL %s", ttl)

	require.NoError(t, s.Save(ctx, "call_1", fp, []byte(`{"result":1}`), 10*time.Minute))
	v, err = c.Get(ctx, prefix+"call_1").Result()
	require.NoError(t, err)
	require.Equal(t, "d"+fp+"\n"+`{"result":1}`, v, "an answer")
	ttl, err = c.PTTL(ctx, prefix+"call_1").Result()
	require.NoError(t, err)
	require.True(t, ttl > time.Minute && ttl <= 10*time.Minute, "the answer must expire with its TTL, PTTL %s", ttl)
}

func TestForeignValue(t *testing.T) {
	c := newClient(t)
	prefix := uniquePrefix(t, c)
	s := redisstore.New(c, redisstore.Options{Prefix: prefix})
	ctx := context.Background()
	require.NoError(t, c.Set(ctx, prefix+"call_1", "something else", time.Minute).Err())
	_, err := s.Claim(ctx, "call_1", "abc", time.Minute)
	require.ErrorContains(t, err, "did not write")
	require.ErrorContains(t, err, "Prefix")
}

func TestBadArguments(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	s := redisstore.New(c, redisstore.Options{})
	ctx := context.Background()
	_, err := s.Claim(ctx, "call_1", "a\nb", time.Minute)
	require.ErrorContains(t, err, "fingerprint")
	_, err = s.Claim(ctx, "call_1", "abc", 0)
	require.ErrorContains(t, err, "lease")
	require.ErrorContains(t, s.Save(ctx, "call_1", "abc", nil, 0), "TTL")
}

func TestServerDown(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	s := redisstore.New(c, redisstore.Options{})
	_, err := s.Claim(context.Background(), "call_1", "abc", time.Minute)
	require.ErrorContains(t, err, `could not claim key "median:call:call_1"`)
}

func BenchmarkServeRedisStore(b *testing.B) {
	c := newClient(b)
	storetest.BenchmarkServe(b, redisstore.New(c, redisstore.Options{Prefix: uniquePrefix(b, c)}))
}
