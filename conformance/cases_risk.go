package conformance

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/median-go/median/conformance/internal/answerjson"
	"github.com/median-go/median/conformance/internal/wire"
	"github.com/median-go/median/internal/base/chars"
)

// approvalRequired is the reason of the risk floor's refusal (§9).
const approvalRequired = "approval_required"

// floorShape describes the risk floor's refusal for failure reports.
const floorShape = `200 {"result": {"ok": false, "allowed": false, "outcome": "blocked", "reason": "approval_required", "detail": "…"}}`

// refusalReason returns the reason of a refusal result, "" when it has none.
func refusalReason(result json.RawMessage) string {
	var r struct {
		Reason string `json:"reason"`
	}
	_ = json.Unmarshal(result, &r)
	return r.Reason
}

// declared lists the tools of the manifest whose declared risk satisfies
// keep, sorted by name, with their risk.
func (s *session) declared(keep func(risk string) bool) (map[string]string, error) {
	m, err := s.manifestTools()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name, t := range m {
		if _, ok := riskRank(t.Risk); ok && keep(t.Risk) {
			out[name] = t.Risk
		}
	}
	return out, nil
}

func aboveLow(risk string) bool  { return risk != "low" }
func belowHigh(risk string) bool { return risk != "high" }

// noneDeclared returns an na function: the case does not apply when the
// manifest declares no tool that keep accepts. An unreadable manifest is
// not a reason: the case runs and fails on it.
func noneDeclared(keep func(risk string) bool, why string) func(s *session) string {
	return func(s *session) string {
		if tools, err := s.declared(keep); err == nil && len(tools) == 0 {
			return why
		}
		return ""
	}
}

// floorSamples returns, for each tool the manifest declares with a risk
// keep accepts, the first sample of it that may run and whose expectation
// is one of want, sorted by tool. The outcome reports what is missing when
// there is none; refused says the case's calls are refused by a correct
// endpoint, so the how-to can say a harmless sample is enough.
func (s *session) floorSamples(keep func(risk string) bool, what string, refused bool, want ...string) ([]ToolSample, map[string]string, finding, bool) {
	tools, err := s.declared(keep)
	if err != nil {
		return nil, nil, fail(nil, "the manifest, to read the tools' declared risks", "%v", err), false
	}
	list, held := s.runnable(want...)
	seen := map[string]bool{}
	var out []ToolSample
	for _, smp := range list {
		if _, ok := tools[smp.Tool]; ok && !seen[smp.Tool] {
			seen[smp.Tool] = true
			out = append(out, smp)
		}
	}
	if len(out) == 0 {
		names := slices.Sorted(maps.Keys(tools))
		o := noSample(fmt.Sprintf("for a tool declared %s (the manifest has %s)", what, strings.Join(names, ", ")), held)
		if refused {
			o.message += "; a correct endpoint refuses the floor cases' calls without running the tool: a sample whose input would be harmless should it run (an order that does not exist) needs no SideEffects"
		}
		return nil, nil, o, false
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tool < out[j].Tool })
	return out, tools, finding{}, true
}

// floorCall returns the call of sample smp at risk, with approvedBy when
// approved (the sample's, or "A teammate").
func (s *session) floorCall(smp ToolSample, risk string, approved bool) *call {
	p := s.samplePersona(smp)
	p.Risk, p.ApprovedBy = risk, ""
	if approved {
		p.ApprovedBy = cmp.Or(smp.ApprovedBy, wire.ApprovedByDefault)
	}
	return newCall(smp.Tool, smp.ToolCallID, smp.input(), p)
}

// expectFloorRefusal checks that x is the risk floor's refusal (§9).
func expectFloorRefusal(x *roundTrip, what string) finding {
	result, o := expectResult(x)
	if o.status != statusPass {
		o.expected = floorShape
		o.message = what + ": " + o.message
		return o
	}
	if !answerjson.IsRefusal(result) {
		return fail(x, floorShape, "%s: the tool ran; docs/PROTOCOL.md §9: such a call is not run", what)
	}
	m := decodeObject(result)
	var detail string
	switch {
	case string(m["reason"]) != `"`+approvalRequired+`"`:
		return fail(x, floorShape, "%s: refused with reason %s instead of %q", what, chars.Line(m["reason"], 40), approvalRequired)
	case string(m["ok"]) != "false" || string(m["allowed"]) != "false" || string(m["outcome"]) != `"blocked"`:
		return fail(x, floorShape, `%s: the refusal must carry "ok": false, "allowed": false and "outcome": "blocked"`, what)
	case json.Unmarshal(m["detail"], &detail) != nil || strings.TrimSpace(detail) == "":
		return fail(x, floorShape, "%s: the refusal's detail must be one line the agent can use", what)
	}
	return pass(x)
}

// expectNotFloorRefused checks that x was not refused by the risk floor:
// 200 with a result that is not the approval_required refusal, or 200
// execution_failed.
func expectNotFloorRefused(x *roundTrip, what string) finding {
	want := `200 {"result": …} (whatever the tool answers) or 200 execution_failed, not the approval_required refusal`
	if x.err != nil {
		return fail(x, want, "%s: the request got no answer", what)
	}
	a, err := x.answer()
	switch {
	case err != nil:
		return fail(x, want, "%s: %v", what, err)
	case x.status != http.StatusOK:
		return fail(x, want, "%s: answered status %d; check the sample's input and visitor", what, x.status)
	case !a.IsError() && answerjson.IsRefusal(a.Result) && refusalReason(a.Result) == approvalRequired:
		return fail(x, want, "%s: refused approval_required; docs/PROTOCOL.md §9: a call at or above the declared risk, approved when reviewed or high, runs", what)
	}
	return pass(x)
}

// riskCases check the risk floor of §9 with the samples of tools the
// manifest declares above low.
func riskCases() []testCase {
	return []testCase{
		c("risk/below-declared", "§9", "a call of a tool at a risk below the one its manifest entry declares (approvedBy set) is not run: 200 refusal approval_required, ok/allowed false, outcome blocked", true,
			floorProbe{keep: aboveLow, what: "above low", want: allExpectations, at: belowDeclared, approved: true,
				call: "tool %[1]s (declared %[2]s) called at %[3]s", expect: expectFloorRefusal, refused: true}.check).
			unless(noneDeclared(aboveLow, "no tool is declared above low: the risk floor has nothing to refuse")),
		c("risk/unapproved", "§9", "a call of a tool declared reviewed or high, at or above that risk but without approvedBy, is not run: 200 refusal approval_required", true,
			floorProbe{keep: wire.NeedsApproval, what: "reviewed or high", want: allExpectations, at: fromDeclared, approved: false,
				call: "tool %[1]s (declared %[2]s) called at %[3]s without approvedBy", expect: expectFloorRefusal, refused: true}.check).
			unless(noneDeclared(wire.NeedsApproval, "no tool is declared reviewed or high: no call needs approvedBy")),
		c("risk/approved-runs", "§9", "a call of a tool declared above low, at its declared risk and with approvedBy, is not refused by the risk floor", true,
			floorProbe{keep: aboveLow, what: "above low", want: runningExpectations, at: onlyDeclared, approved: true,
				call: "tool %[1]s called at its declared risk %[3]s with approvedBy", expect: expectNotFloorRefused}.check).
			unless(noneDeclared(aboveLow, "no tool is declared above low: the risk floor has nothing to let through")),
		c("risk/higher-runs", "§9", "a call of a tool at a risk above the one it declares (approvedBy set) runs: the floor is a minimum, not an exact match", true,
			floorProbe{keep: belowHigh, what: "below high", want: runningExpectations, at: aboveDeclared, approved: true,
				call: "tool %[1]s (declared %[2]s) called at %[3]s with approvedBy", expect: expectNotFloorRefused}.check).
			unless(noneDeclared(belowHigh, "every tool is declared high: no call can be above its risk")),
	}
}

// The samples a risk case may send: any expectation, or those of a tool
// that runs.
var (
	allExpectations     = []string{wantResult, wantRefusal, wantFailure, wantPanic}
	runningExpectations = []string{wantResult, wantRefusal, wantFailure}
)

// The risks a risk case calls a tool at, from the rank of its declared risk.
func belowDeclared(declared int) []string { return risks[:declared] }
func fromDeclared(declared int) []string  { return risks[declared:] }
func onlyDeclared(declared int) []string  { return risks[declared : declared+1] }
func aboveDeclared(declared int) []string { return risks[declared+1:] }

// floorProbe is one risk case: for each tool the manifest declares with a
// risk keep accepts (what, in words), the first sample that may run and
// whose expectation is one of want, called at each risk of at (with
// approvedBy when approved) and its answer checked by expect.
type floorProbe struct {
	keep     func(risk string) bool
	what     string
	want     []string
	at       func(declared int) []string
	approved bool
	// call describes a call in the finding: %[1]s is the tool, %[2]s its
	// declared risk, %[3]s the risk of the call.
	call   string
	expect func(x *roundTrip, what string) finding
	// refused says a correct endpoint refuses the calls without running
	// the tool (expect is expectFloorRefusal).
	refused bool
}

// check is the case's check. The first answer that fails is the case's;
// when all pass, the last is shown.
func (p floorProbe) check(s *session) finding {
	list, tools, o, ok := s.floorSamples(p.keep, p.what, p.refused, p.want...)
	if !ok {
		return o
	}
	var last *roundTrip
	for _, smp := range list {
		declared, _ := riskRank(tools[smp.Tool])
		for _, risk := range p.at(declared) {
			x := s.post(s.floorCall(smp, risk, p.approved).bytes())
			last = x
			if o := p.expect(x, fmt.Sprintf(p.call, smp.Tool, tools[smp.Tool], risk)); o.status != statusPass {
				return o
			}
		}
	}
	return pass(last)
}
