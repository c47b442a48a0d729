package conformance_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/conformance"
)

func TestCasesHaveStableUniqueIDs(t *testing.T) {
	idPattern := regexp.MustCompile(`^[a-z]+/[a-zA-Z0-9.-]+$`)
	seen := map[string]bool{}
	for _, c := range conformance.Cases() {
		assert.Regexp(t, idPattern, c.ID)
		assert.False(t, seen[c.ID], "duplicate id %s", c.ID)
		seen[c.ID] = true
		assert.True(t, strings.HasPrefix(c.ID, c.Group+"/"), c.ID)
		assert.Regexp(t, `^§\d`, c.Section, c.ID)
		assert.NotEmpty(t, c.Title, c.ID)
	}
	for _, id := range []string{"signature/missing", "timestamp/future", "body/oversized", "routing/unknown-tool", "replay/identical-answer", "key/missing"} {
		assert.True(t, seen[id], "case %s exists", id)
	}
}

func TestCheckSelectsAndValidates(t *testing.T) {
	target := fixtureTarget(t, mux(newHandler(t, testKey, nil)))
	rep, err := conformance.Check(t.Context(), target, conformance.Options{Run: "^signature/(missing|empty)$"})
	require.NoError(t, err)
	require.Len(t, rep.Results, 2)
	assert.Equal(t, "signature/missing", rep.Results[0].ID)
	assert.True(t, rep.Passed())

	skipping := target
	skipping.Skip = []string{"signature/empty"}
	rep, err = conformance.Check(t.Context(), skipping, conformance.Options{Run: "^signature/(missing|empty)$"})
	require.NoError(t, err)
	assert.Equal(t, conformance.StatusPass, rep.Results[0].Status)
	assert.Equal(t, conformance.StatusSkip, rep.Results[1].Status)
	assert.Equal(t, "excluded by Target.Skip", rep.Results[1].Message)

	_, err = conformance.Check(t.Context(), target, conformance.Options{Run: "("})
	assert.ErrorContains(t, err, "Options.Run")

	for name, edit := range map[string]func(*conformance.Target){
		"Target.Do is nil":                             func(tg *conformance.Target) { tg.Do = nil },
		"Target.URL is empty":                          func(tg *conformance.Target) { tg.URL = "" },
		"Target.Key is empty":                          func(tg *conformance.Target) { tg.Key = " " },
		`Target.Skip: no case has id "signature/gone"`: func(tg *conformance.Target) { tg.Skip = []string{"signature/missing", "signature/gone"} },
	} {
		bad := target
		edit(&bad)
		_, err := conformance.Check(t.Context(), bad, conformance.Options{})
		assert.ErrorContains(t, err, name)
	}
}

func TestCasesWithoutSamplesAreSkippedWithHowTo(t *testing.T) {
	target := conformance.HandlerTarget(mux(newHandler(t, testKey, nil)), mountPath, testKey)
	rep, err := conformance.Check(t.Context(), target, conformance.Options{})
	require.NoError(t, err)
	assert.True(t, rep.Passed(), "%v", rep.Err())
	for _, id := range []string{"execution/result", "execution/refusal", "input/invalid", "replay/identical-answer", "manifest/lists-sample-tools"} {
		res, _ := rep.Result(id)
		assert.Equal(t, conformance.StatusSkip, res.Status, id)
		assert.Contains(t, res.Message, "Target.Tools", id)
	}
	res, _ := rep.Result("key/missing")
	assert.Equal(t, conformance.StatusSkip, res.Status)
	assert.Contains(t, res.Message, "Target.BuildWithKey")
	res, _ = rep.Result("concurrency/parallel")
	assert.Equal(t, conformance.StatusPass, res.Status, "runs with probes when no sample may run")
}

func TestSideEffectsRunOnlyWhenAllowed(t *testing.T) {
	var runs int
	counting := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			var b bytes.Buffer
			_, _ = b.ReadFrom(r.Body)
			if strings.Contains(b.String(), `"tool":"counter"`) {
				runs++
			}
			r.Body = readCloser{&b}
		}
		mux(newHandler(t, testKey, nil)).ServeHTTP(w, r)
	})
	target := conformance.HandlerTarget(counting, mountPath, testKey)
	target.Tools = []conformance.ToolSamples{{Tool: "counter", SideEffects: true, CountsRuns: true}}
	rep, err := conformance.Check(t.Context(), target, conformance.Options{Run: "^(execution|replay|concurrency)/"})
	require.NoError(t, err)
	assert.Zero(t, runs, "a tool with side effects never ran")
	res, _ := rep.Result("execution/result")
	assert.Equal(t, conformance.StatusSkip, res.Status)
	assert.Contains(t, res.Message, "AllowSideEffects")

	target.AllowSideEffects = true
	rep, err = conformance.Check(t.Context(), target, conformance.Options{Run: "^execution/result$"})
	require.NoError(t, err)
	assert.True(t, rep.Passed(), "%v", rep.Err())
	assert.Positive(t, runs)
}

type readCloser struct{ *bytes.Buffer }

func (readCloser) Close() error { return nil }

func TestSampleCheckAndExpectations(t *testing.T) {
	target := conformance.HandlerTarget(mux(newHandler(t, testKey, nil)), mountPath, testKey)
	target.Tools = []conformance.ToolSamples{
		{Tool: "echo", Input: json.RawMessage(`{"message":"hi"}`), Check: func(json.RawMessage) error { return errors.New("wanted a greeting in French") }},
		{Tool: "refuse"}, // refuses an unverified visitor but is not marked so
		{Tool: "echo", Expect: conformance.ExpectRefusal, Input: json.RawMessage(`{"message":"hi"}`)},
		{Tool: "echo", InvalidInputs: []json.RawMessage{json.RawMessage(`{"message":"a valid one"}`)}},
	}
	rep, err := conformance.Check(t.Context(), target, conformance.Options{Run: "^(execution|input)/"})
	require.NoError(t, err)
	res, _ := rep.Result("execution/result")
	assert.Equal(t, conformance.StatusFail, res.Status)
	assert.Contains(t, res.Message, "wanted a greeting in French")

	target.Tools = target.Tools[1:]
	rep, err = conformance.Check(t.Context(), target, conformance.Options{Run: "^(execution|input)/"})
	require.NoError(t, err)
	res, _ = rep.Result("execution/result")
	assert.Equal(t, conformance.StatusFail, res.Status)
	assert.Contains(t, res.Message, "tool refuse refused")
	res, _ = rep.Result("execution/refusal")
	assert.Equal(t, conformance.StatusFail, res.Status)
	assert.Contains(t, res.Message, "tool echo")
	res, _ = rep.Result("input/invalid")
	assert.Equal(t, conformance.StatusFail, res.Status)
	assert.Contains(t, res.Message, "the request was accepted")
}

func TestReadSamples(t *testing.T) {
	list, err := conformance.ReadSamples(strings.NewReader(`{"tools":[{"tool":"echo","input":{"message":"hi"},"visitor":{"verified":true,"externalId":"u1"},"expect":"refusal","invalidInputs":[{}],"sideEffects":true}]}`))
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "echo", list[0].Tool)
	assert.JSONEq(t, `{"message":"hi"}`, string(list[0].Input))
	assert.Equal(t, conformance.Visitor{Verified: true, ExternalID: "u1"}, list[0].Visitor)
	assert.Equal(t, conformance.ExpectRefusal, list[0].Expect)
	assert.True(t, list[0].SideEffects)

	list, err = conformance.ReadSamples(strings.NewReader(`[{"tool":"a"},{"tool":"b"}]`))
	require.NoError(t, err)
	assert.Len(t, list, 2)

	for body, want := range map[string]string{
		`{"tools":[{"input":{}}]}`:               `entry 1 has no "tool"`,
		`{"tools":[{"tool":"a","expect":"ok"}]}`: `expect "ok" is not one of`,
		`{"tools":[{"tool":"a","inptu":{}}]}`:    `unknown field "inptu"`,
		`{"tools":`:                              "tool samples",
	} {
		_, err := conformance.ReadSamples(strings.NewReader(body))
		assert.ErrorContains(t, err, want, body)
	}
}

func TestURLTargetDoesNotFollowRedirects(t *testing.T) {
	srv := httptest.NewServer(http.RedirectHandler("/elsewhere", http.StatusMovedPermanently))
	defer srv.Close()
	rep, err := conformance.Check(t.Context(), conformance.URLTarget(srv.URL+"/api/median", testKey), conformance.Options{Run: "^signature/missing$"})
	require.NoError(t, err)
	res := rep.Results[0]
	assert.Equal(t, conformance.StatusFail, res.Status)
	assert.Contains(t, res.Actual, "301")
}

func TestHandlerDoTurnsPanicsIntoErrors(t *testing.T) {
	target := conformance.HandlerTarget(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }), mountPath, testKey)
	rep, err := conformance.Check(t.Context(), target, conformance.Options{Run: "^methods/put$"})
	require.NoError(t, err)
	assert.Equal(t, conformance.StatusFail, rep.Results[0].Status)
	assert.Contains(t, rep.Results[0].Actual, "the handler panicked: boom")
}

func TestWriteJUnit(t *testing.T) {
	rep := conformance.Report{Results: []conformance.Result{
		{CaseInfo: conformance.CaseInfo{ID: "a/x", Group: "a", Section: "§1"}, Status: conformance.StatusPass},
		{CaseInfo: conformance.CaseInfo{ID: "a/y", Group: "a", Section: "§1"}, Status: conformance.StatusFail, Message: `got <403> & "more"`, Expected: "401"},
		{CaseInfo: conformance.CaseInfo{ID: "b/z", Group: "b", Section: "§2"}, Status: conformance.StatusSkip, Message: "needs a sample"},
		{CaseInfo: conformance.CaseInfo{ID: "k/n", Group: "k", Section: "§1.2"}, Status: conformance.StatusNotApplicable, Message: "deployed"},
	}}
	assert.Equal(t, "N/A k/n (§1.2): deployed", rep.Results[3].String())
	assert.Equal(t, 1, rep.Count(conformance.StatusNotApplicable))
	var buf bytes.Buffer
	require.NoError(t, rep.WriteJUnit(&buf))
	var doc struct {
		Suite struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Skipped  int `xml:"skipped,attr"`
			Props    []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Class   string `xml:"classname,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
				Skipped *struct{} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(buf.Bytes(), &doc), buf.String())
	assert.Equal(t, 3, doc.Suite.Tests, "a case that does not apply is not a testcase")
	require.Len(t, doc.Suite.Props, 1)
	assert.Equal(t, "not_applicable", doc.Suite.Props[0].Name)
	assert.Equal(t, "k/n: deployed", doc.Suite.Props[0].Value)
	assert.Equal(t, 1, doc.Suite.Failures)
	assert.Equal(t, 1, doc.Suite.Skipped)
	require.Len(t, doc.Suite.Cases, 3)
	assert.Equal(t, `got <403> & "more"`, doc.Suite.Cases[1].Failure.Message)
	assert.NotNil(t, doc.Suite.Cases[2].Skipped)
	assert.Equal(t, "b", doc.Suite.Cases[2].Class)
}

// TestOversizedCasesRetryAResetConnection checks that an answer lost to a
// TCP reset (a server that answers 413 and closes while the client is still
// writing) is tried again, and that a reset every time still fails the case.
func TestOversizedCasesRetryAResetConnection(t *testing.T) {
	for name, resets := range map[string]int{"reset once": 1, "reset always": 100} {
		t.Run(name, func(t *testing.T) {
			target := conformance.HandlerTarget(mux(newHandler(t, testKey, nil)), mountPath, testKey)
			handler := target.Do
			calls := 0
			target.Do = func(req *http.Request) (*http.Response, error) {
				calls++
				if calls <= resets {
					return nil, fmt.Errorf("write tcp 127.0.0.1:1->127.0.0.1:2: %w", syscall.ECONNRESET)
				}
				return handler(req)
			}
			rep, err := conformance.Check(t.Context(), target, conformance.Options{Run: "^body/oversized$"})
			require.NoError(t, err)
			require.Len(t, rep.Results, 1)
			if resets == 1 {
				assert.Equal(t, conformance.StatusPass, rep.Results[0].Status, rep.Results[0].Message)
				assert.Equal(t, 2, calls)
			} else {
				assert.Equal(t, conformance.StatusFail, rep.Results[0].Status)
				assert.Equal(t, 3, calls, "tried three times, then reported")
			}
		})
	}
}
