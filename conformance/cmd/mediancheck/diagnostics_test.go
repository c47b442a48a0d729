package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/examples/catalog"
	"github.com/median-go/median/internal/base/wirereport"
	"github.com/median-go/median/protocol"
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
	mux := http.NewServeMux()
	d.Handler.Mount(mux, "/api/median")
	// The Date header follows the server's clock, as on a real server whose
	// clock is off.
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

// send posts body signed with key at at.
func send(t *testing.T, url, key string, at time.Time, body string) int {
	t.Helper()
	k, err := protocol.ParseKey(key)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Median-Signature", k.Sign(at, []byte(body)))
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

// TestDiagnosticsReadsARunningExample: against the running example, with
// its clock 3 min ahead, a retired key Median no longer uses, refusals and
// a failing tool, mediancheck diagnostics prints the report and says each.
func TestDiagnosticsReadsARunningExample(t *testing.T) {
	url := startExample(t, 3*time.Minute, retiredKey)
	now := time.Now()
	require.Equal(t, http.StatusUnauthorized, send(t, url, exampleKey, now.Add(-10*time.Minute), `{"op":"diagnostics"}`))
	require.Equal(t, http.StatusUnauthorized, send(t, url, "mediancheck-unknown-key-0123456789-abcdefghijklmno", now, `{"op":"diagnostics"}`))
	missing := fmt.Sprintf(`{"tool":%q,"toolCallId":"call_diag_1","input":{"orderId":%q},"context":{"conversationId":"conv_1","risk":"low","visitor":{"verified":true,"externalId":"user_7"}}}`,
		catalog.LookupOrderTool, catalog.MissingOrderID)
	require.Equal(t, http.StatusOK, send(t, url, exampleKey, now, missing))

	code, out, errOut := diagnose(url)
	require.Equal(t, exitFailed, code, "problems found: exit 1\n%s%s", out, errOut)
	assert.Contains(t, out, "HTTP 200 application/json")
	assert.Contains(t, out, `"service": {`, "the report is printed")
	assert.Contains(t, out, `"cancelledLimit"`, "with the example's own app entry")
	assert.Regexp(t, `!!  your server's clock is (3 min|2 min 5\d s|3 min \d s) ahead of this machine's: check NTP on the server`, out)
	retired, _ := protocol.ParseKey(retiredKey)
	assert.Contains(t, out, "!!  key 2 of 2 ("+retired.Fingerprint()+") has verified no request since the server started")
	current, _ := protocol.ParseKey(exampleKey)
	assert.Contains(t, out, "ok  key 1 of 2 ("+current.Fingerprint()+"), the one in $MEDIAN_KEY, verified 2 requests")
	assert.Contains(t, out, "!!  1 request(s) refused stale_timestamp")
	assert.Contains(t, out, "the furthest t was 13 min")
	assert.Contains(t, out, "!!  1 request(s) refused invalid_signature")
	assert.Contains(t, out, "!!  tool "+catalog.LookupOrderTool+": 1 of 1 call(s) failed (1 execution_failed, 0 invalid_input); the last")
	assert.Contains(t, out, "ok  the replay store (memory) answers in 0 ms")
	assert.NotContains(t, out, exampleKey)
}

// TestDiagnosticsOfAHealthyExample: nothing to report, exit 0.
func TestDiagnosticsOfAHealthyExample(t *testing.T) {
	code, out, errOut := diagnose(startExample(t, 0, ""))
	require.Equal(t, exitOK, code, "%s%s", out, errOut)
	assert.Contains(t, out, "ok  clocks agree")
	assert.Contains(t, out, "has not been fetched by a signed GET since the server started")
	assert.Contains(t, out, "nothing wrong found")
	assert.NotContains(t, out, "!!")
}

// TestDiagnosticsOfAClockTooFarOff: a server 6 min ahead refuses the
// request itself; its Date header still tells how far off it is.
func TestDiagnosticsOfAClockTooFarOff(t *testing.T) {
	url := startExample(t, 6*time.Minute, "")
	code, out, _ := diagnose(url)
	require.Equal(t, exitFailed, code, out)
	assert.Contains(t, out, "HTTP 401")
	assert.Contains(t, out, "refused the request as stale_timestamp")
	assert.Regexp(t, `your server's clock is (6 min|5 min 5\d s|6 min \d s) ahead of this machine's: check NTP on the server`, out)
}

// TestReadReport: the reading of reports a running example does not give.
func TestReadReport(t *testing.T) {
	var r wirereport.Report
	r.Service.Now = "2026-12-01T13:40:00Z"
	no := false
	r.Store.Kind, r.Store.Reachable, r.Store.ClaimFailures, r.Store.EvictedEarly = "redis", &no, 4, 2
	r.Keys = append(r.Keys, struct {
		Fingerprint  string
		Verified     int64
		LastVerified string
	}{"mk_0d9e41aa03c2", 40, "2026-11-28T09:00:00Z"})
	skew := int64(-90_000)
	r.Clock.SkewMs = &skew
	r.KeyRead = &struct{ Source, Code, At string }{"MEDIAN_KEY_FILE", "invalid_median_key", "2026-12-01T13:39:58Z"}
	r.Tools = map[string]struct {
		Calls, Results, Refusals, Failed, InvalidInput, OffContract, P50Ms, P99Ms int64
		LastFailure                                                               *struct{ At, Code, Message string }
	}{"refund": {Calls: 5, Results: 2, OffContract: 3}}
	text := ""
	for _, f := range readReport(r, "mk_5a5c87525bb5", "MEDIAN_KEY") {
		text += fmt.Sprintln(f.problem, f.text)
	}
	assert.Contains(t, text, "true the replay store (redis) is unreachable: tool calls are answered execution_failed without running")
	assert.Contains(t, text, "true 4 call(s) were not run because the store could not record them")
	assert.Contains(t, text, "true 2 answer(s) were dropped before their time")
	assert.Contains(t, text, "true key 1 of 1 (mk_0d9e41aa03c2) last verified a request 76h40m0s ago: Median seems to have stopped using it")
	assert.Contains(t, text, "true the key in $MEDIAN_KEY (mk_5a5c87525bb5) is not among the keys in force")
	assert.Contains(t, text, "true your server's clock is 1 min 30 s behind this machine's")
	assert.Contains(t, text, "true tool refund: 3 of 5 call(s) were answered by the server's own handlers with a response they wrote themselves (offContract)")
	assert.NotContains(t, text, "tool refund: 5 call(s), none failed", "a tool with off-contract answers is not also reported as fine")
	assert.Contains(t, text, "true the newest read of MEDIAN_KEY_FILE, at 2026-12-01T13:39:58Z, gave no usable key (invalid_median_key)")

	r.Store.Kind, r.Store.Problem = "postgres", "connection pool exhausted: no connection was free within 500ms, all 2 of the pool's 2 (MaxConns) were in use"
	text = ""
	for _, f := range readReport(r, "mk_5a5c87525bb5", "MEDIAN_KEY") {
		text += fmt.Sprintln(f.problem, f.text)
	}
	assert.Contains(t, text, "true the replay store (postgres) did not answer its probe: connection pool exhausted: no connection was free within 500ms, all 2 of the pool's 2 (MaxConns) were in use; tool calls are answered execution_failed", "the store's own word for its problem")
	assert.NotContains(t, text, "answers in")

	off := readAnswer(200, "", time.Now(), []byte(`{"error":{"code":"diagnostics_unsupported","message":"off"}}`), "mk_x", "MEDIAN_KEY")
	require.Len(t, off, 1)
	assert.False(t, off[0].problem)
	assert.Contains(t, off[0].text, "turned the diagnostics report off")
	own := readAnswer(200, "", time.Now(), []byte(`{"result":{"db":"ok"}}`), "mk_x", "MEDIAN_KEY")
	assert.Contains(t, own[0].text, "a report of its own")
	wrong := readAnswer(401, "", time.Now(), []byte(`{"error":{"code":"invalid_signature","message":"no"}}`), "mk_x", "MEDIAN_KEY")
	assert.True(t, wrong[0].problem)
	assert.Contains(t, wrong[0].text, "does not hold the key in $MEDIAN_KEY (mk_x)")
}
