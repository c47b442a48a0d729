package conformance

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// testCase is one named case and the function that runs it.
type testCase struct {
	CaseInfo
	run func(s *session) finding
	// na, when set, says why the case cannot apply to the session's
	// target ("" when it can). It is asked before run, and must be cheap.
	na func(s *session) string
}

// c builds a testCase; id starts with its group.
func c(id, section, title string, runsTool bool, run func(s *session) finding) testCase {
	group, _, _ := strings.Cut(id, "/")
	return testCase{CaseInfo: CaseInfo{ID: id, Group: group, Section: section, Title: title, RunsTool: runsTool}, run: run}
}

// unless returns tc with na set.
func (tc testCase) unless(na func(s *session) string) testCase {
	tc.na = na
	return tc
}

// allCases lists every case, in the order they run and are reported.
func allCases() []testCase {
	var all []testCase
	for _, group := range [][]testCase{
		methodCases(), signatureCases(), timestampCases(), keyCases(),
		bodyCases(), opsCases(), routingCases(), inputCases(),
		executionCases(), riskCases(), formatCases(), manifestCases(), replayCases(),
		concurrencyCases(), diagnosticsCases(),
	} {
		all = append(all, group...)
	}
	return all
}

// caseByID returns the case with id.
func caseByID(id string) (testCase, bool) {
	for _, tc := range allCases() {
		if tc.ID == id {
			return tc, true
		}
	}
	return testCase{}, false
}

// Cases lists every case of the suite, in the order [Check] runs them.
func Cases() []CaseInfo {
	all := allCases()
	out := make([]CaseInfo, len(all))
	for i, tc := range all {
		out[i] = tc.CaseInfo
	}
	return out
}

// Options selects and paces the cases [Check] runs.
type Options struct {
	// Run, when not empty, is a regular expression: only cases whose ID
	// matches it run, like go test -run ("^signature/", "replay|manifest").
	Run string

	// Timeout bounds each request; default 15 seconds (diagnostics may
	// take up to 8).
	Timeout time.Duration
}

// defaultTimeout bounds each request when Options.Timeout is zero.
const defaultTimeout = 15 * time.Second

// Check runs the selected cases against target without the testing
// package and returns one Verdict per case. The error reports an incomplete
// target or an invalid Options.Run; a failing case is not an error, it is
// in the report (see [Report.Err]).
func Check(ctx context.Context, target Target, opts Options) (Report, error) {
	if err := target.validate(); err != nil {
		return Report{}, err
	}
	var sel *regexp.Regexp
	if opts.Run != "" {
		var err error
		if sel, err = regexp.Compile(opts.Run); err != nil {
			return Report{}, fmt.Errorf("conformance: Options.Run: %w", err)
		}
	}
	s := newSession(ctx, target, opts.Timeout)
	rep := Report{URL: target.URL}
	for _, tc := range allCases() {
		if sel != nil && !sel.MatchString(tc.ID) {
			continue
		}
		rep.Verdicts = append(rep.Verdicts, s.runCase(tc))
	}
	return rep, nil
}

// Run runs every case against target as a subtest of t named Group/ID
// (for example TestMedian/signature/missing), so go test -run selects them.
// A failed case reports, at the line of your test that called Run, what was
// expected, what came back and a curl line that reproduces it; a case that
// needs a tool sample you did not give is skipped with a message saying how
// to supply it. A case that cannot apply to the target has no subtest: the
// group logs it once (go test -v shows it), so it is neither a pass nor a
// skip.
func Run(t *testing.T, target Target) {
	t.Helper()
	if err := target.validate(); err != nil {
		t.Fatal(err)
	}
	s := newSession(t.Context(), target, 0)
	groups := map[string][]testCase{}
	var order []string
	for _, tc := range allCases() {
		if _, ok := groups[tc.Group]; !ok {
			order = append(order, tc.Group)
		}
		groups[tc.Group] = append(groups[tc.Group], tc)
	}
	// Every function between the user's test and t.Error is a helper, so
	// go test reports the line of the user's call to Run.
	for _, g := range order {
		t.Run(g, func(t *testing.T) {
			t.Helper()
			var na []string
			for _, tc := range groups[g] {
				if why := s.notApplicable(tc); why != "" {
					na = append(na, tc.ID+" ("+why+")")
					continue
				}
				t.Run(caseName(tc.ID), func(t *testing.T) {
					t.Helper()
					v := s.runCase(tc)
					switch v.Status {
					case statusFail:
						t.Error(v.String())
					case statusSkip:
						t.Skip(v.Message)
					}
				})
			}
			if len(na) > 0 {
				t.Logf("not applicable to this target: %s", strings.Join(na, "; "))
			}
		})
	}
}

func newSession(ctx context.Context, target Target, timeout time.Duration) *session {
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	return &session{ctx: ctx, t: target.withDefaults(), timeout: timeout, signer: newSigner(target.Key)}
}

// notApplicable says why tc cannot apply to the target, "" when it can.
func (s *session) notApplicable(tc testCase) string {
	if tc.na == nil || s.t.skipped(tc.ID) {
		return ""
	}
	return tc.na(s)
}

// runCase runs one case and turns its finding into a Verdict. An answer
// that carries the MAC the server computed for its request fails the case,
// whatever the case checked (docs/PROTOCOL.md §7).
func (s *session) runCase(tc testCase) Verdict {
	start := time.Now()
	var o finding
	if s.t.skipped(tc.ID) {
		o = skip("excluded by Target.Skip")
	} else if why := s.notApplicable(tc); why != "" {
		o = finding{status: statusNotApplicable, message: why}
	} else {
		s.takeLeak()
		o = tc.run(s)
		if x := s.takeLeak(); x != nil {
			o = leaked(x)
		}
	}
	v := Verdict{CaseInfo: tc.CaseInfo, Status: o.status, Expected: o.expected, Actual: o.actual, Message: o.message, Duration: time.Since(start)}
	if o.x != nil {
		v.Curl = o.x.curl()
	}
	if v.Status == statusPass {
		v.Expected, v.Actual, v.Message = "", "", ""
	}
	return v
}
