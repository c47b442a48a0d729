package protocol

import "encoding/json"

// Refusal is a tool declining without failing (PROTOCOL.md §3.1): the agent
// is told why and can tell the customer. Return one from a tool, as its
// result or as its error, to answer
//
//	{"result": {"ok": false, "allowed": false, "outcome": "blocked", "reason": "…", "detail": "…"}}
//
// Build it with [Refuse], or as a literal when the outcome is "unknown".
// It encodes as the contract's refusal object, wherever it stands.
type Refusal struct {
	// Reason is a short code such as "not_signed_in"; "tool_refused" when
	// empty.
	Reason string
	// Detail is one line the agent can use.
	Detail string
	// Unknown answers outcome "unknown" with known:false (the thing asked
	// about is not known) instead of outcome "blocked" with allowed:false.
	Unknown bool
}

// defaultRefusalReason is the reason of a Refusal that names none.
const defaultRefusalReason = "tool_refused"

// Refuse returns a refusal with outcome "blocked": the agent may not do
// this. reason is a short code (for example "not_signed_in" or
// "approval_required"), detail one line the agent can use.
func Refuse(reason, detail string) *Refusal {
	return &Refusal{Reason: reason, Detail: detail}
}

// Error returns "<reason>: <detail>", so a Refusal can be returned as an
// error.
func (r *Refusal) Error() string { return r.reason() + ": " + r.Detail }

func (r Refusal) reason() string {
	if r.Reason == "" {
		return defaultRefusalReason
	}
	return r.Reason
}

// MarshalJSON encodes the refusal as the contract's refusal object.
func (r Refusal) MarshalJSON() ([]byte, error) { return json.Marshal(r.wire()) }

// wire is the refusal as the contract's refusal result object.
func (r Refusal) wire() any {
	type wire struct {
		OK      bool   `json:"ok"`
		Known   *bool  `json:"known,omitempty"`
		Allowed *bool  `json:"allowed,omitempty"`
		Outcome string `json:"outcome"`
		Reason  string `json:"reason"`
		Detail  string `json:"detail,omitempty"`
	}
	f := false
	w := wire{Outcome: "blocked", Allowed: &f, Reason: r.reason(), Detail: r.Detail}
	if r.Unknown {
		w.Outcome, w.Known, w.Allowed = "unknown", &f, nil
	}
	return w
}
