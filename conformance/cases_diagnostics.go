package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/median-go/median/internal/base/chars"
	"github.com/median-go/median/protocol"
)

// The diagnostics report (docs/PROTOCOL.md §10). Its cases need only the
// URL and the key, so they run against a deployed endpoint too. An
// endpoint whose operator turned the report off, or replaced it with an
// answer of their own, gets them as not applicable.

// reportSections are the report's keys every §10 report has ("app" and
// "omitted" are optional).
var reportSections = []string{"service", "clock", "keys", "refused", "store", "manifest", "tools"}

// maxReportChars is what Median keeps of a diagnostics answer (§3.3).
const maxReportChars = 2000

// reportWithin is how soon the report must answer (§10).
const reportWithin = time.Second

// diagnosticsBody is the body of a diagnostics request.
var diagnosticsBody = []byte(`{"op":"diagnostics"}`)

// report is the part of the §10 report the cases read.
type report struct {
	Clock struct {
		SkewMs *int64 `json:"skewMs"`
	} `json:"clock"`
	Keys []struct {
		Fingerprint  string `json:"fingerprint"`
		Verified     int64  `json:"verified"`
		LastVerified string `json:"lastVerified"`
	} `json:"keys"`
	Refused map[string]struct {
		Count     int64  `json:"count"`
		Last      string `json:"last"`
		MaxSkewMs *int64 `json:"maxSkewMs"`
	} `json:"refused"`
}

// noReport says why the target has no §10 report ("" when it has one),
// asking once per session: a report turned off answers
// diagnostics_unsupported, a replaced one has none of §10's keys.
func (s *session) noReport() string {
	s.reportOnce.Do(func() {
		x := s.post(diagnosticsBody)
		if x.err != nil {
			return // the report cases say what went wrong
		}
		a, err := x.answer()
		switch {
		case err != nil:
		case a.IsError() && a.Code == string(protocol.CodeDiagnosticsUnsupported):
			s.reportNA = "the operator turned the diagnostics report off: diagnostics answers diagnostics_unsupported"
		case !a.IsError():
			var top map[string]json.RawMessage
			if json.Unmarshal(a.Result, &top) != nil || !hasAny(top, reportSections) {
				s.reportNA = "the operator replaced the diagnostics report with an answer of their own: its result has none of the report's keys (" + strings.Join(reportSections, ", ") + ")"
			}
		}
	})
	return s.reportNA
}

func hasAny(m map[string]json.RawMessage, keys []string) bool {
	for _, k := range keys {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

// fetchReport sends a diagnostics request signed at at and checks the
// answer is a §10 report: a 200 result of at most 2,000 characters, valid
// JSON, with every required key.
func (s *session) fetchReport(at time.Time) (*roundTrip, report, finding) {
	x := s.send(&roundTrip{method: http.MethodPost, body: diagnosticsBody, signature: s.sign(at, diagnosticsBody)})
	want := "200 {\"result\": the report of docs/PROTOCOL.md §10}, at most 2,000 characters"
	raw, o := expectResult(x)
	if o.status != statusPass {
		return x, report{}, o
	}
	if n := utf8.RuneCount(x.resp); n > maxReportChars {
		return x, report{}, fail(x, want, "the answer has %d characters; Median keeps %d, so the report must fit in them (drop whole entries and say so with \"omitted\")", n, maxReportChars)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return x, report{}, fail(x, want, "the result is not a JSON object: %s", chars.Line(raw, 80))
	}
	var missing []string
	for _, k := range reportSections {
		if _, ok := top[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return x, report{}, fail(x, want, "the report lacks %s", strings.Join(missing, ", "))
	}
	var r report
	if err := json.Unmarshal(raw, &r); err != nil {
		return x, report{}, fail(x, want, "a section of the report has the wrong shape: %v", err)
	}
	if r.Clock.SkewMs == nil {
		return x, report{}, fail(x, want, "clock.skewMs is missing")
	}
	return x, r, pass(x)
}

// diagnosticsCases check §10, the diagnostics report. Every case is not
// applicable when the operator turned the report off or replaced it.
func diagnosticsCases() []testCase {
	cases := []testCase{
		c("diagnostics/report", "§10", "the report is a 200 result of at most 2,000 characters of valid JSON with service, clock, keys, refused, store, manifest and tools, answered within 1 second", false, reportAnswersInTime),
		c("diagnostics/clock-skew", "§10", "clock.skewMs is the server's clock minus the request's t: two requests signed 60 s apart differ by 60,000 ms, within a second", false, reportMeasuresSkew),
		c("diagnostics/key-fingerprint", "§1.2, §10", "keys lists the key the suite signs with by its fingerprint (mk_ and 12 hex digits of SHA-256 over the derived secret), with a verified count and lastVerified", false, reportListsTheKey),
		c("diagnostics/refusals-counted", "§10", "a stale request and one signed with another key, sent by the suite, show up in refused: their counts grow and stale_timestamp's maxSkewMs is at least the stale t's distance from the server's clock (10 minutes plus the skew the report measures)", false, reportCountsRefusals),
		c("diagnostics/private", "§10, §7", "the report holds none of the suite's inputs or visitor values, no key, secret or MAC", false, reportIsPrivate),
	}
	for i := range cases {
		cases[i] = cases[i].unless(func(s *session) string { return s.noReport() })
	}
	return cases
}

// reportAnswersInTime is diagnostics/report.
func reportAnswersInTime(s *session) finding {
	start := time.Now()
	x, _, o := s.fetchReport(s.now())
	if o.status != statusPass {
		return o
	}
	if took := time.Since(start); took > reportWithin {
		return fail(x, "an answer within 1 second", "the report took %s; it must answer within a second whatever the store does (bound the store's probe and the app's part)", took.Round(time.Millisecond))
	}
	return o
}

// reportMeasuresSkew is diagnostics/clock-skew.
func reportMeasuresSkew(s *session) finding {
	now := s.now()
	_, near, o := s.fetchReport(now.Add(-10 * time.Second))
	if o.status != statusPass {
		return o
	}
	start := time.Now()
	x, far, o := s.fetchReport(now.Add(-70 * time.Second))
	if o.status != statusPass {
		return o
	}
	// The second request left later than the first: allow for
	// the time between them, and a second either way.
	got := *far.Clock.SkewMs - *near.Clock.SkewMs
	slack := time.Second.Milliseconds() + time.Since(start).Milliseconds()
	if got < 60_000-slack || got > 60_000+slack+time.Since(now).Milliseconds() {
		return fail(x, "clock.skewMs grows by 60000 when t is 60 s earlier", "a request signed 10 s ago reported skewMs %d and one signed 70 s ago %d: a difference of %d ms; skewMs must be the server's clock minus the t of this very request (positive when t is in the past)", *near.Clock.SkewMs, *far.Clock.SkewMs, got)
	}
	if *far.Clock.SkewMs <= 0 {
		return fail(x, "a positive clock.skewMs for a t 70 s in the past", "skewMs is %d for a request signed 70 s ago: the sign is server clock minus t, so a t in the past is positive", *far.Clock.SkewMs)
	}
	return o
}

// reportListsTheKey is diagnostics/key-fingerprint.
func reportListsTheKey(s *session) finding {
	if !s.signer.ok {
		return fail(nil, "a usable Target.Key", "Target.Key is not usable, so the suite cannot compute its fingerprint")
	}
	fp := s.signer.key.Fingerprint()
	x, r, o := s.fetchReport(s.now())
	if o.status != statusPass {
		return o
	}
	var seen []string
	for _, k := range r.Keys {
		seen = append(seen, k.Fingerprint)
		if k.Fingerprint != fp {
			continue
		}
		if k.Verified < 1 || k.LastVerified == "" {
			return fail(x, fmt.Sprintf("%s with verified >= 1 and a lastVerified", fp), "the key's entry says verified %d, lastVerified %q, though this very request verified under it", k.Verified, k.LastVerified)
		}
		return o
	}
	return fail(x, "an entry for "+fp, "keys lists %v, not the fingerprint of the key the suite signs with (%s)", seen, fp)
}

// reportCountsRefusals is diagnostics/refusals-counted: it sends a stale
// request and one signed with another key between two reports.
func reportCountsRefusals(s *session) finding {
	_, before, o := s.fetchReport(s.now())
	if o.status != statusPass {
		return o
	}
	staleAt := s.now().Add(-10 * time.Minute)
	x := s.send(&roundTrip{method: http.MethodPost, body: diagnosticsBody, signature: s.sign(staleAt, diagnosticsBody)})
	if o := expectError(x, http.StatusUnauthorized, protocol.CodeStaleTimestamp); o.status != statusPass {
		return o
	}
	x = s.send(&roundTrip{method: http.MethodPost, body: diagnosticsBody, signature: signWith(wrongKey, s.now(), diagnosticsBody)})
	if o := expectError(x, http.StatusUnauthorized, protocol.CodeInvalidSignature); o.status != statusPass {
		return o
	}
	x, after, o := s.fetchReport(s.now())
	if o.status != statusPass {
		return o
	}
	for _, code := range []protocol.Code{protocol.CodeStaleTimestamp, protocol.CodeInvalidSignature} {
		was, now := before.Refused[string(code)], after.Refused[string(code)]
		if now.Count < was.Count+1 || now.Last == "" {
			return fail(x, fmt.Sprintf("refused.%s.count at least %d, with last", code, was.Count+1), "refused.%s went from count %d to %d (last %q) after the suite's refused request", code, was.Count, now.Count, now.Last)
		}
	}
	return staleSkewReported(s, x, before, after)
}

// staleSkewReported checks refused.stale_timestamp.maxSkewMs after
// reportCountsRefusals' stale request. Its t was 10 minutes before the
// suite's clock: the server's clock minus it is 10 minutes plus the skew
// the first report measured, within Target.ClockSkew.
func staleSkewReported(s *session, x *roundTrip, before, after report) finding {
	st := after.Refused[string(protocol.CodeStaleTimestamp)]
	least := (10*time.Minute - s.t.ClockSkew).Milliseconds() + *before.Clock.SkewMs
	if st.MaxSkewMs == nil || *st.MaxSkewMs < least {
		got := "absent"
		if st.MaxSkewMs != nil {
			got = fmt.Sprint(*st.MaxSkewMs)
		}
		return fail(x, fmt.Sprintf("refused.stale_timestamp.maxSkewMs >= %d", least), "maxSkewMs is %s after a request signed 10 minutes ago: it is the largest server clock minus t seen, positive for a t in the past", got)
	}
	return pass(x)
}

// reportIsPrivate is diagnostics/private: it sends a call whose input and
// visitor carry a marker (and a sample that runs a tool without side
// effects, with that visitor), then looks for them in the report.
func reportIsPrivate(s *session) finding {
	marker := newID("mcsecret", 6)
	v := Visitor{Verified: true, ExternalID: marker + "_ext", Email: marker + "@example.com", Name: marker + " Name"}
	s.post(newCall(probeTool, "", json.RawMessage(`{"note":"`+marker+`_input"}`), persona(v, "low")).bytes())
	if smp, ok := s.privateSample(); ok {
		if in, err := encodeInput(smp.Input); err == nil {
			smp.Visitor = v
			s.post(s.sampleCall(smp, in).bytes())
		}
	}
	x, _, o := s.fetchReport(s.now())
	if o.status != statusPass {
		return o
	}
	body := string(x.resp)
	for _, secret := range []string{marker, s.t.Key} {
		if secret != "" && strings.Contains(body, secret) {
			return fail(x, "a report without inputs, visitor values or keys", "the report contains %q, which the suite sent in a call's input, visitor or as the key; the report must never hold them", chars.Line([]byte(secret), 40))
		}
	}
	if s.signer.ok && carriesMAC(x, x.mac) {
		return leaked(x)
	}
	return o
}

// privateSample returns a sample the private case may send with its own
// visitor: one that runs a tool without side effects.
func (s *session) privateSample() (ToolSample, bool) {
	for _, smp := range s.t.Tools {
		if !smp.SideEffects && smp.expect() == "result" {
			return smp, true
		}
	}
	return ToolSample{}, false
}
