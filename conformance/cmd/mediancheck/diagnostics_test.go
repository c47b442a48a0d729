package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/examples/catalog"
	"github.com/median-go/median/internal/base/wirereport"
	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/ratelimit"
)

// exampleKey and retiredKey are the running example's keys.
const (
	exampleKey = "mediancheck-example-key-0123456789-abcdefghijklmno"
	retiredKey = "mediancheck-retired-key-0123456789-abcdefghijklmno"
)

// startExample runs the catalog example app (the demo the four examples
// serve) on a loopback port, with its server clock ahead of this one by
// ahead, and returns the endpoint's URL.
func startExample(t *testing.T, ahead time.Duration, previousKey string) string {
	t.Helper()
	d, err := catalog.New(catalog.Options{Key: exampleKey, PreviousKey: previousKey, Logger: slog.New(slog.DiscardHandler), Warnings: io.Discard,
		Now: func() time.Time { return time.Now().Add(ahead) }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return serveDated(t, d.Handler, ahead)
}

// serveDated serves h at /api/median on a loopback port, its Date header
// ahead of this machine's clock by ahead, as on a real server whose clock
// is off, and returns the endpoint's URL.
func serveDated(t *testing.T, h http.Handler, ahead time.Duration) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/api/median", h)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", time.Now().Add(ahead).UTC().Format(http.TimeFormat))
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/api/median"
}

func exampleEnv(name string) string {
	if name == "MEDIAN_KEY" {
		return exampleKey
	}
	return ""
}

// send posts body signed with key at at, as Median does: not marked as a
// check's.
func send(t *testing.T, url, key string, at time.Time, body string) int {
	t.Helper()
	return sendMethod(t, url, key, at, http.MethodPost, body)
}

// sendMethod sends body with method, signed with key at at ("" for no
// signature), as Median or a stranger would.
func sendMethod(t *testing.T, url, key string, at time.Time, method, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if key != "" {
		k, err := protocol.ParseKey(key)
		require.NoError(t, err)
		if method == http.MethodGet {
			req.Header.Set("Median-Signature", k.Sign(at, nil))
		} else {
			req.Header.Set("Median-Signature", k.Sign(at, []byte(body)))
		}
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

func diagnose(url string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run([]string{"diagnostics", "-url", url}, &out, &errb, exampleEnv)
	return code, out.String(), errb.String()
}

// callBody is a call of tool from a verified visitor.
func callBody(tool, id, input string) string {
	return fmt.Sprintf(`{"tool":%q,"toolCallId":%q,"input":%s,"context":{"conversationId":"conv_1","risk":"low","visitor":{"verified":true,"externalId":"user_7"}}}`, tool, id, input)
}

// TestDiagnosticsReadsARunningExample: against the running example, with
// its clock 3 min ahead, a retired key Median no longer uses, refusals and
// a failing tool, mediancheck diagnostics prints the report and says each.
func TestDiagnosticsReadsARunningExample(t *testing.T) {
	url := startExample(t, 3*time.Minute, retiredKey)
	now := time.Now()
	require.Equal(t, http.StatusUnauthorized, send(t, url, exampleKey, now.Add(-10*time.Minute), `{"op":"diagnostics"}`))
	require.Equal(t, http.StatusUnauthorized, send(t, url, "mediancheck-unknown-key-0123456789-abcdefghijklmno", now, `{"op":"diagnostics"}`))
	missing := callBody(catalog.LookupOrderTool, "call_diag_1", fmt.Sprintf(`{"orderId":%q}`, catalog.MissingOrderID))
	require.Equal(t, http.StatusOK, send(t, url, exampleKey, now, missing))

	code, out, errOut := diagnose(url)
	require.Equal(t, exitFailed, code, "problems found: exit 1\n%s%s", out, errOut)
	assert.Contains(t, out, "HTTP 200 application/json")
	assert.Contains(t, out, `"service": {`, "the report is printed")
	assert.Contains(t, out, `"cancelledLimit"`, "with the example's own app entry")
	assert.Regexp(t, `!!  this machine's clock is (3 minutes|2 minutes 5\d seconds|3 minutes \d+ seconds?) behind the server's \(clock.skewMs 1\d{5}\): check NTP on both`, out)
	retired, _ := protocol.ParseKey(retiredKey)
	assert.Contains(t, out, "!!  key 2 of 2 ("+retired.Fingerprint()+") has verified no request since the server started")
	current, _ := protocol.ParseKey(exampleKey)
	assert.Contains(t, out, "ok  key 1 of 2 ("+current.Fingerprint()+"), the one in $MEDIAN_KEY, verified 1 request(s), the last at", "Median's call; mediancheck's own request is a check's")
	assert.Contains(t, out, "!!  1 request(s) refused stale_timestamp")
	assert.Regexp(t, `if the furthest off in the last hour came from Median, Median's clock is (13 minutes|12 minutes 5\d seconds|13 minutes \d+ seconds?) behind this server's \(maxSkewMs 7\d{5}\)`, out)
	assert.Contains(t, out, "!!  1 request(s) refused invalid_signature")
	assert.Contains(t, out, "!!  tool "+catalog.LookupOrderTool+": 1 of 1 call(s) failed (1 execution_failed, 0 invalid_input); the last")
	assert.Contains(t, out, "ok  the replay store (memory) answers in 0 ms")
	assert.NotContains(t, out, exampleKey)
}

// TestDiagnosticsOfAHealthyExample: nothing to report, exit 0; a server
// Median has not called yet is not a problem.
func TestDiagnosticsOfAHealthyExample(t *testing.T) {
	code, out, errOut := diagnose(startExample(t, 0, ""))
	require.Equal(t, exitOK, code, "%s%s", out, errOut)
	assert.Regexp(t, `ok  median-go \(devel\) \(go[0-9.]+\), up \ds`, out)
	assert.Regexp(t, `ok  clocks agree: this machine's clock (is \d+ milliseconds? (behind|ahead of)|and) the server's( agree)? \(clock.skewMs -?\d+\)`, out)
	assert.Regexp(t, `ok  key 1 of 1 \(mk_[0-9a-f]{12}\), the one in \$MEDIAN_KEY, has verified no request of Median's since the server started \(checks are not counted\): Median has not called yet`, out)
	assert.Contains(t, out, "has not been fetched by a signed GET since the server started")
	assert.Contains(t, out, "nothing wrong found")
	assert.NotContains(t, out, "!!")
}

// TestDiagnosticsOfAClockTooFarOff: a server 6 min ahead refuses the
// request itself; its Date header still tells how far off it is. When the
// Date header agrees, the instance's own clock is at fault.
func TestDiagnosticsOfAClockTooFarOff(t *testing.T) {
	url := startExample(t, 6*time.Minute, "")
	code, out, _ := diagnose(url)
	require.Equal(t, exitFailed, code, out)
	assert.Contains(t, out, "HTTP 401")
	assert.Contains(t, out, "!!  the endpoint refused the request as stale_timestamp: its clock and this machine's are more than 5 minutes apart, so it refuses every call from Median too")
	assert.Regexp(t, `!!  by its Date header, this machine's clock is (6 minutes|5 minutes 5\d seconds|6 minutes \d+ seconds?) behind the server's: check NTP on both`, out)

	d, err := catalog.New(catalog.Options{Key: exampleKey, Logger: slog.New(slog.DiscardHandler), Warnings: io.Discard,
		Now: func() time.Time { return time.Now().Add(-6 * time.Minute) }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	code, out, _ = diagnose(serveDated(t, d.Handler, 0))
	require.Equal(t, exitFailed, code, out)
	assert.Contains(t, out, "!!  its Date header agrees with this machine's clock: check the clock of the instance that answered, or the Config.Now it runs with")
}

// Tools of the readings' endpoints: a read-only lookup, a refund that
// changes something, and a tool that fails.
func readingTools() []*protocol.Tool {
	type in struct {
		OrderID string `json:"orderId"`
	}
	run := func(_ context.Context, c protocol.ToolCall[in]) (map[string]string, error) {
		return map[string]string{"orderId": c.Input.OrderID}, nil
	}
	return []*protocol.Tool{
		protocol.NewTool("lookup", protocol.RiskLow, "Looks an order up.", run, protocol.ReadOnly()),
		protocol.NewTool("refund", protocol.RiskLow, "Refunds an order.", run),
		protocol.NewTool("broken", protocol.RiskLow, "Fails.", func(context.Context, protocol.ToolCall[in]) (any, error) {
			return nil, errors.New("the order service is down")
		}),
	}
}

// endpoint serves a Handler with exampleKey and the readings' tools, cfg's
// other fields as given, and returns its URL and the Handler.
func endpoint(t *testing.T, cfg protocol.Config) (string, *protocol.Handler) {
	t.Helper()
	if cfg.Keys == nil && cfg.KeySource == nil {
		cfg.Keys = []string{exampleKey}
	}
	if cfg.Tools == nil {
		cfg.Tools = readingTools()
	}
	cfg.Logger = slog.New(slog.DiscardHandler)
	h, err := protocol.New(cfg)
	if h == nil {
		require.NoError(t, err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return serveDated(t, h, 0), h
}

// brokenStore is a replay store whose Claim and Probe fail: a store that
// is down.
type brokenStore struct{ protocol.Store }

func (brokenStore) Claim(context.Context, string, string, time.Duration) (protocol.ClaimStatus, []byte, error) {
	return 0, nil, errors.New("dial tcp 10.0.0.9:6379: connection refused")
}
func (brokenStore) Probe(context.Context) error { return errors.New("connection refused") }
func (brokenStore) Kind() string                { return "redis" }

// unprobedStore is a working store that cannot be probed.
type unprobedStore struct{ protocol.Store }

// editedReport serves h with its report edited by edit: an endpoint whose
// report says something this library's never does.
func editedReport(h http.Handler, edit func(map[string]any)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var a map[string]map[string]any
		if json.Unmarshal(rec.Body.Bytes(), &a) == nil && a["result"] != nil {
			edit(a["result"])
			b, _ := json.Marshal(a)
			rec.Body = bytes.NewBuffer(b)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// TestEveryReading provokes each event the reading of a report names, on
// an endpoint of its own, and asserts the words mediancheck diagnostics
// says of it: "ok  " for what is fine, "!!  " for a problem.
func TestEveryReading(t *testing.T) {
	now := time.Now
	tests := []struct {
		name  string
		setup func(t *testing.T) string // provokes the event and returns the endpoint's URL
		want  []string                  // lines, each whole from its mark, or a part of one
	}{
		{"a key in force that verified Median's requests", func(t *testing.T) string {
			url, _ := endpoint(t, protocol.Config{})
			send(t, url, exampleKey, now(), `{"op":"diagnostics"}`)
			return url
		}, []string{"ok  key 1 of 1 (" + fingerprint(exampleKey) + "), the one in $MEDIAN_KEY, verified 1 request(s), the last at 20"}},
		{"a retired key unused", func(t *testing.T) string {
			url, _ := endpoint(t, protocol.Config{Keys: []string{exampleKey, retiredKey}})
			return url
		}, []string{"!!  key 2 of 2 (" + fingerprint(retiredKey) + ") has verified no request since the server started: Median does not sign with it; if it is the retired key, remove it"}},
		{"a key Median stopped using a day ago", func(t *testing.T) string {
			var mu sync.Mutex
			clock := time.Now().Add(-25 * time.Hour)
			url, _ := endpoint(t, protocol.Config{Keys: []string{exampleKey, retiredKey}, Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }})
			send(t, url, retiredKey, clock, `{"op":"diagnostics"}`)
			mu.Lock()
			clock = time.Now()
			mu.Unlock()
			return url
		}, []string{"!!  key 2 of 2 (" + fingerprint(retiredKey) + ") last verified a request 25h0m0s ago: Median seems to have stopped using it; if it is the retired key, remove it"}},
		{"the key of $MEDIAN_KEY not in force", func(t *testing.T) string {
			url, _ := endpoint(t, protocol.Config{})
			other := editedReport(httpHandler(t, url), func(r map[string]any) {
				r["keys"] = []any{map[string]any{"fingerprint": "mk_000000000000", "verified": 1, "lastVerified": "2026-01-01T00:00:00Z"}}
			})
			return serveDated(t, other, 0)
		}, []string{"!!  the key in $MEDIAN_KEY (" + fingerprint(exampleKey) + ") is not among the keys in force, though the request verified"}},
		{"a key file that stopped giving a usable key", func(t *testing.T) string {
			file := filepath.Join(t.TempDir(), "key")
			require.NoError(t, os.WriteFile(file, []byte(exampleKey), 0o600))
			t.Setenv("MEDIAN_KEY_FILE", file)
			url, h := endpoint(t, protocol.Config{Keys: []string{}, KeyRefresh: 20 * time.Millisecond})
			require.NoError(t, os.WriteFile(file, []byte("revoked"), 0o600))
			require.Eventually(t, func() bool { return h.Report(context.Background()).KeyRead != nil }, 5*time.Second, 10*time.Millisecond)
			return url
		}, []string{"!!  the newest read of MEDIAN_KEY_FILE, at 20", "gave no usable key (invalid_median_key): the keys above stay in force until a read gives one; the server's log says what is wrong"}},
		{"refusals of every code", func(t *testing.T) string {
			url, _ := endpoint(t, protocol.Config{})
			sendMethod(t, url, "", now(), http.MethodPost, `{}`)
			sendMethod(t, url, exampleKey, now(), http.MethodDelete, "")
			sendMethod(t, url, retiredKey, now(), http.MethodPost, `{"op":"diagnostics"}`)
			send(t, url, exampleKey, now(), `{"op":"nope"}`)
			send(t, url, exampleKey, now(), callBody("nope", "call_r1", `{}`))
			return url
		}, []string{
			"ok  1 request(s) refused missing_signature, the last at 20",
			"ok  1 request(s) refused method_not_allowed, the last at 20",
			"ok  1 request(s) refused unknown_op, the last at 20",
			"ok  1 request(s) refused unknown_tool, the last at 20",
			"!!  1 request(s) refused invalid_signature, the last at 20",
			": something signs with a key this server does not hold (a rotation Median has made and the server not yet, or a client that is not Median)",
		}},
		{"stale requests, one from a clock 6 minutes ahead and one no clock sends", func(t *testing.T) string {
			url, _ := endpoint(t, protocol.Config{})
			send(t, url, exampleKey, now().Add(6*time.Minute), `{"op":"diagnostics"}`)
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{}`))
			req.Header.Set("Median-Signature", "t=9223372036854775807,v1="+strings.Repeat("0", 64))
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			_ = resp.Body.Close()
			return url
		}, []string{"!!  2 request(s) refused stale_timestamp, the last at 20",
			"; if the furthest off in the last hour came from Median, Median's clock is ", // 6 minutes ahead, less the time in flight
			" ahead of this server's (maxSkewMs -3",
			"; 1 carried a t more than a day off, which no clock drift explains (a t in seconds, or a client that is not Median): a sender's clock and the server's disagree, or requests are replayed late"}},
		{"a server that ran without a key", func(t *testing.T) string {
			file := filepath.Join(t.TempDir(), "key")
			t.Setenv("MEDIAN_KEY_FILE", file)
			url, h := endpoint(t, protocol.Config{Keys: []string{}, KeyRefresh: 20 * time.Millisecond})
			require.Equal(t, http.StatusInternalServerError, send(t, url, exampleKey, now(), `{"op":"diagnostics"}`))
			require.NoError(t, os.WriteFile(file, []byte(exampleKey), 0o600))
			require.Eventually(t, func() bool { return len(h.Report(context.Background()).Keys) == 1 }, 5*time.Second, 10*time.Millisecond)
			return url
		}, []string{"!!  1 request(s) refused missing_secret, the last at 20", ": the server ran without a usable key"}},
		{"replay protection off", func(t *testing.T) string {
			url, _ := endpoint(t, protocol.Config{DisableReplayProtection: true})
			return url
		}, []string{"!!  replay protection is off (store.kind none): a captured call can run its tool again for 5 minutes"}},
		{"a store that cannot be probed", func(t *testing.T) string {
			url, _ := endpoint(t, protocol.Config{Store: unprobedStore{}})
			return url
		}, []string{"ok  the replay store (custom) cannot be probed"}},
		{"a store that is down: a call not run, a read-only call run all the same", func(t *testing.T) string {
			url, _ := endpoint(t, protocol.Config{Store: brokenStore{}, StoreTimeout: 50 * time.Millisecond})
			send(t, url, exampleKey, now(), callBody("refund", "call_s1", `{"orderId":"A-1"}`))
			send(t, url, exampleKey, now(), callBody("lookup", "call_s2", `{"orderId":"A-1"}`))
			return url
		}, []string{
			"!!  the replay store (redis) is unreachable: tool calls are answered execution_failed without running (read-only tools excepted); its error is in the server's log",
			"!!  1 call(s) were not run: the store could not record their claim, and the agent was told the action was not carried out (store.claimFailures)",
			"!!  1 call(s) of read-only tools ran all the same while the store could not record their claim; their answers were not kept (store.readOnlyRuns)",
		}},
		{"answers dropped before their time", func(t *testing.T) string {
			url, _ := endpoint(t, protocol.Config{ReplayMaxBytes: 64 << 10}) // the least budget
			for i := range 40 {
				send(t, url, exampleKey, now(), callBody("lookup", fmt.Sprintf("call_e%d", i), `{"orderId":"`+strings.Repeat("x", 4000)+`"}`))
			}
			return url
		}, []string{"(store.evictedEarly): their calls could run again; raise Config.ReplayMaxBytes or use a shared store"}},
		{"the manifest fetched by Median", func(t *testing.T) string {
			url, _ := endpoint(t, protocol.Config{})
			sendMethod(t, url, exampleKey, now(), http.MethodGet, "")
			return url
		}, []string{"ok  the manifest (3 tools, sha256 ", ") was last fetched at 20"}},
		{"a tool's calls, failures and rate limit", func(t *testing.T) string {
			tools := readingTools()
			limit, err := ratelimit.New(ratelimit.Config{Tools: map[*protocol.Tool]ratelimit.Limit{tools[0]: {Calls: 1, Per: time.Minute}}})
			require.NoError(t, err)
			url, _ := endpoint(t, protocol.Config{Tools: tools, Interceptors: []protocol.Interceptor{limit}})
			send(t, url, exampleKey, now(), callBody("lookup", "call_t1", `{"orderId":"A-1"}`))
			send(t, url, exampleKey, now(), callBody("lookup", "call_t2", `{"orderId":"A-1"}`))
			send(t, url, exampleKey, now(), callBody("broken", "call_t3", `{"orderId":"A-1"}`))
			send(t, url, exampleKey, now(), callBody("refund", "call_t4", `{"orderId":"A-1"}`))
			return url
		}, []string{
			"ok  tool lookup: 1 of 2 call(s) were over a rate limit and refused rate_limited without running (§9.1): raise the limit if the agent needs more",
			"ok  tool lookup: 2 call(s), none failed (p50 ",
			"!!  tool broken: 1 of 1 call(s) failed (1 execution_failed, 0 invalid_input); the last, at 20",
			`execution_failed: "`,
		}},
		{"a tool answered off the contract", func(t *testing.T) string {
			refund := protocol.DeclareTool[map[string]any]("refund", protocol.RiskLow, "Refunds an order.", protocol.WithInputSchema(json.RawMessage(`{"type":"object"}`)))
			h, err := protocol.New(protocol.Config{Keys: []string{exampleKey}, Tools: []*protocol.Tool{refund}, Logger: slog.New(slog.DiscardHandler)})
			require.NoError(t, err)
			url := serveDated(t, h.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "forbidden", http.StatusForbidden)
			})), 0)
			send(t, url, exampleKey, now(), callBody("refund", "call_o1", `{}`))
			return url
		}, []string{"!!  tool refund: 1 of 1 call(s) were answered by the server's own handlers with a response they wrote themselves (offContract)"}},
		{"checks", func(t *testing.T) string {
			url, _ := endpoint(t, protocol.Config{})
			target := conformance.URLTarget(url, exampleKey)
			_, err := conformance.Check(context.Background(), target, conformance.Options{Run: "^signature/missing$|^timestamp/past$"})
			require.NoError(t, err)
			return url
		}, []string{"ok  3 request(s) of checks (mediancheck, the conformance suite, the inspector), the last at 20", ", 0 of them tool calls: not counted above; refused as the checks meant: 1 missing_signature, 1 stale_timestamp"}},
		{"a report cut to fit", func(t *testing.T) string {
			var tools []*protocol.Tool
			for i := range 40 {
				tools = append(tools, protocol.NewTool(fmt.Sprintf("tool_%02d_%s", i, strings.Repeat("x", 40)), protocol.RiskLow, "A tool.",
					func(context.Context, protocol.ToolCall[struct{}]) (any, error) { return "ok", nil }))
			}
			url, _ := endpoint(t, protocol.Config{Tools: tools})
			return url
		}, []string{"entries were left out to fit 2,000 characters; the app has them all (Handler.Report)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := tt.setup(t)
			_, out, errOut := diagnose(url)
			lines := strings.Split(out, "\n")
			for _, want := range tt.want {
				found := false
				for _, l := range lines {
					found = found || strings.Contains(l, want)
				}
				assert.True(t, found, "no line says %q:\n%s%s", want, out, errOut)
			}
		})
	}
}

// TestEveryRefusedAnswer: each way the endpoint can refuse the
// diagnostics request itself, provoked, and what is said of it.
func TestEveryRefusedAnswer(t *testing.T) {
	for _, tt := range []struct {
		name string
		h    func(t *testing.T) http.Handler
		want string
	}{
		{"a key it does not hold", func(t *testing.T) http.Handler {
			_, h := endpoint(t, protocol.Config{Keys: []string{retiredKey}})
			return h
		}, "!!  the endpoint does not hold the key in $MEDIAN_KEY (" + fingerprint(exampleKey) + "): it refused the request as invalid_signature; compare the fingerprints in your deployment's log"},
		{"no key", func(t *testing.T) http.Handler {
			h, _ := protocol.New(protocol.Config{Keys: []string{""}, Logger: slog.New(slog.DiscardHandler)})
			return h
		}, "!!  the endpoint has no usable key (missing_secret, HTTP 500): Config.Keys[0] is empty"},
		{"the report turned off", func(t *testing.T) http.Handler {
			_, h := endpoint(t, protocol.Config{DiagnosticsOff: true})
			return h
		}, "ok  the operator turned the diagnostics report off (diagnostics_unsupported)"},
		{"a report of its own", func(t *testing.T) http.Handler {
			_, h := endpoint(t, protocol.Config{DiagnosticsReplace: func(context.Context) (any, error) { return map[string]string{"db": "ok"}, nil }})
			return h
		}, "ok  the endpoint answers diagnostics with a report of its own (not the one of docs/PROTOCOL.md §10): read it above"},
		{"not JSON", func(t *testing.T) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "<h1>shop</h1>") })
		}, "!!  the answer is not JSON: this is not a Median endpoint, or not at this URL"},
		{"an endpoint that does not know the op", func(t *testing.T) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = io.WriteString(w, `{"error":{"code":"unknown_op","message":"op diagnostics is not known"}}`)
			})
		}, "!!  the endpoint answered HTTP 400 unknown_op: op diagnostics is not known"},
		{"a report of the wrong shape", func(t *testing.T) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"result":{"service":{"library":1}}}`)
			})
		}, "!!  the report does not have the shape of docs/PROTOCOL.md §10"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, out, errOut := diagnose(serveDated(t, tt.h(t), 0))
			assert.Contains(t, out, tt.want, "%s", errOut)
		})
	}
}

// httpHandler is a handler that forwards to url.
func httpHandler(t *testing.T, url string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, url, r.Body)
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	})
}

func fingerprint(key string) string {
	k, _ := protocol.ParseKey(key)
	return k.Fingerprint()
}

// TestReadReportOfAbsentFields: a report without clock.skewMs (another
// implementation's) reads without a clock line.
func TestReadReportOfAbsentFields(t *testing.T) {
	var r wirereport.Report
	for _, f := range readReport(r, "mk_5a5c87525bb5", "MEDIAN_KEY") {
		assert.NotContains(t, f.text, "clock")
	}
}
