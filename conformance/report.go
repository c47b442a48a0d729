package conformance

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Status is the outcome of one case.
type Status string

// StatusPass: the endpoint answered as the contract says.
const StatusPass Status = "pass"

// StatusFail: the endpoint broke the contract; the result says what was
// expected and what came back.
const StatusFail Status = "fail"

// StatusSkip: the case could run against this target but lacks
// something only you can give (a tool sample, Target.BuildWithKey,
// Target.AllowSideEffects), or you excluded it with Target.Skip. Its
// message says what to supply.
const StatusSkip Status = "skip"

// StatusNotApplicable: the case cannot apply to this target, whatever
// you supply: the key cases against a deployed endpoint (Target.Deployed),
// the panic case without a tool that panics, the risk-floor cases when
// no tool is declared above low. It is neither a pass nor a skip: it is
// counted and shown apart, so a correct endpoint can reach "N passed,
// 0 failed" with nothing skipped.
const StatusNotApplicable Status = "not_applicable"

// label is the word a result line starts with.
func (s Status) label() string {
	if s == StatusNotApplicable {
		return "N/A"
	}
	return strings.ToUpper(string(s))
}

// CaseInfo describes one case of the suite.
type CaseInfo struct {
	// ID is stable and names the case everywhere: "signature/missing".
	// It starts with the group.
	ID string `json:"id"`
	// Group is the first part of ID: methods, signature, timestamp, key,
	// body, ops, routing, input, execution, risk, format, manifest, replay,
	// concurrency.
	Group string `json:"group"`
	// Section is the docs/PROTOCOL.md section the case checks, like "§1.1".
	Section string `json:"section"`
	// Title says what the case checks, in one line.
	Title string `json:"title"`
	// RunsTool is true when the case runs one of your tools.
	RunsTool bool `json:"runsTool"`
}

// Name returns the case's ID without its group ("missing" for
// "signature/missing").
func (c CaseInfo) Name() string {
	_, name, _ := strings.Cut(c.ID, "/")
	return name
}

// Result is the outcome of one case.
type Result struct {
	CaseInfo
	// Status says whether the case passed, failed, was skipped or does
	// not apply to the target.
	Status Status `json:"status"`
	// Expected and Actual describe the answer the case wanted and the one
	// that came back (status, code, headers), for a failed case.
	Expected string `json:"expected,omitempty"`
	Actual   string `json:"actual,omitempty"`
	// Message explains a failure or a skip, and what to do about it, or
	// why the case does not apply.
	Message string `json:"message,omitempty"`
	// Curl is a command that sends the request the case judged. Its
	// signature expires 5 minutes after the case ran: re-sign it with a
	// fresh timestamp to send it later.
	Curl     string        `json:"curl,omitempty"`
	Duration time.Duration `json:"durationNs"` // how long the case took
}

// String formats the result on one line ("PASS", "FAIL", "SKIP" or "N/A",
// the id, the section and the message), plus expected, actual and curl
// lines for a failure.
func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s (%s)", r.Status.label(), r.ID, r.Section)
	if r.Status == StatusPass {
		return b.String()
	}
	if r.Message != "" {
		fmt.Fprintf(&b, ": %s", r.Message)
	}
	if r.Status == StatusFail {
		if r.Expected != "" {
			fmt.Fprintf(&b, "\n    expected: %s", r.Expected)
		}
		if r.Actual != "" {
			fmt.Fprintf(&b, "\n    actual:   %s", r.Actual)
		}
		if r.Curl != "" {
			fmt.Fprintf(&b, "\n    reproduce: %s", r.Curl)
		}
	}
	return b.String()
}

// Report is what [Check] returns: one Result per selected case, in the
// order of [Cases].
type Report struct {
	// URL is the target's address.
	URL string `json:"url"`
	// Results holds one Result per case run (all, or those Options.Run
	// selects), in the order of Cases.
	Results []Result `json:"results"`
}

// Passed reports whether no case failed (skipped and not applicable cases
// do not count).
func (r Report) Passed() bool { return r.Count(StatusFail) == 0 }

// Count returns how many results have status s.
func (r Report) Count(s Status) int {
	n := 0
	for _, res := range r.Results {
		if res.Status == s {
			n++
		}
	}
	return n
}

// Result returns the result of the case with id, and false when that case
// was not run.
func (r Report) Result(id string) (Result, bool) {
	for _, res := range r.Results {
		if res.ID == id {
			return res, true
		}
	}
	return Result{}, false
}

// Err joins one error per failed case, or returns nil: the slogtest-style
// answer for callers that only want to know what failed.
func (r Report) Err() error {
	var errs []error
	for _, res := range r.Results {
		if res.Status == StatusFail {
			errs = append(errs, errors.New(res.String()))
		}
	}
	return errors.Join(errs...)
}

// WriteJUnit writes the report as JUnit XML (one testsuite named
// "mediancheck", one testcase per result, classname = group), for CI
// systems that show test reports. Cases that do not apply to the target are
// not testcases (they neither passed nor were skipped): each is a property
// of the testsuite named "not_applicable", its value the id and the reason.
func (r Report) WriteJUnit(w io.Writer) error {
	type failure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
	type skipped struct {
		Message string `xml:"message,attr"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Time      string   `xml:"time,attr"`
		Failure   *failure `xml:"failure,omitempty"`
		Skipped   *skipped `xml:"skipped,omitempty"`
	}
	type property struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	type testsuite struct {
		XMLName    xml.Name   `xml:"testsuite"`
		Name       string     `xml:"name,attr"`
		Tests      int        `xml:"tests,attr"`
		Failures   int        `xml:"failures,attr"`
		Skipped    int        `xml:"skipped,attr"`
		Time       string     `xml:"time,attr"`
		Properties []property `xml:"properties>property,omitempty"`
		Cases      []testcase `xml:"testcase"`
	}
	type testsuites struct {
		XMLName xml.Name    `xml:"testsuites"`
		Suites  []testsuite `xml:"testsuite"`
	}
	suite := testsuite{Name: "mediancheck", Tests: len(r.Results) - r.Count(StatusNotApplicable), Failures: r.Count(StatusFail), Skipped: r.Count(StatusSkip)}
	var total time.Duration
	for _, res := range r.Results {
		total += res.Duration
		if res.Status == StatusNotApplicable {
			suite.Properties = append(suite.Properties, property{Name: "not_applicable", Value: res.ID + ": " + res.Message})
			continue
		}
		tc := testcase{Name: res.ID, Classname: res.Group, Time: seconds(res.Duration)}
		switch res.Status {
		case StatusFail:
			tc.Failure = &failure{Message: res.Message, Type: res.Section, Text: res.String()}
		case StatusSkip:
			tc.Skipped = &skipped{Message: res.Message}
		}
		suite.Cases = append(suite.Cases, tc)
	}
	suite.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(testsuites{Suites: []testsuite{suite}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
