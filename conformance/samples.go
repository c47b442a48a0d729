package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/median-go/median/internal/base/chars"
)

// What a sample call must get back: the values of ToolSample.Expect.
const (
	wantResult  = "result"           // 200 {"result": ...} that is not a refusal (the default)
	wantRefusal = "refusal"          // 200 with a refusal result (docs/PROTOCOL.md §3.1)
	wantFailure = "execution_failed" // 200 execution_failed with a message
	wantPanic   = "panic"            // the tool panics: 200 execution_failed, and the endpoint keeps serving
)

// Visitor is the visitor a call is sent for (docs/PROTOCOL.md §2). The
// zero value is an anonymous, unverified visitor.
type Visitor struct {
	Verified   bool   `json:"verified"`             // the page vouched for the visitor
	ExternalID string `json:"externalId,omitempty"` // sent only when Verified
	Email      string `json:"email,omitempty"`      // the visitor's email, sent as given
	Name       string `json:"name,omitempty"`       // the visitor's name, sent as given
}

// ToolSample is one call of one of your tools: what [CallTool] sends, and
// what the suite sends for the cases that run a tool ([Target].Tools), with
// the inputs the tool must refuse. List a tool several times in
// Target.Tools to send several samples.
type ToolSample struct {
	// Tool is the tool's name as the manifest lists it.
	Tool string `json:"tool"`

	// Input is the tool's input: a value encoded with encoding/json, or a
	// json.RawMessage or []byte sent as given, only the white space between
	// its tokens removed (its key order, numbers, escapes and characters
	// such as "<" kept); nil sends {}.
	Input any `json:"input,omitempty"`

	// Visitor, Risk, ApprovedBy and ConversationID are sent in the call's
	// context. Risk defaults to the tool's risk in the manifest (or "low");
	// ApprovedBy to "A teammate" when that risk is reviewed or high (what
	// Median sends on an approved call with no name on record), else none;
	// ConversationID to the call's toolCallId (what Median sends on its
	// own test calls), so a call sent again with the same ToolCallID has
	// the same body. The risk-floor
	// cases (docs/PROTOCOL.md §9) send the sample at other risks, with and
	// without ApprovedBy.
	Visitor        Visitor `json:"visitor"`
	Risk           string  `json:"risk,omitempty"`
	ApprovedBy     string  `json:"approvedBy,omitempty"`
	ConversationID string  `json:"conversationId,omitempty"`

	// Unapproved sends no approvedBy, whatever the risk: the call Median
	// sends before a teammate approved it, which the risk floor refuses at
	// reviewed and high (docs/PROTOCOL.md §9).
	Unapproved bool `json:"unapproved,omitempty"`

	// ToolCallID is the toolCallId [CallTool] sends; empty sends a fresh
	// "call_" id. Set it to Reply.ToolCallID to repeat a call
	// (docs/PROTOCOL.md §8). The suite's cases ignore it: each call they
	// send has its own id.
	ToolCallID string `json:"-"`

	// The fields below are for the suite; CallTool returns the answer for
	// you to check instead.

	// Expect is what the call must get back: "result" (the default: 200
	// {"result": …} that is not a refusal), "refusal" (a refusal result,
	// docs/PROTOCOL.md §3.1), "execution_failed" (200 execution_failed with
	// a message) or "panic" (the tool panics: 200 execution_failed, and the
	// endpoint keeps serving).
	Expect string `json:"expect,omitempty"`

	// Check, when set, checks the result of an Expect "result" sample (the
	// JSON value inside {"result": ...}); its error fails the case.
	Check func(result json.RawMessage) error `json:"-"`

	// InvalidInputs are inputs the tool's schema must refuse with 400
	// invalid_input, each valid JSON, sent as a json.RawMessage Input is.
	// They never run the tool, even with SideEffects.
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
func (s ToolSample) expect() string {
	if s.Expect == "" {
		return wantResult
	}
	return s.Expect
}

// input returns the sample's input as JSON; Target.validate has checked
// that it encodes, so the error is only ever seen there.
func (s ToolSample) input() json.RawMessage {
	raw, err := encodeInput(s.Input)
	if err != nil {
		return json.RawMessage("{}")
	}
	return raw
}

// sampleJSON is one sample as ReadSamples reads it: its Input, at a
// shallower depth than ToolSample's, takes the input as written, which
// ReadSamples keeps so that it is sent as given (see ToolSample.Input).
type sampleJSON struct {
	ToolSample
	Input json.RawMessage `json:"input,omitempty"`
}

// samplesFile is the JSON form ReadSamples accepts.
type samplesFile struct {
	Tools []sampleJSON `json:"tools"`
}

// ReadSamples decodes tool samples from JSON, such as a file of samples
// for mediancheck -samples: either {"tools": [...]} or a bare array of
// samples, each with the fields of [ToolSample] in camelCase ("tool",
// "input", "visitor", "risk", "approvedBy", "conversationId", "unapproved", "expect",
// "invalidInputs", "sideEffects", "countsRuns"). A Check function cannot be
// given in JSON. Each input is kept as written, a [json.RawMessage], so it
// is sent as given (its key order, numbers, escapes and characters such as
// "<" kept).
func ReadSamples(r io.Reader) ([]ToolSample, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	data = bytes.TrimSpace(data)
	var read []sampleJSON
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if len(data) > 0 && data[0] == '[' {
		err = d.Decode(&read)
	} else {
		var f samplesFile
		err = d.Decode(&f)
		read = f.Tools
	}
	if err != nil {
		return nil, fmt.Errorf("tool samples: %w (expected {\"tools\": [{\"tool\": \"name\", \"input\": {...}}]})", err)
	}
	list := make([]ToolSample, len(read))
	for i, r := range read {
		list[i] = r.ToolSample
		if len(r.Input) > 0 && string(r.Input) != "null" { // no input, or null: {} is sent
			list[i].Input = r.Input
		}
	}
	for i, s := range list {
		if err := s.validate(); err != nil {
			return nil, fmt.Errorf("tool samples: entry %d: %w", i+1, err)
		}
	}
	return list, nil
}

// validate reports what is wrong with the sample.
func (s ToolSample) validate() error {
	if s.Tool == "" {
		return fmt.Errorf("no \"tool\": name the tool to call")
	}
	switch s.expect() {
	case wantResult, wantRefusal, wantFailure, wantPanic:
	default:
		return fmt.Errorf("%s: expect %q is not one of result, refusal, execution_failed, panic", s.Tool, s.Expect)
	}
	if _, err := encodeInput(s.Input); err != nil {
		return fmt.Errorf("%s: %w", s.Tool, err)
	}
	for i, in := range s.InvalidInputs {
		switch {
		case len(bytes.TrimSpace(in)) == 0:
			return fmt.Errorf("%s: InvalidInputs[%d] is empty: give the JSON input the tool must refuse", s.Tool, i)
		case !json.Valid(in):
			return fmt.Errorf("%s: InvalidInputs[%d] is not valid JSON: %s", s.Tool, i, chars.Line(in, 80))
		}
	}
	return nil
}
