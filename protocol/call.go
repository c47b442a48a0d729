package protocol

import (
	"encoding/json"
)

// Risk is how much care Median took before calling the tool (PROTOCOL.md §2).
type Risk string

// RiskLow means the tool runs when called.
const RiskLow Risk = "low"

// RiskMedium means the tool runs when called; the agent asked for the
// customer's yes first.
const RiskMedium Risk = "medium"

// RiskReviewed means the tool runs after the customer's yes and an automated
// reviewer's (who may hand the call to a teammate).
const RiskReviewed Risk = "reviewed"

// RiskHigh means the tool runs only once a teammate approved the call.
const RiskHigh Risk = "high"

// rank orders the risk levels, low < medium < reviewed < high
// (PROTOCOL.md §9); 0 for anything else.
func (r Risk) rank() int {
	switch r {
	case RiskLow:
		return 1
	case RiskMedium:
		return 2
	case RiskReviewed:
		return 3
	case RiskHigh:
		return 4
	}
	return 0
}

// Visitor is the person the agent is talking to. Only ExternalID is
// trustworthy, and only when Verified is true: authorize on it, never on the
// unverified email or name.
type Visitor struct {
	// Verified is true when the company's page vouched for the visitor.
	Verified bool
	// UnverifiedEmail and UnverifiedName are what the page or the customer
	// said. Median did not verify them: show them, never authorize on them.
	UnverifiedEmail string
	UnverifiedName  string
	externalID      string
}

// ExternalID returns the company's own id for the visitor and true, only when
// the visitor is verified. Authorize on this and nothing else.
func (v Visitor) ExternalID() (string, bool) {
	if !v.Verified || v.externalID == "" {
		return "", false
	}
	return v.externalID, true
}

// NewVisitor builds a Visitor, for tests of your own tools. externalID is
// kept only when verified is true, as Median sends it.
func NewVisitor(verified bool, externalID, email, name string) Visitor {
	v := Visitor{Verified: verified, UnverifiedEmail: email, UnverifiedName: name}
	if verified {
		v.externalID = externalID
	}
	return v
}

// Call is a verified, decoded ToolCall: everything Median sent, with the
// input kept as the raw bytes Median signed. It is plain data: tools receive
// it inside a [ToolCall], middleware handlers read it with their adapter's
// CallFrom (or [CallFrom] on the request's context).
type Call struct {
	// Tool is the tool's name from the manifest.
	Tool string
	// ToolCallID is unique per call and is the idempotency key. Treat it as
	// opaque: its forms change.
	ToolCallID string
	// ConversationID names the conversation the call belongs to.
	ConversationID string
	// Risk is the tool's risk level as Median applied it.
	Risk Risk
	// Visitor is who the agent is talking to; see [Visitor.ExternalID].
	Visitor Visitor
	// ApprovedBy names who let the call run (a teammate, "The reviewer",
	// "A test from the CLI", "A teammate"); empty when the agent ran a low or
	// medium tool by itself.
	ApprovedBy string
	// RawInput is the "input" object exactly as signed. Numbers are never
	// rounded: decode it with [Call.BindInput] or your own decoder.
	RawInput json.RawMessage
	// Body is the whole request body exactly as signed.
	Body []byte
}

// ToolCall is what a typed tool receives: the call's context and its input
// decoded into In.
type ToolCall[In any] struct {
	*Call
	// Input is the tool's input, validated against the tool's schema and
	// decoded into In.
	Input In
}
