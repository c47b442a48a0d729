package ratelimit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/median-go/median/internal/testonly/testsupport"
	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/ratelimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testKey = "mk_test_0123456789abcdefghijklmnopqrstuv"

var testNow = time.UnixMilli(1_767_225_600_000)

type orderInput struct {
	OrderID string `json:"orderId"`
}

// endpoint is a Handler with two tools that count their runs.
type endpoint struct {
	h      *protocol.Handler
	runs   sync.Map // tool name -> *atomic.Int64
	events []protocol.Event
	mu     sync.Mutex
}

func (e *endpoint) runCount(tool string) int64 {
	v, _ := e.runs.LoadOrStore(tool, new(atomic.Int64))
	return v.(*atomic.Int64).Load()
}

func (e *endpoint) tool(name string, opts ...protocol.ToolOption) *protocol.Tool {
	return protocol.NewTool(name, protocol.RiskLow, "Looks up an order.", func(ctx context.Context, c protocol.ToolCall[orderInput]) (map[string]string, error) {
		v, _ := e.runs.LoadOrStore(name, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
		return map[string]string{"status": "shipped"}, nil
	}, opts...)
}

// newEndpoint builds a Handler whose global interceptor is limit (nil for
// none) and whose tools are lookup_order and track_parcel, unless tools
// are given.
func newEndpoint(t *testing.T, limit protocol.Interceptor, tools ...*protocol.Tool) *endpoint {
	t.Helper()
	e := &endpoint{}
	if tools == nil {
		tools = []*protocol.Tool{e.tool("lookup_order"), e.tool("track_parcel")}
	}
	cfg := protocol.Config{
		Keys:   []string{testKey},
		Tools:  tools,
		Now:    func() time.Time { return testNow },
		Logger: slog.New(slog.DiscardHandler),
		Observer: func(_ context.Context, ev protocol.Event) {
			e.mu.Lock()
			e.events = append(e.events, ev)
			e.mu.Unlock()
		},
	}
	if limit != nil {
		cfg.Interceptors = []protocol.Interceptor{limit}
	}
	h, err := protocol.New(cfg)
	require.NoError(t, err)
	e.h = h
	return e
}

// visitor is who a call comes from.
type visitor struct {
	conversation string
	verified     bool
	externalID   string
}

var ada = visitor{conversation: "conv_1", verified: true, externalID: "user_7"}

// call sends one call of tool with id from v and returns the answer.
func (e *endpoint) call(t *testing.T, tool, id string, v visitor) protocol.Response {
	t.Helper()
	vis := map[string]any{"verified": v.verified, "email": "a@b.c", "name": "Ada"}
	if v.externalID != "" {
		vis["externalId"] = v.externalID
	}
	body, err := json.Marshal(map[string]any{"tool": tool, "toolCallId": id, "input": map[string]string{"orderId": "A1"},
		"context": map[string]any{"conversationId": v.conversation, "risk": "low", "visitor": vis}})
	require.NoError(t, err)
	key, err := protocol.ParseKey(testKey)
	require.NoError(t, err)
	return e.h.Serve(context.Background(), protocol.Request{Method: http.MethodPost, Signature: key.Sign(testNow, body), BodyBytes: body})
}

// refusal is a decoded refusal result.
type refusal struct {
	OK      bool   `json:"ok"`
	Allowed *bool  `json:"allowed"`
	Outcome string `json:"outcome"`
	Reason  string `json:"reason"`
	Detail  string `json:"detail"`
}

// limited reports whether resp is the rate_limited refusal, checking its
// shape (PROTOCOL.md §9.1), and returns its detail.
func limited(t *testing.T, resp protocol.Response) (bool, string) {
	t.Helper()
	require.Equal(t, http.StatusOK, resp.Status, "never 429: %s", resp.Body)
	var a struct {
		Result json.RawMessage `json:"result"`
	}
	require.NoError(t, json.Unmarshal(resp.Body, &a), "%s", resp.Body)
	require.NotNil(t, a.Result, "a result: %s", resp.Body)
	var r refusal
	_ = json.Unmarshal(a.Result, &r)
	if r.Reason != ratelimit.Reason {
		return false, ""
	}
	require.False(t, r.OK)
	require.NotNil(t, r.Allowed)
	require.False(t, *r.Allowed)
	require.Equal(t, "blocked", r.Outcome)
	return true, r.Detail
}

func mustNew(t *testing.T, cfg ratelimit.Config) protocol.Interceptor {
	t.Helper()
	ic, err := ratelimit.New(cfg)
	require.NoError(t, err)
	return ic
}

func TestPerConversation(t *testing.T) {
	e := newEndpoint(t, mustNew(t, ratelimit.Config{Limit: ratelimit.Limit{Calls: 2, Per: time.Minute}}))
	for i := range 2 {
		ok, _ := limited(t, e.call(t, "lookup_order", fmt.Sprint("call_", i), ada))
		require.False(t, ok, "call %d is within the cap", i+1)
	}
	ok, detail := limited(t, e.call(t, "track_parcel", "call_2", ada))
	require.True(t, ok, "the third call of the conversation, whatever the tool")
	assert.Equal(t, "track_parcel was called too often in this conversation, so it was not carried out. Try again in about 30 seconds.", detail)
	assert.Equal(t, int64(2), e.runCount("lookup_order"))
	assert.Zero(t, e.runCount("track_parcel"), "a call over its cap is not run")

	ok, _ = limited(t, e.call(t, "lookup_order", "call_3", visitor{conversation: "conv_2"}))
	assert.False(t, ok, "another conversation has its own count")

	last := e.events[len(e.events)-2]
	assert.Equal(t, ratelimit.Reason, last.Refusal, "the observer sees the reason")
	assert.Equal(t, "track_parcel", last.Tool)
}

// TestReplaysAreNotCounted: a repeated toolCallId is answered from the
// replay store before the interceptors run, so it takes nothing from the
// count; a refusal is kept for its id like any answer.
func TestReplaysAreNotCounted(t *testing.T) {
	e := newEndpoint(t, mustNew(t, ratelimit.Config{Limit: ratelimit.Limit{Calls: 2, Per: time.Minute}}))
	first := e.call(t, "lookup_order", "call_a", ada)
	for range 5 {
		again := e.call(t, "lookup_order", "call_a", ada)
		assert.Equal(t, first.Body, again.Body, "the stored answer, byte for byte")
	}
	ok, _ := limited(t, e.call(t, "lookup_order", "call_b", ada))
	require.False(t, ok, "five replays took nothing: the second call is within the cap")
	refused := e.call(t, "lookup_order", "call_c", ada)
	ok, _ = limited(t, refused)
	require.True(t, ok)
	assert.Equal(t, refused.Body, e.call(t, "lookup_order", "call_c", ada).Body, "a replayed refusal is the stored one")
	assert.Equal(t, int64(2), e.runCount("lookup_order"))
	var replayed int
	for _, ev := range e.events {
		if ev.Replayed {
			replayed++
		}
	}
	assert.Equal(t, 6, replayed)
}

func TestPerVisitor(t *testing.T) {
	e := newEndpoint(t, mustNew(t, ratelimit.Config{Limit: ratelimit.Limit{Calls: 1, Per: time.Hour}, By: ratelimit.PerVisitor}))
	ok, _ := limited(t, e.call(t, "lookup_order", "c1", ada))
	require.False(t, ok)
	ok, detail := limited(t, e.call(t, "lookup_order", "c2", visitor{conversation: "conv_other", verified: true, externalID: "user_7"}))
	require.True(t, ok, "a verified visitor is counted across conversations")
	assert.Contains(t, detail, "for this customer")
	assert.Contains(t, detail, "about an hour")

	// Unverified: the externalId is not trusted, the conversation counts.
	mallory := visitor{conversation: "conv_m", verified: false, externalID: "user_7"}
	ok, _ = limited(t, e.call(t, "lookup_order", "c3", mallory))
	assert.False(t, ok, "an unverified visitor claiming user_7 is not counted as user_7")
	ok, detail = limited(t, e.call(t, "lookup_order", "c4", mallory))
	assert.True(t, ok, "but by its conversation")
	assert.Contains(t, detail, "in this conversation")
}

func TestPerTool(t *testing.T) {
	t.Run("alone: across conversations", func(t *testing.T) {
		e := newEndpoint(t, mustNew(t, ratelimit.Config{Limit: ratelimit.Limit{Calls: 1, Per: time.Minute}, By: ratelimit.PerTool}))
		ok, _ := limited(t, e.call(t, "lookup_order", "c1", ada))
		require.False(t, ok)
		ok, _ = limited(t, e.call(t, "track_parcel", "c2", ada))
		require.False(t, ok, "another tool has its own count")
		ok, detail := limited(t, e.call(t, "lookup_order", "c3", visitor{conversation: "conv_9"}))
		require.True(t, ok)
		assert.Contains(t, detail, "across all conversations")
	})
	t.Run("within each conversation", func(t *testing.T) {
		e := newEndpoint(t, mustNew(t, ratelimit.Config{Limit: ratelimit.Limit{Calls: 1, Per: time.Minute}, By: ratelimit.PerTool | ratelimit.PerConversation}))
		ok, _ := limited(t, e.call(t, "lookup_order", "c1", ada))
		require.False(t, ok)
		ok, _ = limited(t, e.call(t, "track_parcel", "c2", ada))
		require.False(t, ok)
		ok, _ = limited(t, e.call(t, "lookup_order", "c3", visitor{conversation: "conv_9"}))
		require.False(t, ok)
		ok, _ = limited(t, e.call(t, "lookup_order", "c4", ada))
		require.True(t, ok)
	})
}

// TestRatesPerTool: Config.Tools gives a tool its own rate; with no
// Config.Limit the other tools are not limited, with one they fall under it.
func TestRatesPerTool(t *testing.T) {
	tools := &endpoint{}
	lookup := tools.tool("lookup_order")
	e := newEndpoint(t, mustNew(t, ratelimit.Config{Tools: map[*protocol.Tool]ratelimit.Limit{lookup: {Calls: 1, Per: 10 * time.Second}}}),
		lookup, tools.tool("track_parcel"))
	ok, _ := limited(t, e.call(t, "lookup_order", "c1", ada))
	require.False(t, ok)
	ok, detail := limited(t, e.call(t, "lookup_order", "c2", ada))
	require.True(t, ok)
	assert.Contains(t, detail, "Try again in about 10 seconds.")
	for i := range 5 {
		ok, _ = limited(t, e.call(t, "track_parcel", fmt.Sprint("t", i), ada))
		assert.False(t, ok, "a tool without a rate is not limited")
	}
	assert.Equal(t, int64(1), tools.runCount("lookup_order"), "the call over lookup_order's rate was not run")
	assert.Equal(t, int64(5), tools.runCount("track_parcel"))

	lookup = tools.tool("lookup_order")
	both := newEndpoint(t, mustNew(t, ratelimit.Config{Limit: ratelimit.Limit{Calls: 1, Per: time.Minute},
		Tools: map[*protocol.Tool]ratelimit.Limit{lookup: {Calls: 3, Per: time.Minute}}}), lookup, tools.tool("track_parcel"))
	for i := range 3 {
		ok, _ = limited(t, both.call(t, "lookup_order", fmt.Sprint("l", i), ada))
		require.False(t, ok, "lookup_order's own rate")
	}
	ok, _ = limited(t, both.call(t, "track_parcel", "t0", ada))
	require.False(t, ok, "counted apart from lookup_order's")
	ok, _ = limited(t, both.call(t, "track_parcel", "t1", ada))
	require.True(t, ok, "the default rate")
}

// TestToolRateIsFoundByTheTool: a tool's own rate applies to the calls of
// the name of the *protocol.Tool it is keyed by, so a tool built again
// under that name (another instance's) has the same cap, and Config.Limit
// does not apply to it.
func TestToolRateIsFoundByTheTool(t *testing.T) {
	tools := &endpoint{}
	capped, served := tools.tool("lookup_order"), tools.tool("lookup_order")
	e := newEndpoint(t, mustNew(t, ratelimit.Config{Limit: ratelimit.Limit{Calls: 3, Per: time.Minute},
		Tools: map[*protocol.Tool]ratelimit.Limit{capped: {Calls: 1, Per: time.Minute}}}), served)
	ok, _ := limited(t, e.call(t, "lookup_order", "c0", ada))
	require.False(t, ok, "the first call is within the tool's own cap")
	ok, _ = limited(t, e.call(t, "lookup_order", "c1", ada))
	assert.True(t, ok, "the second call is over the tool's own cap of 1, though the served tool is another value of the same name")
}

// TestOneTool: the interceptor given to one tool limits that tool only.
func TestOneTool(t *testing.T) {
	limit := mustNew(t, ratelimit.Config{Limit: ratelimit.Limit{Calls: 1, Per: time.Minute}})
	tools := &endpoint{}
	e := newEndpoint(t, nil, tools.tool("lookup_order", protocol.WithInterceptors(limit)), tools.tool("track_parcel"))
	ok, _ := limited(t, e.call(t, "lookup_order", "c1", ada))
	require.False(t, ok)
	ok, _ = limited(t, e.call(t, "lookup_order", "c2", ada))
	require.True(t, ok)
	ok, _ = limited(t, e.call(t, "track_parcel", "c3", ada))
	assert.False(t, ok)
}

// TestMiddleware: behind Handler.Middleware the app's handler is not
// called for a call over its cap.
func TestMiddleware(t *testing.T) {
	e := newEndpoint(t, mustNew(t, ratelimit.Config{Limit: ratelimit.Limit{Calls: 1, Per: time.Minute}}))
	_, resp, ok := e.h.Verify(context.Background(), signed(t, "lookup_order", "m1"))
	require.True(t, ok, "%s", resp.Body)
	_, resp, ok = e.h.Verify(context.Background(), signed(t, "lookup_order", "m2"))
	require.False(t, ok)
	isLimited, _ := limited(t, resp)
	assert.True(t, isLimited)
}

func signed(t *testing.T, tool, id string) protocol.Request {
	body := []byte(fmt.Sprintf(`{"tool":%q,"toolCallId":%q,"input":{"orderId":"A1"},"context":{"conversationId":"conv_1","risk":"low","visitor":{"verified":false}}}`, tool, id))
	key, err := protocol.ParseKey(testKey)
	require.NoError(t, err)
	return protocol.Request{Method: http.MethodPost, Signature: key.Sign(testNow, body), BodyBytes: body}
}

func TestNewRefusesUnusableLimits(t *testing.T) {
	for name, cfg := range map[string]ratelimit.Config{
		"no limit":        {},
		"zero calls":      {Limit: ratelimit.Limit{Calls: 0, Per: time.Minute}},
		"negative calls":  {Limit: ratelimit.Limit{Calls: -1, Per: time.Minute}},
		"zero period":     {Limit: ratelimit.Limit{Calls: 5}},
		"negative period": {Limit: ratelimit.Limit{Calls: 5, Per: -time.Second}},
		"zero tool rate":  {Tools: map[*protocol.Tool]ratelimit.Limit{(&endpoint{}).tool("lookup_order"): {Calls: 0, Per: time.Minute}}},
		"two scopes":      {Limit: ratelimit.Limit{Calls: 5, Per: time.Minute}, By: ratelimit.PerConversation | ratelimit.PerVisitor},
		"unknown scope":   {Limit: ratelimit.Limit{Calls: 5, Per: time.Minute}, By: 64},
		"negative wait":   {Limit: ratelimit.Limit{Calls: 5, Per: time.Minute}, Timeout: -time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			ic, err := ratelimit.New(cfg)
			require.Error(t, err)
			assert.Nil(t, ic)
			assert.Contains(t, err.Error(), "median: ratelimit:")
		})
	}
}

// TestNewRefusesBadTools: a nil tool, a tool with problems and a Tool not
// built with NewTool are refused, each with what to fix.
func TestNewRefusesBadTools(t *testing.T) {
	every := ratelimit.Limit{Calls: 5, Per: time.Minute}
	for name, c := range map[string]struct {
		tool *protocol.Tool
		want []string
	}{
		"nil tool":       {nil, []string{"Config.Tools holds a nil tool", "key each cap by the *protocol.Tool you pass in protocol.Config.Tools"}},
		"bad name":       {(&endpoint{}).tool("lookup order"), []string{"a tool that protocol.New would refuse", `tool "lookup order": name "lookup order" must match`}},
		"not by NewTool": {&protocol.Tool{}, []string{"a tool that protocol.New would refuse", "was not built with protocol.NewTool"}},
	} {
		t.Run(name, func(t *testing.T) {
			ic, err := ratelimit.New(ratelimit.Config{Limit: every, Tools: map[*protocol.Tool]ratelimit.Limit{c.tool: every}})
			require.Error(t, err)
			assert.Nil(t, ic)
			for _, want := range c.want {
				assert.Contains(t, err.Error(), want)
			}
		})
	}
	t.Run("two tools of one name", func(t *testing.T) {
		tools := &endpoint{}
		ic, err := ratelimit.New(ratelimit.Config{Tools: map[*protocol.Tool]ratelimit.Limit{
			tools.tool("lookup_order"): every, tools.tool("lookup_order"): {Calls: 1, Per: time.Second}}})
		require.Error(t, err)
		assert.Nil(t, ic)
		assert.Contains(t, err.Error(), `Config.Tools holds two tools named "lookup_order": give each tool one cap`)
	})
}

// failing is a Backend that fails, or blocks until its deadline.
type failing struct {
	block bool
	calls atomic.Int64
}

func (f *failing) Allow(ctx context.Context, _ string, _ ratelimit.Limit) (bool, time.Duration, error) {
	f.calls.Add(1)
	if f.block {
		<-ctx.Done()
		return false, 0, ctx.Err()
	}
	return false, 0, errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
}

// TestBackendFailureFailsOpen: a limit is protection, not a contract; the
// call runs and the failure is logged.
func TestBackendFailureFailsOpen(t *testing.T) {
	for _, block := range []bool{false, true} {
		t.Run(fmt.Sprint("block=", block), func(t *testing.T) {
			var logs testsupport.Buffer
			backend := &failing{block: block}
			e := newEndpoint(t, mustNew(t, ratelimit.Config{Limit: ratelimit.Limit{Calls: 1, Per: time.Minute}, Backend: backend,
				Timeout: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))}))
			start := time.Now()
			for i := range 3 {
				ok, _ := limited(t, e.call(t, "lookup_order", fmt.Sprint("c", i), ada))
				require.False(t, ok, "the call runs")
			}
			assert.Less(t, time.Since(start), 5*time.Second, "each call waits at most the deadline")
			assert.Equal(t, int64(3), e.runCount("lookup_order"))
			assert.Equal(t, int64(3), backend.calls.Load())
			assert.Contains(t, logs.String(), "runs unlimited")
			assert.Contains(t, logs.String(), "tool=lookup_order")
			assert.Equal(t, 1, strings.Count(logs.String(), "runs unlimited"), "logged once, then at most every 10 s")
		})
	}
}

func TestInWords(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                "about a second",
		300 * time.Millisecond:           "about a second",
		time.Second:                      "about a second",
		1500 * time.Millisecond:          "about 2 seconds",
		3 * time.Second:                  "about 3 seconds",
		9*time.Second + time.Millisecond: "about 10 seconds",
		17 * time.Second:                 "about 20 seconds",
		20 * time.Second:                 "about 20 seconds",
		54 * time.Second:                 "about 55 seconds",
		58 * time.Second:                 "about a minute",
		time.Minute + time.Millisecond:   "about 2 minutes",
		45 * time.Minute:                 "about 45 minutes",
		59*time.Minute + 30*time.Second:  "about an hour",
		3 * time.Hour:                    "about 3 hours",
		2*time.Hour + time.Nanosecond:    "about 3 hours",
	} {
		assert.Equal(t, want, ratelimit.InWords(d), "%s", d)
	}
}

// TestReportCountsRateLimitedApart: the diagnostics report counts the
// calls a limit refused among the tool's refusals (docs/PROTOCOL.md §10)
// and again in its rateLimited, so that they read apart from the tool's
// own; a replayed refusal with them.
func TestReportCountsRateLimitedApart(t *testing.T) {
	e := newEndpoint(t, mustNew(t, ratelimit.Config{Limit: ratelimit.Limit{Calls: 1, Per: time.Minute}}))
	e.call(t, "lookup_order", "call_a", ada)
	e.call(t, "lookup_order", "call_b", ada)
	e.call(t, "lookup_order", "call_b", ada) // the refusal, replayed
	got := e.h.Report(context.Background()).Tools["lookup_order"]
	assert.Equal(t, int64(3), got.Calls)
	assert.Equal(t, int64(1), got.Results)
	assert.Equal(t, int64(2), got.Refusals, "refusals, as §10 counts them")
	assert.Equal(t, int64(2), got.RateLimited, "of which a limit's, apart from the tool's own")
}
