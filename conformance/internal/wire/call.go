package wire

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/median-go/median/internal/base/chars"
)

// Persona is who a call is sent for and how it was approved: the call's
// context (docs/PROTOCOL.md §2).
type Persona struct {
	Risk           string `json:"risk"` // "" sends the tool's declared risk
	Verified       bool   `json:"verified"`
	ExternalID     string `json:"externalId,omitempty"` // sent only when Verified
	Email          string `json:"email,omitempty"`
	Name           string `json:"name,omitempty"`
	ApprovedBy     string `json:"approvedBy,omitempty"`
	ConversationID string `json:"conversationId,omitempty"`
	Unapproved     bool   `json:"unapproved,omitempty"` // send no approvedBy, whatever the risk
}

// Approve fills in the defaults of p for a tool declared at declared: the
// declared risk when p.Risk is "", and ApprovedByDefault as approvedBy when
// that risk is reviewed or high and p names no one (unless Unapproved).
func (p Persona) Approve(declared string) Persona {
	if p.Risk == "" {
		p.Risk = declared
	}
	switch {
	case p.Unapproved:
		p.ApprovedBy = ""
	case p.ApprovedBy == "" && NeedsApproval(p.Risk):
		p.ApprovedBy = ApprovedByDefault
	}
	return p
}

// ApprovedByDefault is what Median sends as approvedBy on an approved call
// with no name on record (docs/PROTOCOL.md §2).
const ApprovedByDefault = "A teammate"

// NeedsApproval reports whether §9 requires approvedBy on a call at risk
// (reviewed or high).
func NeedsApproval(risk string) bool { return risk == "reviewed" || risk == "high" }

// NewID returns a fresh toolCallId: "call_" and 16 random bytes in hex.
func NewID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "call_" + hex.EncodeToString(b)
}

// CallBody is the body of a call of tool with toolCallId id, input and p's
// context, its fields always in the same order, on one line. input must be
// valid JSON and is sent compact but otherwise as given: the white space
// between its tokens is removed, and its bytes are kept, key order,
// numbers and escapes included. No string is HTML-escaped ("<" is sent as
// "<", not "\u003c"). It is the one builder of a call: mediancheck call,
// the inspector and conformance (CallTool, and every case that sends a
// call as Median would) all send the bytes it builds.
// p.ConversationID "" sends id as the conversationId, as Median sends its
// own test calls (docs/PROTOCOL.md §2), so the same parts always give the
// same body.
func CallBody(tool, id string, input json.RawMessage, p Persona) ([]byte, error) {
	if !json.Valid(input) {
		return nil, errors.New("the input is not valid JSON")
	}
	type visitor struct {
		Verified   bool   `json:"verified"`
		ExternalID string `json:"externalId,omitempty"`
		Email      string `json:"email,omitempty"`
		Name       string `json:"name,omitempty"`
	}
	type callContext struct {
		ConversationID string  `json:"conversationId"`
		Risk           string  `json:"risk"`
		ApprovedBy     string  `json:"approvedBy,omitempty"`
		Visitor        visitor `json:"visitor"`
	}
	type call struct {
		Tool       string          `json:"tool"`
		ToolCallID string          `json:"toolCallId"`
		Input      json.RawMessage `json:"input"`
		Context    callContext     `json:"context"`
	}
	conv := p.ConversationID
	if conv == "" {
		conv = id
	}
	v := visitor{Verified: p.Verified, Email: p.Email, Name: p.Name}
	if p.Verified {
		v.ExternalID = p.ExternalID
	}
	return Marshal(call{tool, id, input, callContext{conv, p.Risk, p.ApprovedBy, v}})
}

// Marshal returns v as JSON on one line without HTML escaping ("<" stays
// "<"), what a call's body is written with: a json.RawMessage in v is
// compacted and otherwise kept as it is.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// DiagnosticsBody is the body of a diagnostics request (§4).
var DiagnosticsBody = []byte(`{"op":"diagnostics"}`)

// Tool is one tool of the manifest (§6).
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Risk        string          `json:"risk"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// Manifest asks the endpoint for its manifest. The error says what is
// wrong when no answer came, the answer is not 200, not JSON, or lists no
// tools; the exchange is returned in every case.
func (c *Client) Manifest(ctx context.Context) ([]Tool, Exchange, error) {
	x := c.Get(ctx)
	switch {
	case x.Err != nil:
		return nil, x, fmt.Errorf("GET %s: %w", c.URL, x.Err)
	case x.Status != http.StatusOK:
		return nil, x, fmt.Errorf("GET %s: status %d: %s", c.URL, x.Status, chars.Snippet(x.Answer, 200))
	}
	var m struct {
		Tools []Tool `json:"tools"`
	}
	if err := json.Unmarshal(x.Answer, &m); err != nil {
		return nil, x, fmt.Errorf("GET %s: the manifest is not JSON of the form {\"tools\": [...]}: %w: %s", c.URL, err, chars.Snippet(x.Answer, 200))
	}
	if len(m.Tools) == 0 {
		return nil, x, fmt.Errorf("GET %s: the manifest lists no tools: %s", c.URL, chars.Snippet(x.Answer, 200))
	}
	for i, t := range m.Tools {
		if t.Name == "" {
			return nil, x, fmt.Errorf("GET %s: tool %d of the manifest has no name", c.URL, i+1)
		}
	}
	return m.Tools, x, nil
}

// DeclaredRisk is tool's risk in tools, "low" when it is not listed with
// one of the four risks.
func DeclaredRisk(tools []Tool, tool string) string {
	for _, t := range tools {
		if t.Name == tool {
			switch t.Risk {
			case "low", "medium", "reviewed", "high":
				return t.Risk
			}
		}
	}
	return "low"
}
