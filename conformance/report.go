package conformance

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The values of Verdict.Status.
const (
	statusPass          = "pass"           // the endpoint answered as the contract says
	statusFail          = "fail"           // the endpoint broke the contract
	statusSkip          = "skip"           // the case needs something only you can give
	statusNotApplicable = "not_applicable" // the case cannot apply to this target
)

// statusLabel is the word a verdict line starts with.
func statusLabel(status string) string {
	if status == statusNotApplicable {
		return "N/A"
	}
	return strings.ToUpper(status)
}

// CaseInfo describes one case of the suite.
type CaseInfo struct {
	// ID is stable and names the case everywhere: "signature/missing".
	// It starts with the group.
	ID string `json:"id"`
	// Group is the first part of ID: methods, signature, timestamp, key,
	// body, ops, routing, input, execution, risk, format, manifest, replay,
	// concurrency, diagnostics.
	Group string `json:"group"`
	// Section is the docs/PROTOCOL.md section the case checks, like "§1.1".
	Section string `json:"section"`
	// Title says what the case checks, in one line.
	Title string `json:"title"`
	// RunsTool is true when the case runs one of your tools.
	RunsTool bool `json:"runsTool"`
}

// caseName returns the case's ID without its group ("missing" for
// "signature/missing"): the name of its subtest.
func caseName(id string) string {
	_, name, _ := strings.Cut(id, "/")
	return name
}

// Verdict is how one case of the suite went against the target.
type Verdict struct {
	CaseInfo
	// Status is one of:
	//   - "pass": the endpoint answered as the contract says;
	//   - "fail": the endpoint broke the contract; Expected, Actual and
	//     Curl say what was wanted, what came back and how to send it again;
	//   - "skip": the case could run against this target but lacks
	//     something only you can give (a tool sample, Target.BuildWithKey,
	//     Target.AllowSideEffects), or Target.Skip excludes it; Message says
	//     what to supply;
	//   - "not_applicable": the case cannot apply to this target, whatever
	//     you supply (the key cases against a Deployed endpoint, the panic
	//     case without a tool that panics, the risk-floor cases when no tool
	//     is declared above low, the §10 report's cases when it is off or
	//     replaced). It is neither a pass nor a skip, so a
	//     correct endpoint can reach "N passed, 0 failed" with nothing
	//     skipped.
	Status string `json:"status"`
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

// String formats the verdict on one line ("PASS", "FAIL", "SKIP" or
// "N/A", the id, the section and the message), plus expected, actual and
// curl lines for a failure.
func (v Verdict) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s (%s)", statusLabel(v.Status), v.ID, v.Section)
	if v.Status == statusPass {
		return b.String()
	}
	if v.Message != "" {
		fmt.Fprintf(&b, ": %s", v.Message)
	}
	if v.Status == statusFail {
		if v.Expected != "" {
			fmt.Fprintf(&b, "\n    expected: %s", v.Expected)
		}
		if v.Actual != "" {
			fmt.Fprintf(&b, "\n    actual:   %s", v.Actual)
		}
		if v.Curl != "" {
			fmt.Fprintf(&b, "\n    reproduce: %s", v.Curl)
		}
	}
	return b.String()
}

// Report is what [Check] returns: one Verdict per selected case, in the
// order of [Cases].
type Report struct {
	// URL is the target's address.
	URL string `json:"url"`
	// Verdicts holds one Verdict per case run (all, or those Options.Run
	// selects), in the order of Cases.
	Verdicts []Verdict `json:"verdicts"`
}

// Err joins one error per failed case, or returns nil when no case failed
// (skipped and not applicable cases do not count): the slogtest-style
// answer for callers that only want to know what failed.
func (r Report) Err() error {
	var errs []error
	for _, v := range r.Verdicts {
		if v.Status == statusFail {
			errs = append(errs, errors.New(v.String()))
		}
	}
	return errors.Join(errs...)
}
