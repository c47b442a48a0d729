package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/examples/catalog"
	"github.com/median-go/median/internal/testonly/testsupport"
)

// example runs the catalog example app with testKey and records every
// request's body and User-Agent.
type example struct {
	URL string

	mu     sync.Mutex
	bodies [][]byte
	agents []string
}

func startRecordedExample(t *testing.T) *example {
	t.Helper()
	d, err := catalog.New(catalog.Options{Key: testKey, Logger: slog.New(slog.DiscardHandler), Warnings: io.Discard})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	e := &example{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.bodies = append(e.bodies, body)
		e.agents = append(e.agents, r.UserAgent())
		e.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		d.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	e.URL = srv.URL + "/api/median"
	return e
}

// lastCall is the last POST body the example received, decoded.
func (e *example) lastCall(t *testing.T) (raw []byte, m map[string]any) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := len(e.bodies) - 1; i >= 0; i-- {
		if len(e.bodies[i]) > 0 {
			require.NoError(t, json.Unmarshal(e.bodies[i], &m))
			return e.bodies[i], m
		}
	}
	t.Fatal("no call reached the example")
	return nil, nil
}

func TestCallShowsTheAgentsView(t *testing.T) {
	ex := startRecordedExample(t)
	code, out, errOut := runCmd("call", "-url", ex.URL, "-tool", "lookup_order", "-input", `{"orderId":"A-1001"}`, "-verified", "-external-id", "user_7")
	require.Equal(t, exitOK, code, "%s\n%s", out, errOut)
	raw, _, _ := strings.Cut(out, "what the agent gets")
	assert.Contains(t, raw, `"medianNavigateTo": "/orders/A-1001"`, "the raw answer comes first, as sent")
	_, view, _ := strings.Cut(out, "what the agent gets")
	assert.Contains(t, view, "told:      it reads the result")
	assert.Contains(t, view, "button:    a link to /orders/A-1001")
	assert.Regexp(t, `reads:     \{"orderId":"A-1001","status":"[a-z]+"\}`, view)
	assert.NotContains(t, view, "medianNavigateTo", "the hints leave what the agent reads")

	code, out, _ = runCmd("call", "-url", ex.URL, "-tool", "lookup_order", "-input", `{"orderId":"A-1001"}`)
	assert.Equal(t, exitOK, code, "a refusal is a result: %s", out)
	assert.Contains(t, out, "it reads the result (a refusal)")

	code, out, _ = runCmd("call", "-url", ex.URL, "-tool", "lookup_order", "-input", `{"orderId":""}`, "-verified", "-external-id", "user_7")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, out, "told:      fix your input")
	assert.Contains(t, out, "orderId")

	code, out, _ = runCmd("call", "-url", ex.URL, "-tool", "lookup_order", "-input", `{"orderId":"missing"}`, "-verified", "-external-id", "user_7")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, out, "told:      do not retry")

	code, out, _ = runCmd("call", "-url", ex.URL, "-tool", "no_such_tool")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, out, "the tool is not answering")
	assert.NotContains(t, out, "reads:", "the agent reads nothing of a 404")
}

// TestCallRiskDefaultsToTheDeclaredOne: without -risk the call carries the
// manifest's risk (cancel_order is high) and is approved, as CallTool
// sends it, so the risk floor does not refuse it.
func TestCallRiskDefaultsToTheDeclaredOne(t *testing.T) {
	ex := startRecordedExample(t)
	code, out, errOut := runCmd("call", "-url", ex.URL, "-tool", "cancel_order", "-input", `{"orderId":"missing"}`)
	_, m := ex.lastCall(t)
	ctx := m["context"].(map[string]any)
	assert.Equal(t, "high", ctx["risk"])
	assert.Equal(t, "A teammate", ctx["approvedBy"])
	assert.NotContains(t, out, "approval_required")
	assert.Equal(t, exitFailed, code, "an unknown order fails: %s %s", out, errOut)
	assert.Contains(t, out, "(risk high)")

	runCmd("call", "-url", ex.URL, "-tool", "cancel_order", "-input", `{"orderId":"missing"}`, "-risk", "high", "-approved-by", "")
	_, m = ex.lastCall(t)
	assert.NotContains(t, m["context"], "approvedBy", `-approved-by "" sends none`)
	runCmd("call", "-url", ex.URL, "-tool", "cancel_order", "-input", `{"orderId":"missing"}`, "-approved-by", "Grace")
	_, m = ex.lastCall(t)
	assert.Equal(t, "Grace", m["context"].(map[string]any)["approvedBy"])
}

// TestCallReplay: -id sends the identical body, and the answer is the one
// the first call got.
func TestCallReplay(t *testing.T) {
	ex := startRecordedExample(t)
	args := []string{"call", "-url", ex.URL, "-tool", "lookup_order", "-input", `{"orderId":"A-1001"}`, "-verified", "-external-id", "user_7", "-id", "test_replay_1"}
	code1, out1, _ := runCmd(args...)
	body1, _ := ex.lastCall(t)
	code2, out2, _ := runCmd(args...)
	body2, _ := ex.lastCall(t)
	assert.Equal(t, exitOK, code1)
	assert.Equal(t, exitOK, code2)
	assert.Equal(t, string(body1), string(body2), "the identical body")
	answer := func(out string) string {
		_, a, _ := strings.Cut(out, "HTTP 200 application/json")
		a, _, _ = strings.Cut(a, "what the agent gets")
		_, a, _ = strings.Cut(a, "\n")
		return a
	}
	assert.Equal(t, answer(out1), answer(out2))

	code, out, _ := runCmd("call", "-url", ex.URL, "-tool", "lookup_order", "-input", `{"orderId":"B-2002"}`, "-verified", "-external-id", "user_7", "-id", "test_replay_1")
	assert.Equal(t, exitFailed, code, "another body under the same id is refused")
	assert.Contains(t, out, "HTTP 409")
}

func TestCallSkewAndCurl(t *testing.T) {
	ex := startRecordedExample(t)
	code, out, _ := runCmd("call", "-url", ex.URL, "-tool", "lookup_order", "-input", `{"orderId":"A-1001"}`, "-skew", "6m")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, out, "HTTP 401")
	assert.Contains(t, out, `"code": "stale_timestamp"`)
	assert.Contains(t, out, "the clock shifted by 6m0s")

	code, out, _ = runCmd("call", "-url", ex.URL, "-tool", "lookup_order", "-input", `{"orderId":"A-1001"}`, "-verified", "-external-id", "user_7", "-curl")
	require.Equal(t, exitOK, code)
	line := regexp.MustCompile(`(?m)^  (curl .*)$`).FindStringSubmatch(out)
	require.NotNil(t, line, out)
	body, _ := ex.lastCall(t)
	assert.Contains(t, line[1], string(body))
	if _, err := exec.LookPath("curl"); err != nil {
		t.Log("curl is not installed: the curl line was not run")
		return
	}
	got, err := exec.Command("sh", "-c", line[1]).CombinedOutput()
	require.NoError(t, err, "%s", got)
	assert.Contains(t, string(got), "200 OK", "the curl line repeats the call, a replay")
	again, _ := ex.lastCall(t)
	assert.Equal(t, string(body), string(again))
}

func TestCallWithoutAnAnswer(t *testing.T) {
	code, _, errOut := runCmd("call", "-url", "http://127.0.0.1:1/api/median", "-tool", "lookup_order", "-risk", "low")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "no answer")
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer hang.Close()
	code, _, errOut = runCmd("call", "-url", hang.URL, "-tool", "x", "-risk", "low", "-timeout", "200ms")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "no answer within 200ms")
}

// TestDiagnosticsWithoutAnAnswer: no answer (nothing listening, or none
// within -timeout) exits 2, as call and manifest do; a bad answer exits 1.
func TestDiagnosticsWithoutAnAnswer(t *testing.T) {
	code, _, errOut := runCmd("diagnostics", "-url", "http://127.0.0.1:1/api/median")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "mediancheck diagnostics: the endpoint did not answer")
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer hang.Close()
	code, _, errOut = runCmd("diagnostics", "-url", hang.URL, "-timeout", "200ms")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "the endpoint did not answer")

	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "<html>") }))
	defer html.Close()
	code, out, _ := runCmd("diagnostics", "-url", html.URL)
	assert.Equal(t, exitFailed, code, "an answer that is not a report is a problem found: %s", out)
	assert.Contains(t, out, "the answer is not JSON")
}

func TestEveryRequestSaysMediancheck(t *testing.T) {
	ex := startRecordedExample(t)
	runCmd("call", "-url", ex.URL, "-tool", "lookup_order", "-input", `{"orderId":"A-1001"}`)
	runCmd("manifest", "-url", ex.URL)
	runCmd("diagnostics", "-url", ex.URL)
	runCmd("-url", ex.URL, "-run", "^signature/missing$")
	ex.mu.Lock()
	defer ex.mu.Unlock()
	require.GreaterOrEqual(t, len(ex.agents), 4)
	for _, ua := range ex.agents {
		assert.Regexp(t, `^mediancheck/\S+$`, ua)
	}
}

func TestManifest(t *testing.T) {
	ex := startRecordedExample(t)
	code, out, errOut := runCmd("manifest", "-url", ex.URL)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "2 tools at "+ex.URL)
	assert.Contains(t, out, "lookup_order (risk low)")
	assert.Contains(t, out, "cancel_order (risk high)")
	assert.Contains(t, out, `"orderId": {`)
	assert.Contains(t, out, `"minLength": 1`)

	for name, body := range map[string]string{"not JSON": "<html>", "no tools": `{"tools":[]}`} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, body) }))
		code, _, errOut := runCmd("manifest", "-url", srv.URL)
		srv.Close()
		assert.Equal(t, exitFailed, code, name)
		assert.Contains(t, errOut, map[string]string{"not JSON": "is not JSON", "no tools": "lists no tools"}[name])
	}
	code, _, errOut = runCmd("manifest", "-url", "http://127.0.0.1:1/x")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "mediancheck manifest:")
}

func TestInspect(t *testing.T) {
	ex := startRecordedExample(t)
	code, _, errOut := runCmd("inspect", "-url", ex.URL, "-listen", "0.0.0.0:0")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "loopback address only")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	old := interrupted
	interrupted = func() (context.Context, context.CancelFunc) { return ctx, cancel }
	defer func() { interrupted = old }()
	out := &testsupport.Buffer{}
	done := make(chan int)
	go func() { done <- run([]string{"inspect", "-url", ex.URL}, out, io.Discard, env) }()
	var page string
	require.Eventually(t, func() bool {
		page = regexp.MustCompile(`http://127\.0\.0\.1:\d+/\?token=[0-9a-f]{48}`).FindString(out.String())
		return page != ""
	}, 5*time.Second, 10*time.Millisecond)
	resp, err := http.Get(page)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, string(b), "mediancheck inspect")
	assert.NotContains(t, string(b)+out.String(), testKey)
	cancel()
	select {
	case code := <-done:
		assert.Equal(t, exitOK, code)
	case <-time.After(10 * time.Second):
		t.Fatal("inspect did not stop")
	}
}

// TestArgumentsAreFlagsOnly: every command refuses a word that is not a
// flag, naming it, with exit 2 and before it sends anything.
func TestArgumentsAreFlagsOnly(t *testing.T) {
	for _, args := range [][]string{
		{"-url", "http://127.0.0.1:1/x", "extra"},
		{"call", "-url", "http://127.0.0.1:1/x", "-tool", "t", "extra"},
		{"manifest", "-url", "http://127.0.0.1:1/x", "extra"},
		{"diagnostics", "-url", "http://127.0.0.1:1/x", "extra"},
		{"inspect", "-url", "http://127.0.0.1:1/x", "extra"},
	} {
		type result struct {
			code        int
			out, errOut string
		}
		done := make(chan result, 1)
		go func() { code, out, errOut := runCmd(args...); done <- result{code, out, errOut} }()
		var r result
		select {
		case r = <-done:
		case <-time.After(5 * time.Second): // inspect that took the argument would serve until stopped
			t.Fatalf("%v did not stop at the argument", args)
		}
		assert.Equal(t, exitUsage, r.code, "%v", args)
		assert.Contains(t, r.errOut, `unexpected argument "extra"`, "%v", args)
		assert.Empty(t, r.out, "%v", args)
	}
}
