package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/median-go/median/conformance/internal/wire"
	"github.com/median-go/median/internal/base/chars"
)

// call is the body of a ToolCall. It is sent as wire.CallBody built it,
// byte for byte, unless a case edits it with setPath: the edited body is
// the built one decoded, changed and encoded again without HTML escaping,
// its members in name order and its input still the bytes CallBody wrote.
type call struct {
	id    string         // the toolCallId
	built []byte         // the body wire.CallBody built
	tree  map[string]any // the body as edited; nil until setPath
}

// probeTool is the tool the suite names when it wants a request that passes
// every check up to the tool lookup: no endpoint registers it, so a correct
// endpoint answers 404 unknown_tool without running anything.
const probeTool = "mediancheck_no_such_tool"

// newCall returns the call of tool with input, sent with toolCallID (a
// fresh id when empty) in p's context. wire.CallBody builds it, the one
// builder of a call (mediancheck call's and the inspector's too, with the
// same defaults): the input compact but otherwise as given, key order,
// numbers and characters kept. input is valid JSON: Target.validate (and
// Call) checked the samples' inputs, and the suite's own are constants.
func newCall(tool, toolCallID string, input json.RawMessage, p wire.Persona) *call {
	if toolCallID == "" {
		toolCallID = wire.NewID()
	}
	body, err := wire.CallBody(tool, toolCallID, input, p)
	if err != nil {
		panic("conformance: building a call of " + tool + ": " + err.Error())
	}
	return &call{id: toolCallID, built: body}
}

// probe returns a valid ToolCall for probeTool, at risk low for an
// anonymous visitor.
func probe() *call { return newCall(probeTool, "", json.RawMessage(`{}`), persona(Visitor{}, "low")) }

// persona is the context of a call sent for v at risk.
func persona(v Visitor, risk string) wire.Persona {
	return wire.Persona{Risk: risk, Verified: v.Verified, ExternalID: v.ExternalID, Email: v.Email, Name: v.Name}
}

// setPath sets (or, with remove, deletes) the dotted path in the call's
// body; each part of the path but the last names an object of the body
// other than input.
func (c *call) setPath(path string, v any, remove bool) *call {
	if c.tree == nil {
		d := json.NewDecoder(bytes.NewReader(c.built))
		d.UseNumber()
		var in struct {
			Input json.RawMessage `json:"input"`
		}
		if err := d.Decode(&c.tree); err != nil || json.Unmarshal(c.built, &in) != nil {
			panic(fmt.Sprintf("conformance: reading a call back: %v", err))
		}
		c.tree["input"] = in.Input // written back as built
	}
	parts := strings.Split(path, ".")
	m := c.tree
	for _, p := range parts[:len(parts)-1] {
		m = m[p].(map[string]any)
	}
	last := parts[len(parts)-1]
	if remove {
		delete(m, last)
	} else {
		m[last] = v
	}
	return c
}

// bytes returns the call's body: wire.CallBody's bytes as built, or the
// edited body (see call), its keys in name order and the input as built.
func (c *call) bytes() []byte {
	if c.tree == nil {
		return c.built
	}
	b, err := wire.Marshal(c.tree)
	if err != nil {
		panic("conformance: encoding a call: " + err.Error())
	}
	return b
}

// samplePersona is the context of smp's call as Median sends it once
// approved: the risk is the sample's or the tool's declared risk,
// approvedBy the sample's or "A teammate" when that risk needs approval
// (none when the sample is Unapproved).
func (s *session) samplePersona(smp ToolSample) wire.Persona {
	p := persona(smp.Visitor, smp.Risk)
	p.ApprovedBy, p.Unapproved, p.ConversationID = smp.ApprovedBy, smp.Unapproved, smp.ConversationID
	if p.Risk == "" {
		p.Risk = s.declaredRisk(smp.Tool)
	}
	return p.Approve(p.Risk) // the same approval rule as mediancheck call and the inspector
}

// sampleCall returns the call of smp with input, in smp's context
// (samplePersona). CallTool and every case that runs a sample build their
// calls here or in floorCall.
func (s *session) sampleCall(smp ToolSample, input json.RawMessage) *call {
	return newCall(smp.Tool, smp.ToolCallID, input, s.samplePersona(smp))
}

// encodeInput returns input as JSON: raw bytes as they are (empty ones as
// {}; newCall compacts them), nil as {}, any other value encoded with
// encoding/json.
func encodeInput(input any) (json.RawMessage, error) {
	var raw []byte
	switch v := input.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		raw = v
	case []byte:
		raw = v
	default:
		b, err := json.Marshal(input)
		if err != nil {
			return nil, fmt.Errorf("encoding the input: %w", err)
		}
		return b, nil
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("the input is not valid JSON: %s", chars.Line(raw, 80))
	}
	return raw, nil
}
