package conformance_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	require.Len(t, rep.Verdicts, 2)
	assert.Equal(t, "signature/missing", rep.Verdicts[0].ID)
	assert.True(t, (rep.Err() == nil))

	skipping := target
	skipping.Skip = []string{"signature/empty"}
	rep, err = conformance.Check(t.Context(), skipping, conformance.Options{Run: "^signature/(missing|empty)$"})
	require.NoError(t, err)
	assert.Equal(t, "pass", rep.Verdicts[0].Status)
	assert.Equal(t, "skip", rep.Verdicts[1].Status)
	assert.Equal(t, "excluded by Target.Skip", rep.Verdicts[1].Message)

	_, err = conformance.Check(t.Context(), target, conformance.Options{Run: "("})
	assert.ErrorContains(t, err, "Options.Run")

	for name, edit := range map[string]func(*conformance.Target){
		"Target.Do is nil":                             func(tg *conformance.Target) { tg.Do = nil },
		"Target.URL is empty":                          func(tg *conformance.Target) { tg.URL = "" },
		"Target.Key is empty":                          func(tg *conformance.Target) { tg.Key = " " },
		`Target.Skip: no case has id "signature/gone"`: func(tg *conformance.Target) { tg.Skip = []string{"signature/missing", "signature/gone"} },
		"Target.Tools[1]: echo: encoding the input": func(tg *conformance.Target) {
			tg.Tools = []conformance.ToolSample{{Tool: "echo"}, {Tool: "echo", Input: func() {}}}
		},
		"Target.Tools[0]: echo: the input is not valid JSON": func(tg *conformance.Target) {
			tg.Tools = []conformance.ToolSample{{Tool: "echo", Input: json.RawMessage(`{"message":`)}}
		},
		"Target.Tools[1]: echo: InvalidInputs[1] is not valid JSON: {\"message\":": func(tg *conformance.Target) {
			tg.Tools = []conformance.ToolSample{{Tool: "echo"}, {Tool: "echo", InvalidInputs: []json.RawMessage{json.RawMessage(`{}`), json.RawMessage(`{"message":`)}}}
		},
		"Target.Tools[0]: echo: InvalidInputs[0] is empty": func(tg *conformance.Target) {
			tg.Tools = []conformance.ToolSample{{Tool: "echo", InvalidInputs: []json.RawMessage{nil}}}
		},
		`Target.Tools[0]: echo: expect "ok" is not one of`: func(tg *conformance.Target) {
			tg.Tools = []conformance.ToolSample{{Tool: "echo", Expect: "ok"}}
		},
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
	assert.True(t, (rep.Err() == nil), "%v", rep.Err())
	for _, id := range []string{"execution/result", "execution/refusal", "input/invalid", "replay/identical-answer", "manifest/lists-sample-tools"} {
		res, _ := verdict(rep, id)
		assert.Equal(t, "skip", res.Status, id)
		assert.Contains(t, res.Message, "Target.Tools", id)
	}
	res, _ := verdict(rep, "key/missing")
	assert.Equal(t, "skip", res.Status)
	assert.Contains(t, res.Message, "Target.BuildWithKey")
	res, _ = verdict(rep, "concurrency/parallel")
	assert.Equal(t, "pass", res.Status, "runs with probes when no sample may run")
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
	target.Tools = []conformance.ToolSample{{Tool: "counter", SideEffects: true, CountsRuns: true}}
	rep, err := conformance.Check(t.Context(), target, conformance.Options{Run: "^(execution|replay|concurrency)/"})
	require.NoError(t, err)
	assert.Zero(t, runs, "a tool with side effects never ran")
	res, _ := verdict(rep, "execution/result")
	assert.Equal(t, "skip", res.Status)
	assert.Contains(t, res.Message, "AllowSideEffects")

	target.AllowSideEffects = true
	rep, err = conformance.Check(t.Context(), target, conformance.Options{Run: "^execution/result$"})
	require.NoError(t, err)
	assert.True(t, (rep.Err() == nil), "%v", rep.Err())
	assert.Positive(t, runs)
}

type readCloser struct{ *bytes.Buffer }

func (readCloser) Close() error { return nil }

func TestSampleCheckAndExpectations(t *testing.T) {
	target := conformance.HandlerTarget(mux(newHandler(t, testKey, nil)), mountPath, testKey)
	target.Tools = []conformance.ToolSample{
		{Tool: "echo", Input: json.RawMessage(`{"message":"hi"}`), Check: func(json.RawMessage) error { return errors.New("wanted a greeting in French") }},
		{Tool: "refuse"}, // refuses an unverified visitor but is not marked so
		{Tool: "echo", Expect: "refusal", Input: json.RawMessage(`{"message":"hi"}`)},
		{Tool: "echo", InvalidInputs: []json.RawMessage{json.RawMessage(`{"message":"a valid one"}`)}},
	}
	rep, err := conformance.Check(t.Context(), target, conformance.Options{Run: "^(execution|input)/"})
	require.NoError(t, err)
	res, _ := verdict(rep, "execution/result")
	assert.Equal(t, "fail", res.Status)
	assert.Contains(t, res.Message, "wanted a greeting in French")

	target.Tools = target.Tools[1:]
	rep, err = conformance.Check(t.Context(), target, conformance.Options{Run: "^(execution|input)/"})
	require.NoError(t, err)
	res, _ = verdict(rep, "execution/result")
	assert.Equal(t, "fail", res.Status)
	assert.Contains(t, res.Message, "tool refuse refused")
	res, _ = verdict(rep, "execution/refusal")
	assert.Equal(t, "fail", res.Status)
	assert.Contains(t, res.Message, "tool echo")
	res, _ = verdict(rep, "input/invalid")
	assert.Equal(t, "fail", res.Status)
	assert.Contains(t, res.Message, "got status 200 and no error, where the contract answers 400 invalid_input")
}

func TestReadSamples(t *testing.T) {
	list, err := conformance.ReadSamples(strings.NewReader(`{"tools":[{"tool":"echo","input":{"message":"hi"},"visitor":{"verified":true,"externalId":"u1"},"expect":"refusal","invalidInputs":[{}],"sideEffects":true}]}`))
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "echo", list[0].Tool)
	input, err := json.Marshal(list[0].Input)
	require.NoError(t, err)
	assert.JSONEq(t, `{"message":"hi"}`, string(input))
	assert.Equal(t, conformance.Visitor{Verified: true, ExternalID: "u1"}, list[0].Visitor)
	assert.Equal(t, "refusal", list[0].Expect)
	assert.True(t, list[0].SideEffects)

	list, err = conformance.ReadSamples(strings.NewReader(`[{"tool":"a","input":{"n":12345678901234567890}},{"tool":"b"}]`))
	require.NoError(t, err)
	assert.Len(t, list, 2)
	input, err = json.Marshal(list[0].Input)
	require.NoError(t, err)
	assert.Equal(t, `{"n":12345678901234567890}`, string(input), "an input's numbers are sent as written")

	list, err = conformance.ReadSamples(strings.NewReader(`[{"tool":"a","input":{ "z": 1.50, "a": "<b>\u00e9" }},{"tool":"b","input":null}]`))
	require.NoError(t, err)
	assert.Equal(t, json.RawMessage(`{ "z": 1.50, "a": "<b>\u00e9" }`), list[0].Input, "the input as written: key order, numbers, escapes and < kept")
	assert.Nil(t, list[1].Input, "a null input is no input ({} is sent)")

	for body, want := range map[string]string{
		`{"tools":[{"input":{}}]}`:               `entry 1: no "tool"`,
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
	res := rep.Verdicts[0]
	assert.Equal(t, "fail", res.Status)
	assert.Contains(t, res.Actual, "301")
}

func TestHandlerTargetTurnsPanicsIntoErrors(t *testing.T) {
	target := conformance.HandlerTarget(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }), mountPath, testKey)
	rep, err := conformance.Check(t.Context(), target, conformance.Options{Run: "^methods/put$"})
	require.NoError(t, err)
	assert.Equal(t, "fail", rep.Verdicts[0].Status)
	assert.Contains(t, rep.Verdicts[0].Actual, "the handler panicked: boom")
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
			require.Len(t, rep.Verdicts, 1)
			if resets == 1 {
				assert.Equal(t, "pass", rep.Verdicts[0].Status, rep.Verdicts[0].Message)
				assert.Equal(t, 2, calls)
			} else {
				assert.Equal(t, "fail", rep.Verdicts[0].Status)
				assert.Equal(t, 3, calls, "tried three times, then reported")
			}
		})
	}
}

// TestAcceptedCaseSaysWhatWentWrongOnce: a signed probe that runs as if the
// tool existed fails signature/valid with a message that does not
// contradict itself (it was not "not accepted" and "accepted" at once).
func TestAcceptedCaseSaysWhatWentWrongOnce(t *testing.T) {
	always := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"result":{}}`)
	})
	target := conformance.HandlerTarget(always, mountPath, testKey)
	rep, err := conformance.Check(t.Context(), target, conformance.Options{Run: "^signature/valid$"})
	require.NoError(t, err)
	require.Len(t, rep.Verdicts, 1)
	v := rep.Verdicts[0]
	require.Equal(t, "fail", v.Status)
	assert.Equal(t, "the call should have passed the signature checks and reached the tool lookup (404 unknown_tool); instead: got status 200 and no error, where the contract answers 404 unknown_tool", v.Message)
	assert.NotContains(t, v.Message, "accept", "the message reads one way")
}
