package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/internal/testonly/fixture"
	"github.com/median-go/median/protocol"
)

const testKey = "mk_test_0123456789abcdef0123456789abcdef"

// server starts an endpoint with the fixture tools at /api/median and
// returns its URL.
func server(t *testing.T, edit func(*protocol.Config)) string {
	t.Helper()
	cfg := protocol.Config{Keys: []string{testKey}, Tools: fixture.Tools(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if edit != nil {
		edit(&cfg)
	}
	h, err := protocol.New(cfg)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/api/median", h)
	mux.Handle("/api/median/{$}", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/api/median"
}

func env(name string) string {
	if name == "MEDIAN_KEY" || name == "OTHER_KEY" {
		return testKey
	}
	return ""
}

func runCmd(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb, env)
	return code, out.String(), errb.String()
}

func TestCheckPassesAgainstACorrectEndpoint(t *testing.T) {
	url := server(t, nil)
	code, out, errOut := runCmd("-url", url)
	assert.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, "PASS signature/missing (§1.1)")
	assert.Contains(t, out, "SKIP execution/result")
	assert.Contains(t, out, "N/A key/missing (§1.2): the endpoint is deployed")
	assert.Regexp(t, `(?m)^\d+ passed, 0 failed, \d+ skipped$`, out)
	assert.Regexp(t, `(?m)^4 not applicable to this endpoint: key/missing, key/too-short, key/not-visible-ascii, execution/panic$`, out)
}

// TestCheckCanBeAllGreen: with samples for every case that asks for one, a
// correct deployment reaches "N passed, 0 failed", nothing skipped; only
// the cases that cannot apply to it are counted apart.
func TestCheckCanBeAllGreen(t *testing.T) {
	url := server(t, nil)
	samples := filepath.Join(t.TempDir(), "samples.json")
	require.NoError(t, os.WriteFile(samples, []byte(`{"tools":[
		{"tool":"echo","input":{"message":"hi"},"invalidInputs":[{"message":5}]},
		{"tool":"refuse","expect":"refusal"},
		{"tool":"fail","expect":"execution_failed"},
		{"tool":"counter","countsRuns":true},
		{"tool":"refund","input":{"orderId":"none"}}
	]}`), 0o600))
	code, out, errOut := runCmd("-url", url, "-samples", samples)
	assert.Equal(t, exitOK, code, "%s\n%s", out, errOut)
	want := fmt.Sprintf("%d passed, 0 failed", len(conformance.Cases())-4) // 4 not applicable
	assert.Regexp(t, "(?m)^"+want+"$", out)
	assert.NotContains(t, out, "SKIP execution")
}

func TestCheckFailsAgainstABrokenEndpoint(t *testing.T) {
	url := server(t, func(c *protocol.Config) { c.Tolerance = 100 * time.Hour })
	code, out, _ := runCmd("-url", url, "-run", "^timestamp/")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, out, "FAIL timestamp/past (§1.1)")
	assert.Contains(t, out, "expected: 401 application/json")
	assert.Contains(t, out, "reproduce: curl -sS -i -X POST '"+url+"'")
	assert.Contains(t, out, "FAILED: timestamp/past, timestamp/future")
	assert.NotContains(t, out, "signature/missing", "-run selects")
}

func TestSamplesRunTools(t *testing.T) {
	url := server(t, nil)
	dir := t.TempDir()
	samples := filepath.Join(dir, "samples.json")
	require.NoError(t, os.WriteFile(samples, []byte(`{"tools":[
		{"tool":"echo","input":{"message":"hi"},"invalidInputs":[{"message":5}]},
		{"tool":"counter","countsRuns":true,"sideEffects":true}
	]}`), 0o600))
	code, out, errOut := runCmd("-url", url, "-samples", samples, "-run", "^(execution|input|replay)/")
	assert.Equal(t, exitOK, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "PASS execution/result")
	assert.Contains(t, out, "PASS input/invalid")
	assert.Contains(t, out, "PASS replay/identical-answer")
	assert.Contains(t, out, "SKIP execution/refusal")

	code, out, _ = runCmd("-url", url, "-samples", samples, "-side-effects", "-run", "^replay/")
	assert.Equal(t, exitOK, code, out)
	assert.Contains(t, out, "PASS replay/identical-answer")
}

func TestJUnitAndJSONOutput(t *testing.T) {
	url := server(t, func(c *protocol.Config) { c.Tolerance = 100 * time.Hour })
	dir := t.TempDir()
	junit, jsonFile := filepath.Join(dir, "report.xml"), filepath.Join(dir, "report.json")
	code, _, _ := runCmd("-url", url, "-junit", junit, "-json", jsonFile)
	require.Equal(t, exitFailed, code)

	raw, err := os.ReadFile(junit)
	require.NoError(t, err)
	var suites struct {
		XMLName xml.Name `xml:"testsuites"`
		Suites  []struct {
			Tests      int `xml:"tests,attr"`
			Failures   int `xml:"failures,attr"`
			Skipped    int `xml:"skipped,attr"`
			Properties []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(raw, &suites), "well-formed JUnit XML")
	require.Len(t, suites.Suites, 1)
	s := suites.Suites[0]
	assert.Equal(t, len(conformance.Cases())-4, s.Tests, "the 4 cases that do not apply are not testcases")
	assert.Len(t, s.Properties, 4)
	assert.Equal(t, "not_applicable", s.Properties[0].Name)
	assert.Contains(t, s.Properties[0].Value, "key/missing: the endpoint is deployed")
	assert.Equal(t, 3, s.Failures)
	assert.Positive(t, s.Skipped)
	var failed []string
	for _, c := range s.Cases {
		if c.Failure != nil {
			failed = append(failed, c.Name)
			assert.Contains(t, c.Failure.Text, "expected:")
		}
	}
	// The stale request the report's case sends is accepted too, so that
	// case fails with the two timestamp cases.
	assert.Equal(t, []string{"timestamp/past", "timestamp/future", "diagnostics/checks-apart"}, failed)

	raw, err = os.ReadFile(jsonFile)
	require.NoError(t, err)
	var rep conformance.Report
	require.NoError(t, json.Unmarshal(raw, &rep))
	assert.Equal(t, url, rep.URL)
	var res conformance.Verdict
	for _, v := range rep.Verdicts {
		if v.ID == "timestamp/future" {
			res = v
		}
	}
	require.Equal(t, "timestamp/future", res.ID, "the JSON report has a verdict for timestamp/future")
	assert.Equal(t, "fail", res.Status)
	assert.Contains(t, res.Curl, "median-signature: t=")
}

func TestListAndUsage(t *testing.T) {
	code, out, _ := runCmd("-list")
	assert.Equal(t, exitOK, code)
	for _, c := range conformance.Cases() {
		assert.Contains(t, out, c.ID)
	}
	_, _, help := runCmd("-h")
	for _, sub := range []string{"call", "manifest", "diagnostics", "inspect"} {
		assert.Contains(t, help, "mediancheck "+sub+" -url URL", "the usage lists every subcommand")
	}

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no url", nil, "-url is required"},
		{"no key", []string{"-url", "http://127.0.0.1:1/x", "-key-env", "UNSET_KEY"}, "UNSET_KEY is not set"},
		{"bad run pattern", []string{"-url", "http://127.0.0.1:1/x", "-run", "("}, "Options.Run"},
		{"run selects nothing", []string{"-url", "http://127.0.0.1:1/x", "-run", "^nothing$"}, "selects no case"},
		{"skip of no case", []string{"-url", "http://127.0.0.1:1/x", "-skip", "signature/missing,nope/x"}, `Target.Skip: no case has id "nope/x"`},
		{"bad samples", []string{"-url", "http://127.0.0.1:1/x", "-samples", "/nonexistent.json"}, "nonexistent.json"},
		{"unknown flag", []string{"-frobnicate"}, "flag provided but not defined"},
		{"call without tool", []string{"call", "-url", "http://127.0.0.1:1/x"}, "-tool is required"},
		{"call with bad input", []string{"call", "-url", "http://127.0.0.1:1/x", "-tool", "echo", "-input", "[1]"}, "-input must be a JSON object"},
		{"call with bad risk", []string{"call", "-url", "http://127.0.0.1:1/x", "-tool", "echo", "-risk", "critical"}, "not one of low"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runCmd(tt.args...)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, errOut, tt.want)
			assert.NotContains(t, errOut, testKey, "the key is never printed")
		})
	}
}

func TestCall(t *testing.T) {
	var got map[string]any
	h, err := protocol.New(protocol.Config{Keys: []string{testKey}, Tools: fixture.Tools(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Observer: func(context.Context, protocol.Event) {}})
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &got)
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()

	code, out, errOut := runCmd("call", "-url", srv.URL, "-key-env", "OTHER_KEY", "-tool", "echo", "-input", `{"message":"hi"}`, "-verified", "-external-id", "user_7", "-email", "a@b.c", "-risk", "medium")
	require.Equal(t, exitOK, code, "%s\n%s", out, errOut)
	assert.Contains(t, out, "HTTP 200 application/json")
	assert.Contains(t, out, "{\n  \"result\": {\n    \"message\": \"hi\"\n  }\n}")

	id, _ := got["toolCallId"].(string)
	assert.Regexp(t, `^test_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, id)
	ctx := got["context"].(map[string]any)
	assert.Equal(t, id, ctx["conversationId"], "conversationId defaults to the toolCallId")
	assert.Equal(t, "medium", ctx["risk"])
	assert.NotContains(t, ctx, "approvedBy", "a medium-risk call is sent without approval")
	assert.Equal(t, map[string]any{"verified": true, "externalId": "user_7", "email": "a@b.c"}, ctx["visitor"])
	assert.Contains(t, out, id)

	code, out, _ = runCmd("call", "-url", srv.URL, "-tool", "fail", "-conversation", "conv_1")
	assert.Equal(t, exitFailed, code, "an error answer exits 1")
	assert.Contains(t, out, `"code": "execution_failed"`)
	assert.Equal(t, "conv_1", got["context"].(map[string]any)["conversationId"])

	code, out, _ = runCmd("call", "-url", srv.URL, "-tool", "nope")
	assert.Equal(t, exitFailed, code)
	assert.True(t, strings.Contains(out, "HTTP 404"), out)
}
