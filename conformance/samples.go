package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Expect is what a sample call of a tool must get back.
type Expect string

// ExpectResult (the default): 200 {"result": ...} that is not a refusal.
const ExpectResult Expect = "result"

// ExpectRefusal: 200 with a refusal result (docs/PROTOCOL.md §3.1).
const ExpectRefusal Expect = "refusal"

// ExpectFailure: 200 execution_failed with a message.
const ExpectFailure Expect = "execution_failed"

// ExpectPanic: the tool panics; the endpoint must answer 200
// execution_failed and keep serving.
const ExpectPanic Expect = "panic"

// Visitor is the visitor a sample call is sent for (docs/PROTOCOL.md §2). The
// zero value is an anonymous, unverified visitor.
type Visitor struct {
	Verified   bool   `json:"verified"`             // the page vouched for the visitor
	ExternalID string `json:"externalId,omitempty"` // sent only when Verified
	Email      string `json:"email,omitempty"`      // the visitor's email, sent as given
	Name       string `json:"name,omitempty"`       // the visitor's name, sent as given
}

// ToolSamples is one sample call of one of your tools, and inputs it must
// refuse. List a tool several times to send several samples.
type ToolSamples struct {
	// Tool is the tool's name as the manifest lists it.
	Tool string `json:"tool"`

	// Input is a valid input; "{}" when empty.
	Input json.RawMessage `json:"input,omitempty"`

	// Visitor, Risk, ApprovedBy and ConversationID are sent in the call's
	// context. Risk defaults to the tool's risk in the manifest (or "low");
	// ApprovedBy to "A teammate" when that risk is reviewed or high (what
	// Median sends on an approved call with no name on record), else none;
	// ConversationID to a fresh id. The risk-floor cases (docs/PROTOCOL.md
	// §9) send the sample at other risks, with and without ApprovedBy.
	Visitor        Visitor `json:"visitor"`
	Risk           string  `json:"risk,omitempty"`
	ApprovedBy     string  `json:"approvedBy,omitempty"`
	ConversationID string  `json:"conversationId,omitempty"`

	// Expect is what the call must get back; default ExpectResult.
	Expect Expect `json:"expect,omitempty"`

	// Check, when set, checks the result of an ExpectResult sample (the
	// JSON value inside {"result": ...}); its error fails the case.
	Check func(result json.RawMessage) error `json:"-"`

	// InvalidInputs are inputs the tool's schema must refuse with 400
	// invalid_input. They never run the tool, even with SideEffects.
	InvalidInputs []json.RawMessage `json:"invalidInputs,omitempty"`

	// SideEffects marks a tool that changes something (sends mail, refunds
	// an order): its samples run only when Target.AllowSideEffects is set.
	SideEffects bool `json:"sideEffects,omitempty"`

	// CountsRuns marks a tool whose result differs on every run (it
	// includes a counter, a timestamp or a random id). The replay case
	// prefers such a sample: identical answers to a repeated call then prove
	// the tool ran once.
	CountsRuns bool `json:"countsRuns,omitempty"`
}

// expect returns the sample's expectation with its default.
func (s ToolSamples) expect() Expect {
	if s.Expect == "" {
		return ExpectResult
	}
	return s.Expect
}

// input returns the sample's input with its default.
func (s ToolSamples) input() json.RawMessage {
	if len(bytes.TrimSpace(s.Input)) == 0 {
		return json.RawMessage("{}")
	}
	return s.Input
}

// samplesFile is the JSON form ReadSamples accepts.
type samplesFile struct {
	Tools []ToolSamples `json:"tools"`
}

// ReadSamples decodes tool samples from JSON: either {"tools": [...]} or a
// bare array of samples, each with the fields of [ToolSamples] in camelCase
// ("tool", "input", "visitor", "risk", "approvedBy", "conversationId",
// "expect", "invalidInputs", "sideEffects", "countsRuns"). A Check function
// cannot be given in JSON.
func ReadSamples(r io.Reader) ([]ToolSamples, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	data = bytes.TrimSpace(data)
	var list []ToolSamples
	dec := func(v any) error {
		d := json.NewDecoder(bytes.NewReader(data))
		d.DisallowUnknownFields()
		return d.Decode(v)
	}
	if len(data) > 0 && data[0] == '[' {
		err = dec(&list)
	} else {
		var f samplesFile
		err = dec(&f)
		list = f.Tools
	}
	if err != nil {
		return nil, fmt.Errorf("tool samples: %w (expected {\"tools\": [{\"tool\": \"name\", \"input\": {...}}]})", err)
	}
	for i, s := range list {
		if s.Tool == "" {
			return nil, fmt.Errorf("tool samples: entry %d has no \"tool\"", i+1)
		}
		switch s.expect() {
		case ExpectResult, ExpectRefusal, ExpectFailure, ExpectPanic:
		default:
			return nil, fmt.Errorf("tool samples: entry %d (%s): expect %q is not one of result, refusal, execution_failed, panic", i+1, s.Tool, s.Expect)
		}
	}
	return list, nil
}

// ReadSamplesFile reads tool samples from a JSON file; see [ReadSamples].
func ReadSamplesFile(path string) ([]ToolSamples, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	list, err := ReadSamples(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return list, nil
}
