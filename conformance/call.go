package conformance

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/median-go/median/internal/chars"
	"github.com/median-go/median/internal/wire"
)

// call is the body of a ToolCall, built as a generic tree so cases can
// remove or retype any field.
type call map[string]any

// probeTool is the tool the suite names when it wants a request that passes
// every check up to the tool lookup: no endpoint registers it, so a correct
// endpoint answers 404 unknown_tool without running anything.
const probeTool = "mediancheck_no_such_tool"

// newCall returns a valid ToolCall body for tool with input, sent with
// toolCallID (a fresh id when empty) at risk low for an anonymous visitor.
func newCall(tool, toolCallID string, input json.RawMessage) call {
	if toolCallID == "" {
		toolCallID = newID("call_", 16)
	}
	return call{
		"tool":       tool,
		"toolCallId": toolCallID,
		"input":      input,
		"context": map[string]any{
			"conversationId": conversationFor(toolCallID),
			"risk":           "low",
			"visitor":        visitorJSON(Visitor{}),
		},
	}
}

// conversationFor returns the conversationId a call with toolCallID is
// sent in when none is given. It depends only on the id, so a call sent
// again with the same toolCallId has the same body, as Median's repeat has.
func conversationFor(toolCallID string) string {
	sum := sha256.Sum256([]byte(toolCallID))
	return "conv_" + hex.EncodeToString(sum[:8])
}

// probe returns a valid ToolCall for probeTool.
func probe() call { return newCall(probeTool, "", json.RawMessage(`{}`)) }

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
	c := newCall(smp.Tool, smp.ToolCallID, input)
	ctx := c["context"].(map[string]any)
	p := wire.Persona{Risk: smp.Risk, ApprovedBy: smp.ApprovedBy, Unapproved: smp.Unapproved}
	if p.Risk == "" {
		p.Risk = s.declaredRisk(smp.Tool)
	}
	p = p.Approve(p.Risk) // the same approval rule as mediancheck call and the inspector
	ctx["risk"] = p.Risk
	if smp.ConversationID != "" {
		ctx["conversationId"] = smp.ConversationID
	}
	if p.ApprovedBy != "" {
		ctx["approvedBy"] = p.ApprovedBy
	}
	ctx["visitor"] = visitorJSON(smp.Visitor)
	return c
}

// visitorJSON returns v as a call sends it: externalId only when verified.
func visitorJSON(v Visitor) map[string]any {
	m := map[string]any{"verified": v.Verified}
	if v.Verified && v.ExternalID != "" {
		m["externalId"] = v.ExternalID
	}
	if v.Email != "" {
		m["email"] = v.Email
	}
	if v.Name != "" {
		m["name"] = v.Name
	}
	return m
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
