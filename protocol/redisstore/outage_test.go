package redisstore_test

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
	"github.com/median-go/median/protocol/redisstore"
	"github.com/median-go/median/protocol/storetest"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// These tests start their own redis-server (skipped when it is not
// installed), freeze or kill it, and check what a call through a Handler
// answers. They bound a hang, not a speed: the margin is generous.

const (
	storeTimeout = time.Second
	hangMargin   = 2 * time.Second
)

// outage is a Handler on a redisstore whose server the test controls, with
// a tool that counts its runs.
type outage struct {
	srv   *redistest.Server
	h     *protocol.Handler
	runs  atomic.Int64
	looks atomic.Int64 // runs of the read-only lookup_order
	logs  *testsupport.Buffer
}

type orderInput struct {
	OrderID string `json:"orderId"`
}

// newOutage starts a server and a Handler on it. The client keeps
// go-redis's defaults (3 s read timeout, 3 retries) but for
// ContextTimeoutEnabled, which New requires: the store deadline alone must
// bound the call.
func newOutage(t *testing.T) *outage {
	t.Helper()
	o := &outage{srv: redistest.Start(t), logs: &testsupport.Buffer{}}
	c := redis.NewClient(&redis.Options{Addr: o.srv.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	store, err := redisstore.New(c, redisstore.Options{})
	require.NoError(t, err)
	o.h, err = protocol.New(protocol.Config{
		Keys:         []string{storetest.Key},
		Store:        store,
		StoreTimeout: storeTimeout,
		Logger:       slog.New(slog.NewTextHandler(o.logs, nil)),
		Tools: []*protocol.Tool{protocol.NewTool("cancel_order", protocol.RiskLow, "Cancels an order.",
			func(ctx context.Context, call protocol.ToolCall[orderInput]) (map[string]string, error) {
				o.runs.Add(1)
				return map[string]string{"orderId": call.Input.OrderID, "status": "cancelled"}, nil
			}),
			protocol.NewTool("lookup_order", protocol.RiskLow, "Looks an order up.",
				func(ctx context.Context, call protocol.ToolCall[orderInput]) (string, error) {
					o.looks.Add(1)
					return "processing", nil
				}, protocol.ReadOnly()),
		},
	})
	require.NoError(t, err)
	return o
}

// requireReadOnlyRuns checks that a read-only tool runs while the store
// cannot record its claim, answered within the store deadline, its answer
// not kept.
func (o *outage) requireReadOnlyRuns(t *testing.T, what string) {
	t.Helper()
	resp, took := o.call(t, "lookup_order")
	require.Less(t, took, storeTimeout+hangMargin, "%s: the read-only call must be answered within the store deadline", what)
	require.Equal(t, `{"result":"processing"}`, string(resp.Body), "%s: the read-only tool runs", what)
	require.Equal(t, int64(1), o.looks.Load(), what)
	require.Contains(t, o.logs.String(), "the read-only tool runs and its answer is not kept", what)
}

// call serves a fresh signed call of tool and returns the answer and how
// long it took.
func (o *outage) call(t *testing.T, tool string) (protocol.Response, time.Duration) {
	t.Helper()
	body := fmt.Appendf(nil, `{"tool":%q,"toolCallId":%q,"input":{"orderId":"A-1001"},`+
		`"context":{"conversationId":"conv_1","risk":"low","visitor":{"verified":false}}}`, tool, storetest.NewID())
	key, err := protocol.ParseKey(storetest.Key)
	require.NoError(t, err)
	sig := key.Sign(time.Now(), body)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // only so a broken build cannot hang CI
	defer cancel()
	start := time.Now()
	resp := o.h.Serve(ctx, protocol.Request{Method: http.MethodPost, Signature: sig, BodyBytes: body, ContentLength: int64(len(body))})
	return resp, time.Since(start)
}

// requireNotRun checks the answer to a call the store could not record.
func (o *outage) requireNotRun(t *testing.T, resp protocol.Response, took time.Duration, what string) {
	t.Helper()
	require.Less(t, took, storeTimeout+hangMargin, "%s: the call must be answered within the store deadline", what)
	require.Equal(t, http.StatusOK, resp.Status, "%s: %s", what, resp.Body)
	require.Equal(t, protocol.CodeExecutionFailed, codeOf(resp), "%s: %s", what, resp.Body)
	msg := string(resp.Body)
	require.Contains(t, msg, "the tool was not run and nothing was changed", what)
	require.NotContains(t, strings.ToLower(msg), "try again", "%s: Median never retries", what)
	require.NotContains(t, msg, o.srv.Addr, "%s: no transport detail in the answer", what)
	require.Zero(t, o.runs.Load(), "%s: the tool must not run", what)
	require.Contains(t, o.logs.String(), "replay store failed", "%s: the failure is logged", what)
}

// requireRuns checks that a call runs the tool again.
func (o *outage) requireRuns(t *testing.T, what string) {
	t.Helper()
	var resp protocol.Response
	// The client may need a moment to reconnect; a call that fails on the
	// way must not have run the tool.
	deadline := time.Now().Add(10 * time.Second)
	for {
		before := o.runs.Load()
		resp, _ = o.call(t, "cancel_order")
		if codeOf(resp) == "" || time.Now().After(deadline) {
			break
		}
		require.Equal(t, before, o.runs.Load(), "%s: a failed call must not run the tool", what)
		time.Sleep(100 * time.Millisecond)
	}
	require.Equal(t, http.StatusOK, resp.Status, "%s: %s", what, resp.Body)
	require.Empty(t, codeOf(resp), "%s: want a result, got %s", what, resp.Body)
	require.Equal(t, int64(1), o.runs.Load(), "%s: the tool must run once", what)
}

func TestFrozenServer(t *testing.T) {
	o := newOutage(t)
	warm, _ := o.call(t, "cancel_order") // loads the scripts, opens a connection
	require.Empty(t, codeOf(warm), "before the freeze: %s", warm.Body)
	o.runs.Store(0)

	o.srv.Pause()
	resp, took := o.call(t, "cancel_order")
	t.Logf("frozen Redis: answered %s in %s", codeOf(resp), took)
	o.requireNotRun(t, resp, took, "Redis frozen (SIGSTOP)")
	o.requireReadOnlyRuns(t, "Redis frozen (SIGSTOP)")

	o.srv.Resume()
	o.requireRuns(t, "after SIGCONT")
}

func TestKilledServer(t *testing.T) {
	o := newOutage(t)
	warm, _ := o.call(t, "cancel_order")
	require.Empty(t, codeOf(warm), "before the kill: %s", warm.Body)
	o.runs.Store(0)

	o.srv.Kill()
	resp, took := o.call(t, "cancel_order")
	t.Logf("killed Redis: answered %s in %s", codeOf(resp), took)
	o.requireNotRun(t, resp, took, "Redis killed")
	o.requireReadOnlyRuns(t, "Redis killed")

	o.srv.Restart() // same port, empty: the scripts must be loaded again
	o.requireRuns(t, "after a restart on the same port")
}

func TestLongIDCostsOneKey(t *testing.T) {
	c := newClient(t)
	prefix := uniquePrefix(t, c)
	store, err := redisstore.New(c, redisstore.Options{Prefix: prefix})
	require.NoError(t, err)
	h, err := protocol.New(protocol.Config{
		Keys:         []string{storetest.Key},
		Store:        store,
		MaxBodyBytes: 2 << 20,
		Logger:       slog.New(slog.DiscardHandler),
		Tools: []*protocol.Tool{protocol.NewTool("cancel_order", protocol.RiskLow, "Cancels an order.",
			func(ctx context.Context, call protocol.ToolCall[orderInput]) (string, error) { return "ok", nil })},
	})
	require.NoError(t, err)
	id := strings.Repeat("x", 1<<20)
	body := fmt.Appendf(nil, `{"tool":"cancel_order","toolCallId":%q,"input":{"orderId":"A-1001"},`+
		`"context":{"conversationId":"conv_1","risk":"low","visitor":{"verified":false}}}`, id)
	key, err := protocol.ParseKey(storetest.Key)
	require.NoError(t, err)
	sig := key.Sign(time.Now(), body)
	resp := h.Serve(context.Background(), protocol.Request{Method: http.MethodPost, Signature: sig, BodyBytes: body, ContentLength: int64(len(body))})
	require.Empty(t, codeOf(resp), "%s", resp.Body)

	keys, err := c.Keys(context.Background(), prefix+"*").Result()
	require.NoError(t, err)
	require.Len(t, keys, 1)
	require.Len(t, keys[0], len(prefix)+64, "the key is the prefix and the id's 64-digit digest")
	n, err := c.MemoryUsage(context.Background(), keys[0]).Result()
	require.NoError(t, err)
	require.Less(t, n, int64(1024), "a 1 MiB id must cost Redis what a short one costs")
}

// codeOf returns the error code an answer carries, or "" for a result.
func codeOf(resp protocol.Response) protocol.Code {
	var a struct {
		Error *struct {
			Code protocol.Code `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(resp.Body, &a) != nil || a.Error == nil {
		return ""
	}
	return a.Error.Code
}

// TestDiagnosticsDuringAnOutage: while Redis is frozen the report still
// answers within a second, says the store is not reachable and counts the
// claim that failed, without the server's address; once Redis is back it
// is reachable again.
func TestDiagnosticsDuringAnOutage(t *testing.T) {
	o := newOutage(t)
	report := func() map[string]any {
		body := []byte(`{"op":"diagnostics"}`)
		key, err := protocol.ParseKey(storetest.Key)
		require.NoError(t, err)
		start := time.Now()
		resp := o.h.Serve(context.Background(), protocol.Request{Method: http.MethodPost, Signature: key.Sign(time.Now(), body), BodyBytes: body})
		require.Less(t, time.Since(start), time.Second, "the report answers within a second: %s", resp.Body)
		require.NotContains(t, string(resp.Body), o.srv.Addr, "no transport detail")
		var a struct {
			Result struct{ Store map[string]any }
		}
		require.NoError(t, json.Unmarshal(resp.Body, &a), "%s", resp.Body)
		return a.Result.Store
	}
	store := report()
	require.Equal(t, "redis", store["kind"])
	require.Equal(t, true, store["reachable"])

	o.srv.Pause()
	resp, took := o.call(t, "cancel_order")
	o.requireNotRun(t, resp, took, "Redis frozen (SIGSTOP)")
	store = report()
	require.Equal(t, false, store["reachable"])
	require.EqualValues(t, 1, store["claimFailures"])
	require.Contains(t, o.logs.String(), "did not answer its probe")

	o.srv.Resume()
	require.Eventually(t, func() bool { return report()["reachable"] == true }, 10*time.Second, 100*time.Millisecond)
}
