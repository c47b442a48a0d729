package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// Risk is how much care Median took before calling the tool (PROTOCOL.md §2).
type Risk string

// The four risk levels.
const (
	RiskLow      Risk = "low"      // runs when called
	RiskMedium   Risk = "medium"   // runs when called; the agent asked for the customer's yes first
	RiskReviewed Risk = "reviewed" // the customer's yes, then an automated reviewer (who may hand it to a teammate)
	RiskHigh     Risk = "high"     // waits for a teammate's approval
)

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

// BindInput decodes the raw input into v (a pointer). Numbers decode exactly
// into integer fields. The error is an *Error with code invalid_input.
//
// JSON Schema counts 5.0 and 1e2 as integers, so an input that passed the
// schema may carry them for an integer field; BindInput then decodes them as
// the integers they are.
func (c *Call) BindInput(v any) error {
	err := json.Unmarshal(c.RawInput, v)
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && strings.HasPrefix(typeErr.Value, "number") {
		if raw, ok := wholeNumbersAsIntegers(c.RawInput); ok {
			err = json.Unmarshal(raw, v)
		}
	}
	if err != nil {
		return newError(CodeInvalidInput, describeDecodeError(err))
	}
	return nil
}

// ToolCall is what a typed tool receives: the call's context and its input
// decoded into In.
type ToolCall[In any] struct {
	*Call
	// Input is the tool's input, validated against the tool's schema and
	// decoded into In.
	Input In
}

// describeDecodeError turns an encoding/json error into one plain sentence
// naming the field.
func describeDecodeError(err error) string {
	switch e := err.(type) {
	case *json.UnmarshalTypeError:
		if e.Field == "" {
			return fmt.Sprintf("expected %s, got %s", jsonKind(e.Type.Kind().String()), e.Value)
		}
		return fmt.Sprintf("%s: expected %s, got %s", e.Field, jsonKind(e.Type.Kind().String()), e.Value)
	case *json.SyntaxError:
		return "not valid JSON: " + e.Error()
	}
	return err.Error()
}

// jsonKind names a Go kind the way a JSON reader would.
func jsonKind(kind string) string {
	switch kind {
	case "struct", "map":
		return "object"
	case "slice", "array":
		return "array"
	case "bool":
		return "boolean"
	case "string":
		return "string"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "integer"
	case "float32", "float64":
		return "number"
	}
	return kind
}

// wholeNumbersAsIntegers rewrites numbers such as 5.0 or 1e2 that are whole
// and fit in 64 bits as plain integers (5, 100); larger ones could not go
// into an integer field anyway, and writing them out in full could take
// a great deal of memory. It reports false when nothing changed.
func wholeNumbersAsIntegers(raw []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	changed := false
	var walk func(any) any
	walk = func(x any) any {
		switch t := x.(type) {
		case map[string]any:
			for k, e := range t {
				t[k] = walk(e)
			}
		case []any:
			for i, e := range t {
				t[i] = walk(e)
			}
		case json.Number:
			if len(t) <= 40 && strings.ContainsAny(string(t), ".eE") {
				// |f| < 2^64 is checked before Int, which would build the whole number.
				if f, ok := new(big.Float).SetPrec(256).SetString(string(t)); ok && f.IsInt() && f.MantExp(nil) <= 64 {
					i, _ := f.Int(nil)
					changed = true
					return json.Number(i.String())
				}
			}
		}
		return x
	}
	v = walk(v)
	if !changed {
		return nil, false
	}
	out, err := json.Marshal(v)
	return out, err == nil
}
