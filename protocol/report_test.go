package protocol

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/median-go/median/internal/base/wirereport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// reportKeys are the report's required top-level keys (§10).
var reportKeys = []string{"service", "clock", "keys", "refused", "store", "manifest", "tools"}

// requireReport asserts that resp is the §10 report: a 200 result of at
// most 2,000 characters of valid JSON with every required key, and returns
// it decoded.
func requireReport(t testing.TB, resp Response) wireReport {
	t.Helper()
	require.LessOrEqual(t, utf8.RuneCount(resp.Body), maxDiagnosticsChars, "body %s", resp.Body)
	raw := requireResult(t, resp)
	var keys map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &keys))
	for _, k := range reportKeys {
		require.Contains(t, keys, k, "report %s", raw)
	}
	var r wireReport
	require.NoError(t, json.Unmarshal(raw, &r), "report %s", raw)
	r.raw = string(raw)
	return r
}

// wireReport is the report as a client decodes it (mediancheck's reading
// too), with the raw JSON it came from.
type wireReport struct {
	wirereport.Report
	raw string
}

// reportTools: a tool that answers, one that fails with an error message
// holding its input, one that refuses.
func reportTools() []*Tool {
	fail := NewTool("fail", RiskLow, "Fails.", func(ctx context.Context, c ToolCall[echoInput]) (any, error) {
		return nil, fmt.Errorf("order %d: read tcp 10.0.0.7:5432: i/o timeout", c.Input.OrderID)
	})
	refuse := NewTool("refuse", RiskLow, "Refuses.", func(ctx context.Context, c ToolCall[echoInput]) (any, error) {
		return nil, notSignedIn("Sign in.")
	})
	return []*Tool{echoTool(nil), fail, refuse}
}

// TestReportCounts: every section counts what the Handler answered.
func TestReportCounts(t *testing.T) {
	h, _ := newHandler(t, Config{
		Keys:  []string{testKey, otherKey},
		Tools: reportTools(),
		ErrorMessage: func(ctx context.Context, call *Call, err error) string {
			return "the order service is not answering"
		},
	})
	ctx := context.Background()
	requireResult(t, h.Serve(ctx, post(toolCall("echo", "callid_1", `{"orderId":1}`))))
	requireResult(t, h.Serve(ctx, post(toolCall("echo", "callid_1", `{"orderId":1}`)))) // a replay: counted, not sampled
	requireError(t, h.Serve(ctx, post(toolCall("fail", "callid_2", `{"orderId":2}`))), http.StatusOK, CodeExecutionFailed)
	requireError(t, h.Serve(ctx, post(toolCall("echo", "callid_3", `{"orderId":0}`))), http.StatusBadRequest, CodeInvalidInput)
	requireResult(t, h.Serve(ctx, post(toolCall("refuse", "callid_4", `{"orderId":4}`))))
	requireError(t, h.Serve(ctx, post(toolCall("nope", "callid_5", `{}`))), http.StatusNotFound, CodeUnknownTool)
	requireError(t, h.Serve(ctx, Request{Method: http.MethodPut}), http.StatusMethodNotAllowed, CodeMethodNotAllowed)
	// Stale both ways: the largest magnitude is kept with its sign.
	requireError(t, h.Serve(ctx, diagnosticsAt(testKey, testNow.Add(-6*time.Minute))), http.StatusUnauthorized, CodeStaleTimestamp)
	requireError(t, h.Serve(ctx, diagnosticsAt(testKey, testNow.Add(7*time.Minute))), http.StatusUnauthorized, CodeStaleTimestamp)
	requireError(t, h.Serve(ctx, diagnosticsAt(testKey, testNow.Add(-6*time.Minute-time.Second))), http.StatusUnauthorized, CodeStaleTimestamp)
	// A key the server does not hold.
	requireError(t, h.Serve(ctx, diagnosticsAt("mk_wrong_0123456789abcdefghijklmnopqrstu", testNow)), http.StatusUnauthorized, CodeInvalidSignature)
	// The manifest, signed with the second key.
	manifest := h.Serve(ctx, Request{Method: http.MethodGet, Signature: mustParseKey(otherKey).Sign(testNow, nil)})
	require.Equal(t, http.StatusOK, manifest.Status)

	r := requireReport(t, h.Serve(ctx, diagnosticsAt(testKey, testNow.Add(-1500*time.Millisecond))))

	require.NotNil(t, r.Clock.SkewMs, "report %s", r.raw)
	assert.Equal(t, int64(1500), *r.Clock.SkewMs, "server clock minus this request's t")
	assert.Equal(t, "median-go (devel)", r.Service.Library)
	assert.True(t, strings.HasPrefix(r.Service.Go, "go"))
	assert.Equal(t, "2026-01-01T00:00:00Z", r.Service.Now)

	require.Len(t, r.Keys, 2)
	assert.Equal(t, mustParseKey(testKey).Fingerprint(), r.Keys[0].Fingerprint, "in the order configured")
	assert.Equal(t, mustParseKey(otherKey).Fingerprint(), r.Keys[1].Fingerprint)
	assert.Equal(t, int64(7), r.Keys[0].Verified, "six calls and this diagnostics request")
	assert.Equal(t, int64(1), r.Keys[1].Verified, "the manifest GET")
	assert.Equal(t, "2026-01-01T00:00:00Z", r.Keys[0].LastVerified)

	require.Contains(t, r.Refused, "stale_timestamp")
	stale := r.Refused["stale_timestamp"]
	assert.Equal(t, int64(3), stale.Count)
	require.NotNil(t, stale.MaxSkewMs)
	assert.Equal(t, -(7 * time.Minute).Milliseconds(), *stale.MaxSkewMs, "t in the future: negative, like clock.skewMs")
	assert.Equal(t, "2026-01-01T00:00:00Z", stale.Last)
	assert.Equal(t, int64(1), r.Refused["invalid_signature"].Count)
	assert.Nil(t, r.Refused["invalid_signature"].MaxSkewMs)
	assert.Equal(t, int64(1), r.Refused["unknown_tool"].Count)
	assert.Equal(t, int64(1), r.Refused["method_not_allowed"].Count)
	assert.Equal(t, int64(1), r.Refused["invalid_input"].Count)
	assert.NotContains(t, r.Refused, "execution_failed", "a tool's failure is counted with the tool")
	assert.Len(t, r.Refused, 5)

	assert.Equal(t, "memory", r.Store.Kind)
	require.NotNil(t, r.Store.Reachable)
	assert.True(t, *r.Store.Reachable)
	require.NotNil(t, r.Store.UsedBytes)
	require.NotNil(t, r.Store.BudgetBytes)
	assert.Positive(t, *r.Store.UsedBytes)
	assert.Equal(t, int64(defaultReplayMaxBytes), *r.Store.BudgetBytes)

	sum := sha256.Sum256(manifest.Body)
	assert.Equal(t, hex.EncodeToString(sum[:]), r.Manifest.SHA256, "the manifest exactly as served")
	assert.Equal(t, 3, r.Manifest.Tools)
	assert.Equal(t, "2026-01-01T00:00:00Z", r.Manifest.LastServed)

	require.Len(t, r.Tools, 3, "only registered tools, never an unknown name")
	echo := r.Tools["echo"]
	assert.Equal(t, int64(3), echo.Calls)
	assert.Equal(t, int64(2), echo.Results)
	assert.Equal(t, int64(1), echo.InvalidInput)
	require.NotNil(t, echo.LastFailure)
	assert.Equal(t, "invalid_input", echo.LastFailure.Code)
	assert.Contains(t, echo.LastFailure.Message, "orderId")
	assert.Contains(t, r.raw, `"orderId: must be >= 1"`, "messages are not HTML-escaped, as in the answer")
	fail := r.Tools["fail"]
	assert.Equal(t, int64(1), fail.Failed)
	require.NotNil(t, fail.LastFailure)
	assert.Equal(t, "execution_failed", fail.LastFailure.Code)
	assert.Equal(t, "the order service is not answering", fail.LastFailure.Message, "the message as answered, after ErrorMessage")
	assert.Equal(t, "2026-01-01T00:00:00Z", fail.LastFailure.At)
	assert.Equal(t, int64(1), r.Tools["refuse"].Refusals)
	assert.Nil(t, r.Tools["refuse"].LastFailure)

	assert.JSONEq(t, `{}`, string(r.App))
	assert.Zero(t, r.Omitted)

	for _, never := range []string{testKey, otherKey, "10.0.0.7", "i/o timeout", "user_7", "a@b.c", "Ada", "conv_42", `"orderId":1`, "callid_"} {
		assert.NotContains(t, r.raw, never)
	}
}

// TestReportLastFailureIsCut: a long message is cut to 200 characters.
func TestReportLastFailureIsCut(t *testing.T) {
	long := NewTool("long", RiskLow, "Fails long.", func(ctx context.Context, c ToolCall[echoInput]) (any, error) {
		return nil, AgentErrorf("%s", strings.Repeat("é", 300))
	})
	h, _ := newHandler(t, Config{Tools: []*Tool{long}})
	h.Serve(context.Background(), post(toolCall("long", "callid_1", `{"orderId":1}`)))
	r := requireReport(t, h.Serve(context.Background(), post(`{"op":"diagnostics"}`)))
	require.NotNil(t, r.Tools["long"].LastFailure)
	assert.Equal(t, strings.Repeat("é", 200), r.Tools["long"].LastFailure.Message)
}

// TestReportApp: Config.Diagnostics fills app; its failure, panic and
// timeout are an entry there, and the report is still answered.
func TestReportApp(t *testing.T) {
	for _, tt := range []struct {
		name string
		fn   func(context.Context) (any, error)
		want string
	}{
		{"value", func(ctx context.Context) (any, error) {
			_, ok := ctx.Deadline()
			return map[string]any{"db": "ok", "deadline": ok}, nil
		}, `{"db":"ok","deadline":true}`},
		{"error", func(context.Context) (any, error) { return nil, errors.New("dial tcp 10.1.1.1:6379: refused") },
			`{"error":"Config.Diagnostics failed; the server's log has its error"}`},
		{"panic", func(context.Context) (any, error) { panic("kaboom") },
			`{"error":"Config.Diagnostics panicked; the server's log has the stack"}`},
		{"not JSON", func(context.Context) (any, error) { return func() {}, nil },
			`{"error":"what Config.Diagnostics returned cannot be encoded as JSON"}`},
		{"blocks", func(ctx context.Context) (any, error) { <-ctx.Done(); return nil, ctx.Err() },
			`{"error":"Config.Diagnostics did not finish within 30ms"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, logs := newHandler(t, Config{Diagnostics: tt.fn, DiagnosticsTimeout: 30 * time.Millisecond})
			start := time.Now()
			r := requireReport(t, h.Serve(context.Background(), post(`{"op":"diagnostics"}`)))
			assert.Less(t, time.Since(start), time.Second)
			assert.JSONEq(t, tt.want, string(r.App))
			assert.NotContains(t, r.raw, "10.1.1.1")
			if tt.name == "error" {
				assert.Contains(t, logs.String(), "10.1.1.1", "the error goes to the log")
			}
		})
	}
	t.Run("deadline at most 800 ms", func(t *testing.T) {
		h, _ := newHandler(t, Config{Diagnostics: func(context.Context) (any, error) { return nil, nil }, DiagnosticsTimeout: time.Minute})
		assert.Equal(t, maxAppTimeout, h.appTimeout)
		h, _ = newHandler(t, Config{})
		assert.Equal(t, defaultAppTimeout, h.appTimeout)
	})
}

// blockingStore is a store whose every operation blocks until its context
// is done or release is closed (a frozen Redis).
type blockingStore struct {
	release   chan struct{}
	ignoreCtx bool // block on release alone, as a client without deadlines would
}

func (s blockingStore) wait(ctx context.Context) error {
	if s.ignoreCtx {
		<-s.release
		return errors.New("read tcp 10.9.9.9:6379: i/o timeout")
	}
	select {
	case <-ctx.Done():
		return fmt.Errorf("read tcp 10.9.9.9:6379: i/o timeout: %w", ctx.Err())
	case <-s.release:
		return errors.New("read tcp 10.9.9.9:6379: i/o timeout")
	}
}

func (s blockingStore) Claim(ctx context.Context, _, _ string, _ time.Duration) (ClaimStatus, []byte, error) {
	return 0, nil, s.wait(ctx)
}

func (s blockingStore) Save(ctx context.Context, _, _ string, _ []byte, _ time.Duration) (int, error) {
	return 0, s.wait(ctx)
}

func (s blockingStore) Renew(ctx context.Context, _, _ string, _ time.Duration) error {
	return s.wait(ctx)
}

func (blockingStore) Kind() string { return "redis" }

func (s blockingStore) Probe(ctx context.Context) error { return s.wait(ctx) }

// TestReportFrozenStore: a store that does not answer is reported
// unreachable within the probe's bound, without its error; a failed claim
// is counted.
func TestReportFrozenStore(t *testing.T) {
	for _, ignoreCtx := range []bool{false, true} {
		t.Run(fmt.Sprintf("ignores its context %v", ignoreCtx), func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			store := blockingStore{release: make(chan struct{}), ignoreCtx: ignoreCtx}
			h, logs := newHandler(t, Config{Store: store, StoreTimeout: 20 * time.Millisecond, Tools: reportTools()})
			if !ignoreCtx {
				requireError(t, h.Serve(context.Background(), post(toolCall("echo", "callid_1", `{"orderId":1}`))), http.StatusOK, CodeExecutionFailed)
			}
			start := time.Now()
			r := requireReport(t, h.Serve(context.Background(), post(`{"op":"diagnostics"}`)))
			assert.Less(t, time.Since(start), time.Second)
			assert.Equal(t, "redis", r.Store.Kind)
			require.NotNil(t, r.Store.Reachable)
			assert.False(t, *r.Store.Reachable)
			assert.GreaterOrEqual(t, r.Store.LatencyMs, int64(400))
			assert.NotContains(t, r.raw, "10.9.9.9")
			assert.NotContains(t, r.raw, "i/o timeout")
			if !ignoreCtx {
				assert.Equal(t, int64(1), r.Store.ClaimFailures)
				assert.Contains(t, logs.String(), "10.9.9.9", "the detail goes to the log")
			}
			close(store.release)
		})
	}
}

// problemError is a store's error that names its problem for the report.
type problemError struct{ problem string }

func (e problemError) Error() string   { return "dial 10.9.9.9:5432: " + e.problem }
func (e problemError) Problem() string { return e.problem }

// panickyProblem is a store's error whose Problem method panics.
type panickyProblem struct{}

func (panickyProblem) Error() string   { return "no problem" }
func (panickyProblem) Problem() string { panic("Problem exploded") }

// probeStore is a memory store whose Probe fails with err.
type probeStore struct {
	Store
	err error
}

func (s probeStore) Probe(context.Context) error { return s.err }

// TestReportStoreProblem: a failed probe whose error names its problem
// (a Problem method, anywhere in its chain) shows it in the report; any
// other error shows nothing but the log.
func TestReportStoreProblem(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("pgstore: could not reach the table: %w", problemError{"connection pool exhausted: all 2 in use"}), "connection pool exhausted: all 2 in use"},
		{problemError{strings.Repeat("é", 300)}, strings.Repeat("é", 200)},
		{errors.New("dial 10.9.9.9:5432: connection refused"), ""},
		{panickyProblem{}, ""},
	} {
		h, logs := newHandler(t, Config{Store: probeStore{newMemoryStore(0, nil), c.err}})
		r := requireReport(t, h.Serve(context.Background(), post(`{"op":"diagnostics"}`)))
		require.NotNil(t, r.Store.Reachable)
		assert.False(t, *r.Store.Reachable)
		assert.Equal(t, c.want, r.Store.Problem)
		assert.NotContains(t, r.raw, "10.9.9.9")
		if c.want == "" {
			assert.NotContains(t, r.raw, `"problem"`, "absent when the store names none")
		}
		assert.Contains(t, logs.String(), "did not answer its probe")
	}
}

// plainStore is a custom store with neither Kind nor Probe.
type plainStore struct{ Store }

// countingStore saves with evictions.
type evictingStore struct{ Store }

func (s evictingStore) Save(ctx context.Context, key, fp string, answer []byte, ttl time.Duration) (int, error) {
	_, err := s.Store.Save(ctx, key, fp, answer, ttl)
	return 2, err
}

func TestReportStoreKinds(t *testing.T) {
	t.Run("custom: reachable is null", func(t *testing.T) {
		h, _ := newHandler(t, Config{Store: plainStore{newMemoryStore(0, nil)}})
		r := requireReport(t, h.Serve(context.Background(), post(`{"op":"diagnostics"}`)))
		assert.Equal(t, "custom", r.Store.Kind)
		assert.Nil(t, r.Store.Reachable)
		assert.Contains(t, r.raw, `"reachable":null`)
		assert.Nil(t, r.Store.UsedBytes)
	})
	t.Run("none", func(t *testing.T) {
		h, _ := newHandler(t, Config{DisableReplayProtection: true})
		r := requireReport(t, h.Serve(context.Background(), post(`{"op":"diagnostics"}`)))
		assert.Equal(t, "none", r.Store.Kind)
		assert.Nil(t, r.Store.Reachable)
	})
	t.Run("evicted early and read-only runs are counted", func(t *testing.T) {
		h, _ := newHandler(t, Config{Store: evictingStore{newMemoryStore(0, nil)}, Tools: reportTools()})
		requireResult(t, h.Serve(context.Background(), post(toolCall("echo", "callid_1", `{"orderId":1}`))))
		h.stats.readOnlyRun()
		r := requireReport(t, h.Serve(context.Background(), post(`{"op":"diagnostics"}`)))
		assert.Equal(t, int64(2), r.Store.EvictedEarly)
		assert.Equal(t, int64(1), r.Store.ReadOnlyRuns)
	})
}

// TestReportOff: turned off, with or without Config.Diagnostics, answers
// diagnostics_unsupported; the typed report still works. (A replaced
// report is TestDiagnosticsReplace's.)
func TestReportOff(t *testing.T) {
	for _, cfg := range []Config{
		{DiagnosticsOff: true},
		{DiagnosticsOff: true, Diagnostics: func(context.Context) (any, error) { return "unused", nil }},
	} {
		h, _ := newHandler(t, cfg)
		msg := requireError(t, h.Serve(context.Background(), post(`{"op":"diagnostics"}`)), http.StatusOK, CodeDiagnosticsUnsupported)
		assert.Contains(t, msg, "turned the diagnostics report off")
		assert.NotEmpty(t, h.Report(context.Background()).Keys, "the typed report still works")
	}
}

// TestReportRequestsAreCheckedLikeAnyOther: a stale or wrongly signed
// report request is refused, and counted.
func TestReportRequestsAreCheckedLikeAnyOther(t *testing.T) {
	h, _ := newHandler(t, Config{})
	requireError(t, h.Serve(context.Background(), diagnosticsAt(testKey, testNow.Add(-time.Hour))), http.StatusUnauthorized, CodeStaleTimestamp)
	requireError(t, h.Serve(context.Background(), diagnosticsAt(otherKey, testNow)), http.StatusUnauthorized, CodeInvalidSignature)
	r := h.Report(context.Background())
	assert.Equal(t, int64(1), r.Refused[CodeStaleTimestamp].Count)
	assert.Equal(t, time.Hour.Milliseconds(), r.Refused[CodeStaleTimestamp].MaxSkewMs)
	assert.Equal(t, int64(1), r.Refused[CodeInvalidSignature].Count)
	assert.Zero(t, r.Keys[0].Verified)
}

// TestReportIsCut: a report longer than 2,000 characters drops whole
// entries in §10's order and says how many.
func TestReportIsCut(t *testing.T) {
	var tools []*Tool
	for i := range 40 {
		tools = append(tools, NewTool(fmt.Sprintf("tool_%02d_%s", i, strings.Repeat("x", 30)), RiskLow, "A tool.",
			func(ctx context.Context, c ToolCall[echoInput]) (any, error) { return nil, errors.New("it broke") }))
	}
	app := func(context.Context) (any, error) { return map[string]string{"note": strings.Repeat("n", 300)}, nil }
	h, _ := newHandler(t, Config{Tools: tools, Diagnostics: app})
	// Tool i fails i times, from tool 20 on; the others are not called.
	for i := 20; i < 40; i++ {
		for j := range i {
			h.Serve(context.Background(), post(toolCall(tools[i].name, fmt.Sprintf("c%d_%d", i, j), `{"orderId":1}`)))
		}
	}
	r := requireReport(t, h.Serve(context.Background(), post(`{"op":"diagnostics"}`)))
	assert.Positive(t, r.Omitted)
	assert.Nil(t, r.App, "app goes before any failing tool")
	require.NotEmpty(t, r.Tools)
	kept := 0
	for i := range 40 {
		_, ok := r.Tools[tools[i].name]
		if i < 20 {
			assert.False(t, ok, "a tool without failures goes first: %s", tools[i].name)
			continue
		}
		if ok {
			kept++
			assert.Equal(t, int64(i), r.Tools[tools[i].name].Failed)
		} else {
			assert.Zero(t, kept, "fewest failures go first: %s dropped after a kept one", tools[i].name)
		}
	}
	assert.Equal(t, 40-kept+1, r.Omitted, "every dropped tool and app")
	// The same report read from code is whole.
	whole := h.Report(context.Background())
	assert.Len(t, whole.Tools, 40)
	assert.Zero(t, whole.Omitted)
}

// TestReportIsCutKeepsOffContract: a tool whose calls were answered outside
// the contract is kept like a failing one when the report is cut, though
// it has fewer calls than the tools dropped.
func TestReportIsCutKeepsOffContract(t *testing.T) {
	var tools []*Tool
	for i := range 40 {
		tools = append(tools, appTools(fmt.Sprintf("tool_%02d_%s", i, strings.Repeat("x", 30)))...)
	}
	h, _ := newHandler(t, Config{Tools: tools})
	off := tools[7].name
	for _, tool := range tools {
		s := h.stats.tools[tool.name]
		if tool.name == off {
			s.answer(0, Response{Status: http.StatusOK, code: CodeExecutionFailed, offContract: true}, time.Now(), time.Millisecond, time.Now)
			continue
		}
		for range 5 {
			s.answer(0, Response{Status: http.StatusOK}, time.Now(), time.Millisecond, time.Now)
		}
	}
	r := requireReport(t, h.Serve(context.Background(), post(`{"op":"diagnostics"}`)))
	assert.Positive(t, r.Omitted)
	require.Contains(t, r.Tools, off, "report %s", r.raw)
	assert.Equal(t, int64(1), r.Tools[off].OffContract)
}

// TestReportIsCutWhateverItHolds: even absurd contents stay within the
// bound as valid JSON.
func TestReportIsCutWhateverItHolds(t *testing.T) {
	var keys []string
	for i := range 60 {
		keys = append(keys, fmt.Sprintf("mk_many_%02d_0123456789abcdefghijklmnopqrstuv", i))
	}
	h, _ := newHandler(t, Config{Keys: keys, Diagnostics: func(context.Context) (any, error) { return strings.Repeat("\u0001", 3000), nil }})
	resp := h.Serve(context.Background(), diagnosticsAt(keys[0], testNow))
	assert.LessOrEqual(t, utf8.RuneCount(resp.Body), maxDiagnosticsChars)
	var r wireReport
	require.NoError(t, json.Unmarshal(requireResult(t, resp), &r), "%s", resp.Body)
	assert.Positive(t, r.Omitted)
	assert.NotEmpty(t, r.Service.Library)
}

// TestReportUnderLoad: 100 report requests at once, with a frozen store
// and a Config.Diagnostics that blocks: each is answered within a second,
// valid and within bounds, and no goroutine is left behind.
// loadBound is the time each of the 100 reports of TestReportUnderLoad
// must answer in: the contract's second, doubled under the race detector,
// which slows this code several times over (the report's own deadlines,
// 500 ms for the probe, are what the test holds; the rest is the machine).
var loadBound = time.Second

func init() {
	if raceEnabled {
		loadBound = 2 * time.Second
	}
}

func TestReportUnderLoad(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	store := blockingStore{release: make(chan struct{})}
	release := make(chan struct{})
	h, _ := newHandler(t, Config{
		Store:              store,
		DiagnosticsTimeout: 100 * time.Millisecond,
		Diagnostics: func(ctx context.Context) (any, error) {
			<-release // ignores ctx
			return "late", nil
		},
	})
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			start := time.Now()
			resp := h.Serve(context.Background(), post(`{"op":"diagnostics"}`))
			assert.Less(t, time.Since(start), loadBound)
			r := requireReport(t, resp)
			assert.JSONEq(t, `{"error":"Config.Diagnostics did not finish within 100ms"}`, string(r.App))
		})
	}
	wg.Wait()
	close(release)
	close(store.release)
}

// TestHandlerReport: the typed report, with the manifest's bytes and the
// keys' fingerprints.
func TestHandlerReport(t *testing.T) {
	h, _ := newHandler(t, Config{Tools: reportTools(), Keys: []string{testKey, otherKey}})
	r := h.Report(context.Background())
	assert.Equal(t, []string{mustParseKey(testKey).Fingerprint(), mustParseKey(otherKey).Fingerprint()},
		[]string{r.Keys[0].Fingerprint, r.Keys[1].Fingerprint})
	get := h.Serve(context.Background(), get())
	assert.Equal(t, get.Body, r.Manifest.Bytes)
	sum := sha256.Sum256(get.Body)
	assert.Equal(t, hex.EncodeToString(sum[:]), r.Manifest.SHA256)
	assert.Len(t, r.Tools, 3)
	assert.Equal(t, "0s", r.Service.Uptime)
	h.Serve(context.Background(), Request{Method: http.MethodGet, Signature: mustParseKey(testKey).Sign(testNow, nil)})
	r = h.Report(context.Background())
	raw, err := json.Marshal(r)
	require.NoError(t, err)
	var wire struct{ Manifest map[string]any }
	require.NoError(t, json.Unmarshal(raw, &wire))
	assert.Len(t, wire.Manifest, 3, "sha256, tools, lastServed: the manifest's bytes are not in the wire form")
}

// TestLatencySample: the percentiles come from a bounded ring of the
// recent durations (one stripe here; TestStripesAddUp has several).
func TestLatencySample(t *testing.T) {
	ts := newToolStats(1)
	for i := range 100 {
		ts.answer(0, Response{Status: 200}, time.Now(), time.Duration(i+1)*time.Millisecond, time.Now)
	}
	p50, p99 := ts.percentiles()
	assert.Equal(t, int64(50), p50)
	assert.Equal(t, int64(99), p99)
	for range 2 * latencySamples {
		ts.answer(0, Response{Status: 200}, time.Now(), 7*time.Millisecond, time.Now)
	}
	p50, p99 = ts.percentiles()
	assert.Equal(t, int64(7), p50, "older samples are overwritten")
	assert.Equal(t, int64(7), p99)
	ts.answer(0, Response{Status: 200, replayed: true}, time.Now(), time.Hour, time.Now)
	_, p99 = ts.percentiles()
	assert.Equal(t, int64(7), p99, "a replay is not sampled")
	assert.Equal(t, int64(100+2*latencySamples+1), ts.stripes[0].calls.Load())
}

func TestSkewMsSaturates(t *testing.T) {
	assert.Equal(t, int64(1000), skewMs(testNow, testNow.UnixMilli()-1000))
	assert.Equal(t, int64(-1000), skewMs(testNow, testNow.UnixMilli()+1000))
	assert.Positive(t, skewMs(testNow, -1<<63))
	assert.Negative(t, skewMs(testNow, 1<<63-1))
	assert.Equal(t, testNow.UnixMilli()+1000, skewMs(testNow, -1000), "a negative t that does not overflow is exact")
	assert.Equal(t, int64(math.MaxInt64), skewMs(testNow, math.MinInt64), "saturates at the top")
	assert.Equal(t, int64(math.MinInt64+1), skewMs(time.UnixMilli(-5), math.MaxInt64), "a clock before 1970 and the largest t: saturates at the bottom")
	assert.Equal(t, int64(-5), skewMs(time.UnixMilli(-5), 0))
	assert.Equal(t, int64(math.MaxInt64), diffAbs(math.MinInt64), "|MinInt64| saturates")
	assert.Equal(t, int64(5), diffAbs(-5))
	assert.Equal(t, int64(5), diffAbs(5))
}

// TestLatencySampleIsRecent: the percentiles are those of the tool's
// latest calls, whichever stripes took them: the durations a stripe kept
// from calls an hour older than the latest ones (its processors took no
// call since) are not among them.
func TestLatencySampleIsRecent(t *testing.T) {
	ts := newToolStats(4)
	ok := Response{Status: 200}
	for i := 1; i < 4; i++ { // a burst of slow calls on stripes 1 to 3
		for range latencySamples {
			ts.answer(i, ok, ts.base, time.Second, time.Now)
		}
	}
	later := ts.base.Add(time.Hour)
	for range latencySamples { // then fast ones on stripe 0 only
		ts.answer(0, ok, later, time.Millisecond, time.Now)
	}
	p50, p99 := ts.percentiles()
	assert.Equal(t, []int64{1, 1}, []int64{p50, p99})
	for range 4 { // 4 of the latest 256 are the 99th percentile and above
		ts.answer(2, ok, later.Add(time.Minute), 3*time.Second, time.Now)
	}
	p50, p99 = ts.percentiles()
	assert.Equal(t, []int64{1, 3000}, []int64{p50, p99}, "the latest calls, on another stripe")
}

// TestLatencySampleInTheSameSecond: calls that ended within the same
// second on two stripes are cut to the latest in the order they ended, not
// by duration: of 512 calls one ms apart, alternately 1 ms long on one
// stripe and 100 ms long on the other, the latest 256 are half of each.
func TestLatencySampleInTheSameSecond(t *testing.T) {
	ts := newToolStats(2)
	for i := range 2 * latencySamples {
		stripe, d := i%2, time.Millisecond
		if stripe == 1 {
			d = 100 * time.Millisecond
		}
		end := ts.base.Add(time.Duration(i) * time.Millisecond)
		ts.answer(stripe, Response{Status: 200}, end.Add(-d), d, time.Now)
	}
	p50, p99 := ts.percentiles()
	assert.Equal(t, []int64{1, 100}, []int64{p50, p99})
}

// TestSampleSaturates: a duration past what a sample holds, or a start
// before the stats' base, stays within its bits.
func TestSampleSaturates(t *testing.T) {
	base := time.Now()
	s := sample(base, base, 10*time.Hour)
	assert.Equal(t, int64(1<<sampleBits-1), s&(1<<sampleBits-1), "the duration saturates")
	assert.Equal(t, (10 * time.Hour).Milliseconds(), s>>sampleBits, "the end is start + d")
	assert.Equal(t, int64(5), sample(base, base.Add(-time.Hour), 5*time.Millisecond), "an end before the base counts as the base")
	assert.Equal(t, int64(0), sample(base, base, -time.Second), "a negative duration counts as 0")
}

// TestReportCountsOffContract: a response the app's handlers write on their
// own, without Respond (an authorization check's 403, or a body written
// before a panic), is what the agent got: the tool's entry counts it as
// offContract, not as a failure, and lastFailure does not quote the
// execution_failed kept for the call's repeats. A repeat gets that
// execution_failed, and is counted as one.
func TestReportCountsOffContract(t *testing.T) {
	h, _ := newHandler(t, Config{Tools: appTools("refund", "lookup")})
	auth := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call, _ := CallFrom(r.Context())
		switch {
		case call.Tool == "lookup":
		case strings.HasPrefix(call.ToolCallID, "deny"):
			http.Error(w, "forbidden", http.StatusForbidden)
		default:
			_, _ = w.Write([]byte("half an answer"))
			panic("the handler broke after writing")
		}
	})
	dispatch := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { Respond(w, r, "found", nil) })
	mux := http.NewServeMux()
	h.Mount(mux, "/m", auth, dispatch)
	serve := func(tool, id string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httpPost("/m", toolCall(tool, id, `{}`)))
		return rec
	}
	assert.Equal(t, http.StatusForbidden, serve("refund", "deny_1").Code)
	assert.Equal(t, http.StatusForbidden, serve("refund", "deny_2").Code)
	assert.Equal(t, "half an answer", serve("refund", "broke_1").Body.String())
	assert.Equal(t, `{"result":"found"}`, serve("lookup", "found_1").Body.String())

	r := requireReport(t, h.Serve(context.Background(), post(`{"op":"diagnostics"}`)))
	refund := r.Tools["refund"]
	assert.Equal(t, []int64{3, 0, 0, 0, 0, 3}, []int64{refund.Calls, refund.Results, refund.Refusals, refund.Failed, refund.InvalidInput, refund.OffContract}, "report %s", r.raw)
	assert.Nil(t, refund.LastFailure, "no execution_failed went out")
	assert.Equal(t, int64(1), r.Tools["lookup"].Results)
	var entries struct {
		Tools map[string]map[string]json.RawMessage
	}
	require.NoError(t, json.Unmarshal([]byte(r.raw), &entries))
	assert.NotContains(t, entries.Tools["lookup"], "offContract", "absent while 0")
	assert.Contains(t, entries.Tools["refund"], "offContract")

	rec := serve("refund", "deny_1")
	assert.Contains(t, rec.Body.String(), "execution_failed", "the repeat gets the answer kept for its toolCallId")
	r = requireReport(t, h.Serve(context.Background(), post(`{"op":"diagnostics"}`)))
	refund = r.Tools["refund"]
	assert.Equal(t, []int64{4, 1, 3}, []int64{refund.Calls, refund.Failed, refund.OffContract})
	require.NotNil(t, refund.LastFailure)
	assert.Equal(t, "the server's handler did not answer this call", refund.LastFailure.Message)
}

// TestStripesOwnTheirCacheLines: each copy of a striped counter is on a
// 64-byte line of its own, apart from the key's fields every check reads
// and from the other copies, so a processor counting does not take the
// line another processor reads or counts on.
func TestStripesOwnTheirCacheLines(t *testing.T) {
	const line = 64
	var k keyState
	lastRead := unsafe.Offsetof(k.macs) + unsafe.Sizeof(k.macs) - 1
	first := unsafe.Offsetof(k.verified)
	assert.Greater(t, first/line, lastRead/line, "the first counter shares a line with the fields a check reads")
	assert.Equal(t, uintptr(line), unsafe.Sizeof(k.verified[0]), "each counter is a line long")
	var ts toolStripe
	assert.Zero(t, unsafe.Offsetof(ts.samples)%line, "a stripe's counters are one line")
	assert.Zero(t, unsafe.Sizeof(ts)%line, "stripes are whole lines")
}

// TestStripesAddUp: a tool's counts and durations, and a key's verified
// count, written on different stripes, are reported as one.
func TestStripesAddUp(t *testing.T) {
	h, _ := newHandler(t, Config{Tools: reportTools()})
	h.stats.tools["echo"] = newToolStats(4)
	k := h.keyring().keys[0]
	for i := range 4 {
		h.stats.tools["echo"].answer(i, Response{Status: 200}, time.Now(), time.Duration(10*(i+1))*time.Millisecond, time.Now)
		h.stats.tools["echo"].answer(i, Response{Status: 200, code: CodeExecutionFailed, Body: []byte(`{"error":{"code":"execution_failed","message":"m"}}`)}, time.Now(), time.Millisecond, time.Now)
		k.verifiedAt(testNow, i)
	}
	h.stats.tools["echo"].answer(3, Response{Status: 200, refusal: "no"}, time.Now(), 40*time.Millisecond, time.Now)
	h.stats.tools["echo"].answer(2, Response{Status: 400, code: CodeInvalidInput, Body: []byte(`{"error":{"code":"invalid_input","message":"m"}}`)}, time.Now(), 40*time.Millisecond, time.Now)
	r := h.Report(context.Background())
	e := r.Tools["echo"]
	assert.Equal(t, []int64{10, 4, 1, 4, 1}, []int64{e.Calls, e.Results, e.Refusals, e.Failed, e.InvalidInput})
	assert.Equal(t, int64(10), e.P50Ms, "the 50th of 1, 1, 1, 1, 10, 20, 30, 40, 40, 40 ms")
	assert.Equal(t, int64(40), e.P99Ms)
	assert.Equal(t, int64(4), r.Keys[0].Verified)
	assert.Equal(t, testNow.UnixMilli(), r.Keys[0].LastVerified.UnixMilli())
}

// TestStripesPick: pick stays within the Handler's stripes, and with one
// stripe it is always 0; n processors each get their own token first.
func TestStripesPick(t *testing.T) {
	one := &stripes{n: 1}
	assert.Zero(t, one.pick())
	s := newStripes()
	s.n = 3
	seen := map[int]bool{}
	for range 1000 {
		i := s.pick()
		require.True(t, i >= 0 && i < 3, "stripe %d", i)
		seen[i] = true
	}
	for range 5 { // tokens made one after another go round the stripes
		seen[*s.tokens.New().(*int)] = true
	}
	assert.Len(t, seen, 3)
}

// TestStripesPickAfterManyTokens: a token made after 2³¹ others (the
// pool drops its tokens at garbage collections, so a long-running
// process makes them again and again) is still a stripe in [0, n), where
// int of the counter was negative on 32-bit platforms
// (GOARCH=386 go test -run TestStripesPickAfterManyTokens ./protocol).
func TestStripesPickAfterManyTokens(t *testing.T) {
	s := newStripes()
	s.n = 3
	s.next.Store(1<<31 - 2)
	for range 6 {
		i := *s.tokens.New().(*int)
		require.True(t, i >= 0 && i < 3, "stripe %d", i)
	}
}

// BenchmarkCountingPerCall is what the report's counting adds to one tool
// call: picking its stripe, the key's verified count, the tool's outcome
// and its duration in the sample. Compare it with BenchmarkTypedCall's
// time per call; with -cpu 1,2 it also shows whether calls on two
// processors slow each other down.
func BenchmarkCountingPerCall(b *testing.B) {
	h, _ := newHandler(b, Config{Tools: reportTools()})
	k := h.keyring().keys[0]
	resp := Response{Status: http.StatusOK}
	start := time.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			stripe := h.stats.stripes.pick()
			k.verifiedAt(testNow, stripe)
			h.stats.tools["echo"].answer(stripe, resp, start, time.Millisecond, h.cfg.Now)
		}
	})
}

// BenchmarkTypedCallCounting is BenchmarkTypedCall's 1 KiB call without
// the replay store, with the report's counting (counting=on, as shipped)
// and without it (counting=off: no stats, so no key, tool or refusal
// counter is touched), in one binary so that runs can alternate
// (docs/PERFORMANCE.md has the command that alternates them). Besides the
// wall time it reports the process's CPU time per call, cpu-ns/op.
func BenchmarkTypedCallCounting(b *testing.B) {
	tool := quoteOrderTool()
	body := toolCall("quote_order", "call_0123456789abcdef0123456789abcdef", orderInputJSON(1<<10))
	for _, counting := range []string{"on", "off"} {
		b.Run("counting="+counting, func(b *testing.B) {
			h := benchHandler(b, Config{Tools: []*Tool{tool}, DisableReplayProtection: true})
			if counting == "off" {
				h.stats = nil
			}
			req := post(body)
			ctx := context.Background()
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				if resp := h.Serve(ctx, req); resp.Status != 200 || resp.code != "" {
					b.Fatalf("%d %.200s", resp.Status, resp.Body)
				}
			}
			// CPU time, unlike wall time, is barely moved by other
			// processes on a shared machine.
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the CPU time (user and system) the process has used, in
// nanoseconds.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// TestRefusalCodes: every code of §7 but the two answers has a slot.
func TestRefusalCodes(t *testing.T) {
	for _, c := range []Code{CodeMissingSignature, CodeMalformedSignature, CodeStaleTimestamp, CodeInvalidSignature,
		CodeInvalidBody, CodeUnknownOp, CodeUnknownTool, CodeInvalidInput, CodeMethodNotAllowed, CodeMissingSecret, CodeInvalidMedianKey} {
		i := refusalIndex(c)
		require.GreaterOrEqual(t, i, 0, "%s", c)
		assert.Equal(t, c, refusalCodes[i])
	}
	assert.Equal(t, -1, refusalIndex(CodeExecutionFailed))
	assert.Equal(t, -1, refusalIndex(CodeDiagnosticsUnsupported))
	assert.Equal(t, -1, refusalIndex("rate_limited"))
}

// TestTruncateChars: a failure's message and the report's short strings
// are cut to whole characters, as chars counts them, without a copy; an
// error message's quoted input (truncate) is cut the same way, the cut
// marked.
func TestTruncateChars(t *testing.T) {
	for _, c := range []struct{ in, cut, marked string }{
		{"", "", ""},
		{"abc", "abc", "abc"},
		{"abcd", "abc", "abc…"},
		{"ééé", "ééé", "ééé"},
		{"éééé", "ééé", "ééé…"},
		{"ééé€", "ééé", "ééé…"},
		{"a€bc", "a€b", "a€b…"},
		{"a\xffbc", "a\xffb", "a\xffb…"}, // a byte that is not UTF-8 is one character
	} {
		assert.Equal(t, c.cut, truncateChars(c.in, 3), "%q", c.in)
		assert.Equal(t, c.marked, truncate(c.in, 3), "%q", c.in)
	}
	long := strings.Repeat("é", 300)
	assert.Zero(t, testing.AllocsPerRun(10, func() { _ = truncateChars(long, maxFailureChars) }))
}

// TestTruncate: an error message's quoted input is cut to whole
// characters and the cut is marked (TestTruncateChars has the cuts), so a
// message never holds half of a character.
func TestTruncate(t *testing.T) {
	// An unknown op of multi-byte characters: the message stays valid UTF-8.
	_, _, err := decodeBody([]byte(`{"op":"` + strings.Repeat("é", 60) + `"}`))
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, CodeUnknownOp, e.Code)
	msg := e.Message
	assert.True(t, utf8.ValidString(msg), "%q", msg)
	assert.Contains(t, msg, `op "`+strings.Repeat("é", 39)+"… is", "cut to 40 characters: the quote and 39 é")
}

// TestStaleReadingIsBoundedAndPlausible: a stale request is refused
// before its MAC is checked (§5), so anybody can send one. Its skew
// becomes the stale_timestamp reading only when a clock could produce it
// (within a day of the server's clock; the others are counted as
// implausible), and lasts an hour at most.
func TestStaleReadingIsBoundedAndPlausible(t *testing.T) {
	clock := newSettableClock()
	h, _ := newHandler(t, Config{Now: clock.Now})
	ctx := context.Background()
	body := []byte(`{"op":"diagnostics"}`)
	forged := func(ts string) Request {
		return Request{Method: http.MethodPost, Signature: "t=" + ts + ",v1=" + strings.Repeat("0", 64), BodyBytes: body}
	}
	for _, ts := range []string{"9223372036854775807", "-9223372036854775808", "0", "1767225600"} { // the largest and smallest t, the epoch, seconds
		requireError(t, h.Serve(ctx, forged(ts)), http.StatusUnauthorized, CodeStaleTimestamp)
	}
	r := h.Report(ctx)
	stale := r.Refused[CodeStaleTimestamp]
	assert.Equal(t, int64(4), stale.Count, "every stale request is counted")
	assert.Equal(t, int64(4), stale.Implausible)
	assert.Zero(t, stale.MaxSkewMs, "no reading a clock could not produce")
	raw := requireReport(t, h.Serve(ctx, post(`{"op":"diagnostics"}`))).raw
	assert.Contains(t, raw, `"stale_timestamp":{"count":4,"last":"2026-01-01T00:00:00Z","implausible":4}`)

	// Plausible: 23 hours ahead, then 10 minutes behind; the larger stays.
	requireError(t, h.Serve(ctx, forged(strconv.FormatInt(testNow.Add(23*time.Hour).UnixMilli(), 10))), http.StatusUnauthorized, CodeStaleTimestamp)
	requireError(t, h.Serve(ctx, forged(strconv.FormatInt(testNow.Add(-10*time.Minute).UnixMilli(), 10))), http.StatusUnauthorized, CodeStaleTimestamp)
	assert.Equal(t, -(23 * time.Hour).Milliseconds(), h.Report(ctx).Refused[CodeStaleTimestamp].MaxSkewMs)

	// It lasts no more than an hour: still there 29 minutes on, gone an
	// hour and a minute on, while the count stays.
	clock.advance(29 * time.Minute)
	assert.Equal(t, -(23 * time.Hour).Milliseconds(), h.Report(ctx).Refused[CodeStaleTimestamp].MaxSkewMs)
	clock.advance(32 * time.Minute)
	stale = h.Report(ctx).Refused[CodeStaleTimestamp]
	assert.Zero(t, stale.MaxSkewMs, "an hour on, no reading is left")
	assert.Equal(t, int64(6), stale.Count)

	// A new window's reading is its own.
	requireError(t, h.Serve(ctx, forged(strconv.FormatInt(clock.Now().Add(-6*time.Minute).UnixMilli(), 10))), http.StatusUnauthorized, CodeStaleTimestamp)
	assert.Equal(t, (6 * time.Minute).Milliseconds(), h.Report(ctx).Refused[CodeStaleTimestamp].MaxSkewMs)
}
