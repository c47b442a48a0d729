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
	run func(s *session) outcome
}

// c builds a testCase; id starts with its group.
func c(id, section, title string, runsTool bool, run func(s *session) outcome) testCase {
	group, _, _ := strings.Cut(id, "/")
	return testCase{CaseInfo{ID: id, Group: group, Section: section, Title: title, RunsTool: runsTool}, run}
}

// allCases lists every case, in the order they run and are reported.
func allCases() []testCase {
	var all []testCase
	for _, group := range [][]testCase{
		methodCases(), signatureCases(), timestampCases(), keyCases(),
		bodyCases(), opsCases(), routingCases(), inputCases(),
		executionCases(), formatCases(), manifestCases(), replayCases(),
		concurrencyCases(),
	} {
		all = append(all, group...)
	}
	return all
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

// DefaultTimeout bounds each request when Options.Timeout is zero.
const DefaultTimeout = 15 * time.Second

// Check runs the selected cases against target without the testing
// package and returns one Result per case. The error reports an incomplete
// target or an invalid Options.Run; a failing case is not an error, it is
// in the report (see [Report.Passed] and [Report.Err]).
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
		rep.Results = append(rep.Results, s.runCase(tc))
	}
	return rep, nil
}

// Run runs every case against target as a subtest of t named Group/ID
// (for example TestMedian/signature/missing), so go test -run selects them.
// A failed case reports what was expected, what came back and a curl line
// that reproduces it; a case that needs a tool sample you did not give is
// skipped with a message saying how to supply it.
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
	for _, g := range order {
		t.Run(g, func(t *testing.T) {
			for _, tc := range groups[g] {
				t.Run(tc.Name(), func(t *testing.T) {
					res := s.runCase(tc)
					switch res.Status {
					case StatusFail:
						t.Error(res.String())
					case StatusSkip:
						t.Skip(res.Message)
					}
				})
			}
		})
	}
}

func newSession(ctx context.Context, target Target, timeout time.Duration) *session {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &session{ctx: ctx, t: target.withDefaults(), timeout: timeout}
}

// runCase runs one case and turns its outcome into a Result.
func (s *session) runCase(tc testCase) Result {
	start := time.Now()
	o := tc.run(s)
	res := Result{CaseInfo: tc.CaseInfo, Status: o.status, Expected: o.expected, Actual: o.actual, Message: o.message, Duration: time.Since(start)}
	if o.x != nil {
		res.Curl = o.x.curl()
	}
	if res.Status == StatusPass {
		res.Expected, res.Actual, res.Message = "", "", ""
	}
	return res
}
