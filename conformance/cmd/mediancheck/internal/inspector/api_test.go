package inspector

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/conformance/agent"
)

var verified = map[string]any{"verified": true, "externalId": "user_7", "email": "ada@example.com"}

func TestCallShowsTheAgentsView(t *testing.T) {
	p := startInspector(t, startCatalog(t).URL, 0)
	var tools struct {
		Tools []toolView `json:"tools"`
	}
	if st := p.api(t, "/api/tools", nil, &tools); st != 200 || len(tools.Tools) != 2 {
		t.Fatalf("status %d, tools %+v", st, tools)
	}
	for _, tv := range tools.Tools {
		if tv.FormProblem != "" {
			t.Errorf("%s: %s", tv.Name, tv.FormProblem)
		}
	}

	var e entry
	p.api(t, "/api/call", map[string]any{"tool": "lookup_order", "input": `{"orderId":"A-1001"}`, "persona": verified}, &e)
	if e.Status != 200 || e.View == nil || e.View.Told != agent.ToldResult || e.View.Button != "/orders/A-1001" {
		t.Fatalf("entry %+v view %+v", e, e.View)
	}
	if strings.Contains(e.View.Text, "medianNavigateTo") || !strings.Contains(e.View.Text, `"orderId":"A-1001"`) {
		t.Errorf("text %s", e.View.Text)
	}
	if e.Persona.Risk != "low" || !strings.Contains(e.Curl, "median-signature: t=") || !strings.Contains(e.Request.Body, e.ToolCallID) {
		t.Errorf("persona %+v curl %s", e.Persona, e.Curl)
	}
	if ua := e.Request.Headers.Get("User-Agent"); !strings.HasPrefix(ua, "mediancheck/") {
		t.Errorf("User-Agent %q", ua)
	}

	// The declared risk is the default: cancel_order is high, sent with
	// its risk and approvedBy given, and it runs.
	var c entry
	p.api(t, "/api/call", map[string]any{"tool": "cancel_order", "input": `{"orderId":"C-3003"}`, "persona": map[string]any{"approvedBy": "Grace"}}, &c)
	if c.Persona.Risk != "high" || c.View.Told != agent.ToldResult || c.View.Refusal {
		t.Errorf("cancel_order: persona %+v view %+v", c.Persona, c.View)
	}
	c = entry{}
	p.api(t, "/api/call", map[string]any{"tool": "cancel_order", "input": `{"orderId":"C-3003"}`}, &c)
	if c.Persona.ApprovedBy != "A teammate" || c.View.Refusal {
		t.Errorf("cancel_order without approvedBy: persona %+v view %+v", c.Persona, c.View)
	}
	c = entry{}
	p.api(t, "/api/call", map[string]any{"tool": "cancel_order", "input": `{"orderId":"C-3003"}`, "persona": map[string]any{"unapproved": true}}, &c)
	if c.Persona.ApprovedBy != "" || !c.View.Refusal || !strings.Contains(c.View.Text, "approval_required") {
		t.Errorf("cancel_order unapproved: persona %+v view %+v", c.Persona, c.View)
	}

	// An input the schema refuses: problems before sending, and the agent
	// is told to fix its input.
	var v struct{ Problems []string }
	p.api(t, "/api/validate", map[string]any{"tool": "lookup_order", "input": `{"orderId":""}`}, &v)
	if len(v.Problems) == 0 || !strings.Contains(v.Problems[0], "/orderId") {
		t.Errorf("problems %q", v.Problems)
	}
	var bad entry
	p.api(t, "/api/call", map[string]any{"tool": "lookup_order", "input": `{"orderId":""}`, "persona": verified}, &bad)
	if bad.Status != 400 || bad.View.Told != agent.ToldFixInput || !strings.Contains(bad.View.Text, "orderId") {
		t.Errorf("invalid input: %d %+v", bad.Status, bad.View)
	}

	// A replay sends the identical body and gets the same answer.
	var r entry
	p.api(t, "/api/replay", map[string]any{"n": e.N}, &r)
	if r.Kind != "replay" || r.ReplayOf != e.N || r.Request.Body != e.Request.Body || r.Answer != e.Answer {
		t.Errorf("replay: %+v\nof   %+v", r, e)
	}
	if st := p.api(t, "/api/replay", map[string]any{"n": 999}, nil); st != 404 {
		t.Errorf("replay of an unknown entry: %d", st)
	}

	// The export is a samples file conformance reads, with the refused
	// input among the invalid inputs.
	req, _ := http.NewRequest("GET", p.URL+"/api/export", nil)
	req.Header.Set(tokenHeader, p.s.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	resp.Body.Close()
	samples, err := conformance.ReadSamples(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 4 || samples[0].Tool != "lookup_order" || !samples[0].Visitor.Verified || len(samples[0].InvalidInputs) != 1 {
		t.Fatalf("samples %+v", samples)
	}
	// cancel_order: run (approved by Grace), then already cancelled
	// (approved by default), then refused without approval.
	if s := samples[1]; s.Risk != "high" || s.ApprovedBy != "Grace" || s.Expect != "" {
		t.Errorf("sample 2: %+v", s)
	}
	if s := samples[2]; s.ApprovedBy != "A teammate" || s.Expect != "execution_failed" {
		t.Errorf("sample 3: %+v", s)
	}
	if s := samples[3]; !s.Unapproved || s.Expect != "refusal" {
		t.Errorf("sample 4: %+v", s)
	}

	var d entry
	p.api(t, "/api/diagnostics", map[string]any{}, &d)
	if d.Kind != "diagnostics" || d.View.Told != agent.ToldDiagnostics || d.View.Text == "" {
		t.Errorf("diagnostics %+v", d.View)
	}
	if len(d.View.Notes) == 0 || !strings.HasPrefix(d.View.Notes[0], "clock.skewMs ") || !strings.Contains(d.View.Notes[0], ": this machine's clock ") {
		t.Errorf("the diagnostics' notes say no skew in words: %q", d.View.Notes)
	}

	var hist struct{ Entries []entry }
	p.api(t, "/api/history", nil, &hist)
	if len(hist.Entries) != 7 {
		t.Errorf("%d entries", len(hist.Entries))
	}
	if st := p.api(t, "/api/call", map[string]any{"tool": "lookup_order", "input": `{"orderId":`}, nil); st != 400 {
		t.Errorf("input that is not JSON: %d", st)
	}
}

func TestCheckRunsTheSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite")
	}
	p := startInspector(t, startCatalog(t).URL, 0)
	p.api(t, "/api/tools", nil, nil)
	p.api(t, "/api/call", map[string]any{"tool": "lookup_order", "input": `{"orderId":"A-1001"}`, "persona": verified}, nil)
	var rep struct {
		Verdicts []conformance.Verdict
		Passed   int
		Failed   int
		Samples  int
	}
	if st := p.api(t, "/api/check", map[string]any{}, &rep); st != 200 {
		t.Fatalf("status %d", st)
	}
	if rep.Failed != 0 || rep.Passed < 20 || rep.Samples != 1 || len(rep.Verdicts) != len(conformance.Cases()) {
		t.Errorf("passed %d failed %d samples %d results %d", rep.Passed, rep.Failed, rep.Samples, len(rep.Verdicts))
	}
	for _, r := range rep.Verdicts {
		if r.Status == "fail" {
			t.Errorf("%s", r)
		}
	}
}

// TestBadEndpoints: a manifest that is not JSON or lists no tools, an
// endpoint that hangs, one that answers text, and one that answers 4 MiB
// each get a clear message.
func TestBadEndpoints(t *testing.T) {
	serve := func(body string, ct string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ct)
			_, _ = w.Write([]byte(body))
		})
	}
	t.Run("manifest not JSON", func(t *testing.T) {
		p := startInspector(t, startUpstream(t, serve("<html>", "text/html")).URL, 0)
		var out map[string]string
		if st := p.api(t, "/api/tools", nil, &out); st != 502 || !strings.Contains(out["error"], "not JSON") {
			t.Errorf("%d %q", st, out["error"])
		}
	})
	t.Run("no tools", func(t *testing.T) {
		p := startInspector(t, startUpstream(t, serve(`{"tools":[]}`, "application/json")).URL, 0)
		var out map[string]string
		if st := p.api(t, "/api/tools", nil, &out); st != 502 || !strings.Contains(out["error"], "lists no tools") {
			t.Errorf("%d %q", st, out["error"])
		}
	})
	t.Run("hangs", func(t *testing.T) {
		up := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body) // so the server notices the client leave
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}))
		p := startInspector(t, up.URL, 200*time.Millisecond)
		start := time.Now()
		var e entry
		p.api(t, "/api/call", map[string]any{"tool": "x", "input": "{}"}, &e)
		if e.Status != 0 || !strings.Contains(e.Error, "-timeout") || e.View != nil || time.Since(start) > 5*time.Second {
			t.Errorf("entry %+v after %s", e, time.Since(start))
		}
	})
	t.Run("not JSON", func(t *testing.T) {
		p := startInspector(t, startUpstream(t, serve("OK", "text/plain")).URL, 0)
		var e entry
		p.api(t, "/api/call", map[string]any{"tool": "x", "input": "{}"}, &e)
		if e.View.Told != agent.ToldOutside || e.Answer != "OK" || !strings.Contains(e.View.Problem, "text/plain") {
			t.Errorf("view %+v", e.View)
		}
	})
	t.Run("4 MiB", func(t *testing.T) {
		huge := `{"result":{"t":"` + strings.Repeat("é", 2<<20) + `"}}`
		p := startInspector(t, startUpstream(t, serve(huge, "application/json")).URL, 0)
		var e entry
		p.api(t, "/api/call", map[string]any{"tool": "x", "input": "{}"}, &e)
		if !e.AnswerCut || len(e.Answer) > maxShown || e.AnswerBytes != len(huge) || !e.View.Cut || len([]rune(e.View.Text)) != 4000 {
			t.Errorf("cut %v, %d bytes shown of %d, view cut %v", e.AnswerCut, len(e.Answer), e.AnswerBytes, e.View.Cut)
		}
		if !json.Valid([]byte(`"`+strings.ToValidUTF8(e.Answer, "")+`"`)) && strings.ToValidUTF8(e.Answer, "") != e.Answer {
			t.Errorf("the shown answer splits a character")
		}
	})
}

func TestFormProblem(t *testing.T) {
	cases := map[string]string{
		`{"type":"object","properties":{"id":{"type":"string","pattern":"^A"},"n":{"type":"integer","minimum":1},"ok":{"type":"boolean"},"tags":{"type":"array","items":{"type":"string"}},"addr":{"type":"object","properties":{"zip":{"type":"string"}}}}}`: "",
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}}}`:                  `"$ref"`,
		`{"type":"object","properties":{"a":{"oneOf":[{"type":"string"}]}}}`:         `"oneOf"`,
		`{"type":"object","properties":{"a":{"type":["string","null"]}}}`:            "several types",
		`{"type":"object","properties":{"a":{"type":"array"}}}`:                      `"items"`,
		`{"type":"object","properties":{"a":{"type":"array","items":{"anyOf":[]}}}}`: `"anyOf"`,
		`{"type":"object","properties":{"a":{"description":"no type"}}}`:             `"type"`,
		`{"type":"string"}`: "root",
		`not json`:          "not JSON",
		``:                  "no input schema",
		`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"null"}}}}}`: `"null"`,
	}
	for schema, want := range cases {
		got := formProblem(json.RawMessage(schema))
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q", schema, got, want)
		}
	}
}

// TestClockNotes: the report's skews in words, with the sign of §10.
func TestClockNotes(t *testing.T) {
	got := clockNotes([]byte(`{"result":{"clock":{"skewMs":-90000},"refused":{"stale_timestamp":{"count":2,"maxSkewMs":-360000}}}}`))
	want := []string{
		"clock.skewMs -90000: this machine's clock is 1 minute 30 seconds ahead of the server's",
		"refused.stale_timestamp.maxSkewMs -360000: if the furthest off in the last hour came from Median, Median's clock is 6 minutes ahead of this server's",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("notes\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if clockNotes([]byte(`{"result":{"db":"ok"}}`)) != nil {
		t.Error("a report of its own has no clock notes")
	}
}
