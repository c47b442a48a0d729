package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/median-go/median/internal/chars"
	"github.com/median-go/median/internal/wire"
)

// call is the body of a ToolCall, as a generic tree so cases can remove or
// retype any field.
type call map[string]any

// probeTool is the tool the suite names when it wants a request that passes
// every check up to the tool lookup: no endpoint registers it, so a correct
// endpoint answers 404 unknown_tool without running anything.
const probeTool = "mediancheck_no_such_tool"

// newCall returns the body of a call of tool with input, sent with
// toolCallID (a fresh id when empty) in p's context. wire.CallBody builds
// it, the one builder of a call (mediancheck call's and the inspector's
// too, with the same defaults); newCall returns it as a tree, its input as
// given. input is valid JSON: Target.validate or the case made sure.
func newCall(tool, toolCallID string, input json.RawMessage, p wire.Persona) call {
	if toolCallID == "" {
		toolCallID = wire.NewID()
	}
	body, err := wire.CallBody(tool, toolCallID, input, p)
	if err != nil {
		panic("conformance: building a call of " + tool + ": " + err.Error())
	}
	var c call
	if err := json.Unmarshal(body, &c); err != nil {
		panic("conformance: reading a call back: " + err.Error())
	}
	c["input"] = input // as given: its key order and numbers kept
	return c
}

// probe returns a valid ToolCall for probeTool, at risk low for an
// anonymous visitor.
func probe() call { return newCall(probeTool, "", json.RawMessage(`{}`), persona(Visitor{}, "low")) }

// persona is the context of a call sent for v at risk.
func persona(v Visitor, risk string) wire.Persona {
	return wire.Persona{Risk: risk, Verified: v.Verified, ExternalID: v.ExternalID, Email: v.Email, Name: v.Name}
}

// bytes encodes the call.
func (c call) bytes() []byte {
	b, err := json.Marshal(c)
	if err != nil {
		panic("conformance: encoding a call: " + err.Error())
	}
	return b
}

// sampleCall returns the ToolCall body for smp with input, as Median sends
// it once approved: the risk is the sample's or the tool's declared risk,
// approvedBy the sample's or "A teammate" when that risk needs approval
// (none when the sample is Unapproved). CallTool and every case that runs a
// sample build their calls here.
func (s *session) sampleCall(smp ToolSample, input json.RawMessage) call {
	p := persona(smp.Visitor, smp.Risk)
	p.ApprovedBy, p.Unapproved, p.ConversationID = smp.ApprovedBy, smp.Unapproved, smp.ConversationID
	if p.Risk == "" {
		p.Risk = s.declaredRisk(smp.Tool)
	}
	p = p.Approve(p.Risk) // the same approval rule as mediancheck call and the inspector
	return newCall(smp.Tool, smp.ToolCallID, input, p)
}

// encodeInput returns input as JSON: raw bytes as they are (empty ones as
// {}), nil as {}, any other value encoded with encoding/json.
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
