package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/median-go/median/conformance/internal/answerjson"
	"github.com/median-go/median/internal/base/chars"
	"github.com/median-go/median/protocol"
)

// executionCases run the user's samples (§3, §3.1).
func executionCases() []testCase {
	return []testCase{
		c("execution/result", "§3", "each sample expecting a result answers 200 {\"result\": …} that is not a refusal and passes the sample's Check", true,
			eachSample(wantResult, "expecting a result", answersResult)),
		c("execution/refusal", "§3.1", "each sample expecting a refusal answers 200 with a refusal result: every field optional, ok/known/allowed only ever false, outcome blocked or unknown, at least one of them present", true,
			eachSample(wantRefusal, `expecting a refusal (Expect: "refusal")`, answersRefusal)),
		c("execution/failed", "§3", "each sample whose tool returns an error answers 200 execution_failed with the error's message", true,
			eachSample(wantFailure, `expecting execution_failed (Expect: "execution_failed"; usually only the library's fixtures)`, answersFailed)),
		c("execution/panic", "§3", "each sample whose tool panics answers 200 execution_failed, and the endpoint keeps answering", true,
			eachSample(wantPanic, `expecting a panic (Expect: "panic"; usually only the library's fixtures)`, answersPanicAndServes)).
			unless(noPanicSample),
	}
}

// eachSample returns a case's check: it sends each sample that may run
// and expects want, one after another, and checks each answer with
// check. The first answer that fails is the case's; when all pass, the
// last is shown. With no such sample the case is skipped, and the finding
// says how to add one (none describes it).
func eachSample(want, none string, check func(s *session, smp ToolSample, x *roundTrip) finding) func(s *session) finding {
	return func(s *session) finding {
		list, held := s.runnable(want)
		if len(list) == 0 {
			return noSample(none, held)
		}
		var last *roundTrip
		for _, smp := range list {
			x := s.post(s.sampleCall(smp, smp.input()).bytes())
			last = x
			if o := check(s, smp, x); o.status != statusPass {
				return o
			}
		}
		return pass(last)
	}
}

// answersResult checks a sample expecting a result: 200 with a result that
// is not a refusal and passes the sample's Check.
func answersResult(_ *session, smp ToolSample, x *roundTrip) finding {
	result, o := expectResult(x)
	if o.status != statusPass {
		o.message = "tool " + smp.Tool + ": " + o.message
		return o
	}
	if answerjson.IsRefusal(result) {
		if refusalReason(result) == approvalRequired {
			return fail(x, "a result that is not a refusal", "tool %s was refused by the endpoint's risk floor (approval_required): send the sample at the tool's declared risk or above (Risk) and, for reviewed and high, with ApprovedBy", smp.Tool)
		}
		return fail(x, "a result that is not a refusal", "tool %s refused: set Expect to %q on this sample, or send it with a visitor the tool accepts", smp.Tool, wantRefusal)
	}
	if smp.Check != nil {
		if err := smp.Check(result); err != nil {
			return fail(x, "a result that passes the sample's Check", "tool %s: Check: %v", smp.Tool, err)
		}
	}
	return pass(x)
}

// answersRefusal checks a sample expecting a refusal: 200 with a result of
// a refusal's shape (§3.1).
func answersRefusal(_ *session, smp ToolSample, x *roundTrip) finding {
	result, o := expectResult(x)
	if o.status != statusPass {
		o.expected = refusalShape
		o.message = "tool " + smp.Tool + ": " + o.message
		return o
	}
	if err := answerjson.CheckRefusal(result); err != nil {
		return fail(x, refusalShape, "tool %s: %v", smp.Tool, err)
	}
	return pass(x)
}

// answersFailed checks a sample whose tool returns an error: 200
// execution_failed.
func answersFailed(_ *session, smp ToolSample, x *roundTrip) finding {
	o := expectError(x, http.StatusOK, protocol.CodeExecutionFailed)
	if o.status != statusPass {
		o.message = "tool " + smp.Tool + ": " + o.message
	}
	return o
}

// answersPanicAndServes checks a sample whose tool panics: 200
// execution_failed, and a probe sent after it is still answered.
func answersPanicAndServes(s *session, smp ToolSample, x *roundTrip) finding {
	if o := expectError(x, http.StatusOK, protocol.CodeExecutionFailed); o.status != statusPass {
		o.message = "tool " + smp.Tool + " panicked: " + o.message
		return o
	}
	return expectAccepted(s.post(probe().bytes()), "the endpoint still answers after a panic")
}

// noPanicSample says why execution/panic does not apply: no sample's tool
// panics.
func noPanicSample(s *session) string {
	for _, smp := range s.t.Tools {
		if smp.expect() == wantPanic {
			return ""
		}
	}
	return "needs a tool that panics, such as the library's fixture tool \"panic\"; an app's own tools need not have one"
}

// refusalShape describes a refusal result for failure reports.
const refusalShape = `200 {"result": {"ok": false, …}}: ok/known/allowed only false, outcome "blocked" or "unknown", each optional, at least one present`

// replaySample picks the sample the replay cases send: one that counts its
// runs when there is one.
func (s *session) replaySample() (ToolSample, finding, bool) {
	if !s.t.Replay {
		return ToolSample{}, skip("the target does not declare replay protection: set Target.Replay when the endpoint keeps answers by toolCallId (the core's default)"), false
	}
	list, held := s.runnable(wantResult, wantRefusal, wantFailure)
	if len(list) == 0 {
		return ToolSample{}, noSample("to repeat (replay protection only applies to calls that run a tool)", held), false
	}
	for _, smp := range list {
		if smp.CountsRuns {
			return smp, finding{}, true
		}
	}
	return list[0], finding{}, true
}

// replayCases check replay protection and idempotency (§8: toolCallId is
// the idempotency key; §3.3: Median sends each call once).
func replayCases() []testCase {
	return []testCase{
		c("replay/identical-answer", "§8", "the same signed call sent twice gets the first answer back, byte for byte, and the tool runs once (prefers a sample marked CountsRuns)", true, func(s *session) finding {
			smp, o, ok := s.replaySample()
			if !ok {
				return o
			}
			body := s.sampleCall(smp, smp.input()).bytes()
			sig := s.sign(s.now(), body)
			first := s.send(&roundTrip{method: http.MethodPost, body: body, signature: sig})
			second := s.send(&roundTrip{method: http.MethodPost, body: body, signature: sig})
			want := fmt.Sprintf("the first answer again: %d %s", first.status, chars.Line(first.resp, 200))
			switch {
			case first.err != nil:
				return fail(first, "an answer", "the first call got no answer")
			case second.err != nil:
				return fail(second, want, "the repeated call got no answer")
			case second.status != first.status || !bytes.Equal(second.resp, first.resp):
				hint := ""
				if smp.CountsRuns {
					hint = " (the tool ran again)"
				}
				return fail(second, want, "tool %s: the repeated call got a different answer%s; a repeated toolCallId must get the stored answer", smp.Tool, hint)
			}
			return pass(second)
		}),
		c("replay/conflict", "§8", "a toolCallId reused with a different body is refused 409 invalid_body", true, func(s *session) finding {
			smp, o, ok := s.replaySample()
			if !ok {
				return o
			}
			first := s.sampleCall(smp, smp.input())
			if x := s.post(first.bytes()); x.err != nil {
				return fail(x, "an answer", "the first call got no answer")
			}
			first.setPath("context.conversationId", newID("conv_other_", 8), false)
			x := s.post(first.bytes())
			o = expectError(x, http.StatusConflict, protocol.CodeInvalidBody)
			if o.status != statusPass {
				o.message = "tool " + smp.Tool + ", same toolCallId with another conversationId: " + o.message
			}
			return o
		}),
	}
}

// concurrencyCases send many signed calls at once.
func concurrencyCases() []testCase {
	return []testCase{
		c("concurrency/parallel", "§1", "Target.Concurrency (default 16) signed calls sent at once are all answered correctly (a sample expecting a result when one may run, else unknown-tool probes)", true, parallelCallsAnswered),
	}
}

// parallelCallsAnswered is concurrency/parallel: Target.Concurrency calls
// at once of the first sample expecting a result that may run, or
// unknown-tool probes when there is none.
func parallelCallsAnswered(s *session) finding {
	list, _ := s.runnable(wantResult)
	var smp *ToolSample
	if len(list) > 0 {
		smp = &list[0]
	}
	outs := make([]finding, s.t.Concurrency)
	var wg sync.WaitGroup
	for i := range outs {
		wg.Go(func() {
			which := fmt.Sprintf("call %d of %d sent at once", i+1, len(outs))
			if smp == nil {
				outs[i] = expectAccepted(s.post(probe().bytes()), which)
				return
			}
			outs[i] = parallelSample(s, *smp, which)
		})
	}
	wg.Wait()
	for _, o := range outs {
		if o.status != statusPass {
			return o
		}
	}
	return outs[0]
}

// parallelSample sends one of parallelCallsAnswered's calls of smp; which
// names the call in a failure.
func parallelSample(s *session, smp ToolSample, which string) finding {
	x := s.post(s.sampleCall(smp, smp.input()).bytes())
	result, o := expectResult(x)
	if o.status == statusPass && smp.Check != nil {
		if err := smp.Check(result); err != nil {
			o = fail(x, "a result that passes the sample's Check", "tool %s: Check: %v", smp.Tool, err)
		}
	}
	if o.status != statusPass {
		o.message = fmt.Sprintf("%s, tool %s: %s", which, smp.Tool, o.message)
	}
	return o
}

// decodeObject decodes raw into a map, or returns nil.
func decodeObject(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}
