package redislimit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/median-go/median/internal/testonly/redistest"
	"github.com/median-go/median/internal/testonly/testsupport"
	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/ratelimit"
	"github.com/median-go/median/protocol/ratelimit/redislimit"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests start their own redis-server, and freeze or kill it. They
// bound a hang, not a speed: the margin is generous.

const (
	testKey      = "mk_test_0123456789abcdefghijklmnopqrstuv"
	limitTimeout = 300 * time.Millisecond
	hangMargin   = 2 * time.Second
)

func newClient(t *testing.T, addr string) (*redis.Client, *redistest.RoundTrips) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: 1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	cmds := &redistest.RoundTrips{}
	c.AddHook(cmds)
	return c, cmds
}

// instance is one Handler limited through Redis, with a tool that counts
// its runs.
type instance struct {
	h    *protocol.Handler
	runs atomic.Int64
	logs *testsupport.Buffer
}

// newInstance builds an instance whose limiter caps every call at limit.
func newInstance(t *testing.T, client redis.UniversalClient, limit ratelimit.Limit) *instance {
	t.Helper()
	return newInstanceWith(t, client, func(*protocol.Tool) ratelimit.Config { return ratelimit.Config{Limit: limit} })
}

// newInstanceWith builds an instance whose limiter is configured by
// limits, given the instance's own lookup_order tool; the Backend, Timeout
// and Logger are set here.
func newInstanceWith(t *testing.T, client redis.UniversalClient, limits func(lookup *protocol.Tool) ratelimit.Config) *instance {
	t.Helper()
	backend, err := redislimit.New(client, redislimit.Options{Prefix: "test:" + t.Name() + ":"})
	require.NoError(t, err)
	in := &instance{logs: &testsupport.Buffer{}}
	lookup := protocol.NewTool("lookup_order", protocol.RiskLow, "Looks up an order.",
		func(ctx context.Context, c protocol.ToolCall[struct{}]) (string, error) {
			in.runs.Add(1)
			return "shipped", nil
		})
	cfg := limits(lookup)
	cfg.Backend, cfg.Timeout, cfg.Logger = backend, limitTimeout, slog.New(slog.NewTextHandler(in.logs, nil))
	ic, err := ratelimit.New(cfg)
	require.NoError(t, err)
	in.h, err = protocol.New(protocol.Config{
		Keys:         []string{testKey},
		Interceptors: []protocol.Interceptor{ic},
		Logger:       slog.New(slog.DiscardHandler),
		Tools:        []*protocol.Tool{lookup},
	})
	require.NoError(t, err)
	return in
}

var ids atomic.Int64

// call sends a new call of conversation and reports whether it was refused
// rate_limited, with the detail and how long the answer took.
func (in *instance) call(t *testing.T, conversation string) (bool, string, time.Duration) {
	t.Helper()
	body := fmt.Appendf(nil, `{"tool":"lookup_order","toolCallId":"call_%d","input":{},"context":{"conversationId":%q,"risk":"low","visitor":{"verified":false}}}`, ids.Add(1), conversation)
	key, err := protocol.ParseKey(testKey)
	require.NoError(t, err)
	start := time.Now()
	resp := in.h.Serve(context.Background(), protocol.Request{Method: http.MethodPost, Signature: key.Sign(time.Now(), body), BodyBytes: body})
	took := time.Since(start)
	require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
	var a struct {
		Result struct {
			Reason string `json:"reason"`
			Detail string `json:"detail"`
		} `json:"result"`
	}
	_ = json.Unmarshal(resp.Body, &a)
	return a.Result.Reason == ratelimit.Reason, a.Result.Detail, took
}

// TestSharedAcrossInstances: two instances on one Redis count one
// conversation's calls together.
func TestSharedAcrossInstances(t *testing.T) {
	srv := redistest.Start(t)
	ca, _ := newClient(t, srv.Addr)
	cb, _ := newClient(t, srv.Addr)
	limit := ratelimit.Limit{Calls: 3, Per: time.Minute}
	a, b := newInstance(t, ca, limit), newInstance(t, cb, limit)
	for i, in := range []*instance{a, b, a} {
		refused, _, _ := in.call(t, "conv_1")
		require.False(t, refused, "call %d of 3", i+1)
	}
	refused, detail, _ := b.call(t, "conv_1")
	require.True(t, refused, "the fourth call, on either instance")
	assert.Contains(t, detail, "Try again in about 20 seconds.", "one call comes back every 60 s / 3")
	refused, _, _ = b.call(t, "conv_2")
	assert.False(t, refused, "another conversation has its own count")
	assert.Equal(t, int64(4), a.runs.Load()+b.runs.Load(), "three calls of conv_1 and one of conv_2 ran; the refused one did not")
}

// TestToolRateSharedAcrossInstances: each instance keys lookup_order's own
// rate by its own *protocol.Tool, and the count in Redis is named by the
// tool's name, so the two instances count the tool's calls together.
func TestToolRateSharedAcrossInstances(t *testing.T) {
	srv := redistest.Start(t)
	ca, _ := newClient(t, srv.Addr)
	cb, _ := newClient(t, srv.Addr)
	own := func(lookup *protocol.Tool) ratelimit.Config {
		return ratelimit.Config{Tools: map[*protocol.Tool]ratelimit.Limit{lookup: {Calls: 2, Per: time.Minute}}}
	}
	a, b := newInstanceWith(t, ca, own), newInstanceWith(t, cb, own)
	for i, in := range []*instance{a, b} {
		refused, _, _ := in.call(t, "conv_1")
		require.False(t, refused, "call %d of 2", i+1)
	}
	refused, detail, _ := a.call(t, "conv_1")
	require.True(t, refused, "the third call, on either instance")
	assert.Contains(t, detail, "Try again in about 30 seconds.")
	assert.Equal(t, int64(2), a.runs.Load()+b.runs.Load())
}

// TestOneRoundTrip: after the script is loaded, each call is one command.
func TestOneRoundTrip(t *testing.T) {
	srv := redistest.Start(t)
	c, cmds := newClient(t, srv.Addr)
	in := newInstance(t, c, ratelimit.Limit{Calls: 100, Per: time.Minute})
	in.call(t, "conv_1") // EVALSHA, then EVAL when the script is not loaded yet
	before := cmds.Load()
	for range 10 {
		in.call(t, "conv_1")
	}
	assert.Equal(t, int64(10), cmds.Load()-before, "one round trip per call")
}

// TestLongConversationIDCostsOneKey: a count's key is the prefix and a
// digest, whatever the conversation id's length, and Redis expires it.
func TestLongConversationIDCostsOneKey(t *testing.T) {
	srv := redistest.Start(t)
	c, _ := newClient(t, srv.Addr)
	in := newInstance(t, c, ratelimit.Limit{Calls: 5, Per: time.Minute})
	in.call(t, strings.Repeat("c", 100_000))
	keys, err := c.Keys(context.Background(), "*").Result()
	require.NoError(t, err)
	require.Len(t, keys, 1)
	assert.Equal(t, len("rate:test:"+t.Name()+":")+64, len(keys[0]))
	ttl, err := c.PTTL(context.Background(), keys[0]).Result()
	require.NoError(t, err)
	assert.Positive(t, ttl, "Redis expires the count")
	assert.LessOrEqual(t, ttl, time.Minute)
}

// TestFrozenRedisFailsOpen: with Redis frozen (SIGSTOP) or killed, each
// call is answered within the deadline and runs: a limit is protection,
// not a contract. The failure is logged, without the server's address in
// the answer.
func TestFrozenRedisFailsOpen(t *testing.T) {
	for _, how := range []string{"frozen", "killed"} {
		t.Run(how, func(t *testing.T) {
			srv := redistest.Start(t)
			c, _ := newClient(t, srv.Addr)
			in := newInstance(t, c, ratelimit.Limit{Calls: 1, Per: time.Minute})
			refused, _, _ := in.call(t, "conv_1")
			require.False(t, refused)
			refused, _, _ = in.call(t, "conv_1")
			require.True(t, refused, "Redis counts: the second call is over the cap")

			if how == "frozen" {
				srv.Pause()
				defer srv.Resume()
			} else {
				srv.Kill()
			}
			for range 3 {
				refused, _, took := in.call(t, "conv_1")
				assert.False(t, refused, "Redis %s: the call runs unlimited", how)
				assert.Less(t, took, limitTimeout+hangMargin, "answered within the deadline")
			}
			assert.Equal(t, int64(4), in.runs.Load())
			assert.Contains(t, in.logs.String(), "runs unlimited")
			assert.Contains(t, in.logs.String(), "level=WARN")

			if how == "frozen" {
				srv.Resume()
				// Once Redis answers again, the count it kept applies.
				testsupport.Eventually(t, "after SIGCONT the cap applies again", func() bool {
					refused, _, _ := in.call(t, "conv_1")
					return refused
				})
			}
		})
	}
}

func TestNewRefusesUnsafeClients(t *testing.T) {
	_, err := redislimit.New(nil, redislimit.Options{})
	require.ErrorContains(t, err, "nil")
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // nothing is dialled: only the options are read
	defer c.Close()
	_, err = redislimit.New(c, redislimit.Options{})
	require.ErrorIs(t, err, redislimit.ErrNoContextTimeout)
}
