package protocol

import "encoding/json"

// Outcome says how a [Refusal] ended: blocked (the tool would not do it) or
// unknown (the tool could not tell).
type Outcome string

// The two refusal outcomes of PROTOCOL.md §3.1.
const (
	OutcomeBlocked Outcome = "blocked"
	OutcomeUnknown Outcome = "unknown"
)

// DefaultRefusalReason is the reason a [Refusal] carries when none is given.
const DefaultRefusalReason = "tool_refused"

// Refusal is a tool declining without failing (PROTOCOL.md §3.1). It is
// answered as a result, {"result": {"ok": false, ...}}, so the agent can
// explain it. A Refusal is also an error: a typed tool returns it as its
// error (return Out{}, protocol.Refuse(...)) and the core answers it as a
// result, not as execution_failed.
type Refusal struct {
	Outcome Outcome // blocked (default) or unknown
	Reason  string  // a short code; "tool_refused" when empty
	Detail  string  // one line the agent can use
}

// Refuse returns a blocked refusal with a reason code and a one-line detail
// for the agent.
func Refuse(reason, detail string) *Refusal {
	return &Refusal{Outcome: OutcomeBlocked, Reason: reason, Detail: detail}
}

// RefuseUnknown returns a refusal whose outcome is unknown: the tool could
// not find or tell what was asked (for example, no such order).
func RefuseUnknown(reason, detail string) *Refusal {
	return &Refusal{Outcome: OutcomeUnknown, Reason: reason, Detail: detail}
}

// NotSignedIn returns the refusal for a visitor who must sign in first
// (reason "not_signed_in"). Use it when [Visitor.ExternalID] reports false.
func NotSignedIn(detail string) *Refusal {
	return Refuse("not_signed_in", detail)
}

// Error returns "reason: detail", so a Refusal can travel as an error.
func (r *Refusal) Error() string {
	return r.reason() + ": " + r.Detail
}

func (r Refusal) reason() string {
	if r.Reason == "" {
		return DefaultRefusalReason
	}
	return r.Reason
}

// MarshalJSON encodes the refusal object of PROTOCOL.md §3.1: ok is always
// false, allowed is false for a blocked outcome and known is false for an
// unknown one.
//
// It has a value receiver, so a Refusal returned by value encodes the same.
func (r Refusal) MarshalJSON() ([]byte, error) {
	type wire struct {
		OK      bool    `json:"ok"`
		Known   *bool   `json:"known,omitempty"`
		Allowed *bool   `json:"allowed,omitempty"`
		Outcome Outcome `json:"outcome"`
		Reason  string  `json:"reason"`
		Detail  string  `json:"detail,omitempty"`
	}
	f := false
	w := wire{Outcome: r.Outcome, Reason: r.reason(), Detail: r.Detail}
	if w.Outcome == OutcomeUnknown {
		w.Known = &f
	} else {
		w.Outcome = OutcomeBlocked
		w.Allowed = &f
	}
	return json.Marshal(w)
}
