package protocol

import (
	"errors"
	"fmt"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/median-go/median/protocol/internal/schema"
)

// opDiagnostics is the one op the contract knows (PROTOCOL.md §4).
const opDiagnostics = "diagnostics"

// wireBody is a POST body, both shapes of PROTOCOL.md §2 in one struct.
// Pointers tell a missing or null field from an empty one. The decoder
// matches names exactly, ignores unknown ones and refuses a name given
// twice in one object.
type wireBody struct {
	Op         rawSpan `json:"op"`
	Tool       *string `json:"tool"`
	ToolCallID *string `json:"toolCallId"`
	Input      rawSpan `json:"input"`
	Context    *struct {
		ConversationID *string `json:"conversationId"`
		Risk           *string `json:"risk"`
		Visitor        *struct {
			Verified   *bool   `json:"verified"`
			ExternalID *string `json:"externalId"`
			Email      *string `json:"email"`
			Name       *string `json:"name"`
		} `json:"visitor"`
		ApprovedBy *string `json:"approvedBy"`
	} `json:"context"`
}

// rawSpan is where a member's value lies in the body, so that the input
// is kept as the bytes signed, without a copy.
type rawSpan struct {
	start, end int64
	kind       jsontext.Kind // 0 when the member is absent
	count      int           // how many times the member was given
}

// UnmarshalJSONFrom records the span of the next value.
func (s *rawSpan) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	s.end = dec.InputOffset()
	s.start, s.kind = s.end-int64(len(v)), v.Kind()
	s.count++
	return nil
}

// of returns the span's bytes in body, capped so that appending to them
// never writes into body.
func (s rawSpan) of(body []byte) []byte { return body[s.start:s.end:s.end] }

// decodeBody decodes a POST body (PROTOCOL.md §2). It returns op
// "diagnostics" and a nil call for a DiagnosticsRequest, or the decoded
// ToolCall. Errors are *Error values: invalid_body naming the field that is
// missing, of the wrong type or given twice, or unknown_op.
func decodeBody(body []byte) (op string, call *Call, err error) {
	var w wireBody
	if err := jsonv2.Unmarshal(body, &w); err != nil {
		if !repeatedInInput(err) {
			return "", nil, bodyError(err)
		}
		// A name given twice inside the input is the input's problem, which
		// the schema check answers (invalid_input, naming it) after the
		// tool lookup.
		if w, err = decodeRepeatingInput(body); err != nil {
			return "", nil, bodyError(err)
		}
	}
	if w.Op.kind != 0 {
		var name string
		if w.Op.kind != '"' || jsonv2.Unmarshal(w.Op.of(body), &name) != nil || name != opDiagnostics {
			return "", nil, newError(CodeUnknownOp, fmt.Sprintf("op %s is not supported; the only op is %q", truncate(string(w.Op.of(body)), 40), opDiagnostics))
		}
		return opDiagnostics, nil, nil
	}
	switch c := w.Context; {
	case w.Tool == nil:
		return "", nil, invalidBody("tool: required (a string naming the tool)")
	case *w.Tool == "":
		return "", nil, invalidBody("tool: must not be empty")
	case w.ToolCallID == nil:
		return "", nil, invalidBody("toolCallId: required (a string)")
	case *w.ToolCallID == "":
		return "", nil, invalidBody("toolCallId: must not be empty")
	case w.Input.kind == 0 || w.Input.kind == 'n':
		return "", nil, invalidBody("input: required (an object)")
	case w.Input.kind != '{':
		return "", nil, invalidBody("input: expected object, got " + kindName(w.Input.kind))
	case c == nil:
		return "", nil, invalidBody("context: required (an object)")
	case c.ConversationID == nil:
		return "", nil, invalidBody("context.conversationId: required (a string)")
	case c.Risk == nil:
		return "", nil, invalidBody("context.risk: required (one of low, medium, reviewed, high)")
	case Risk(*c.Risk).rank() == 0:
		return "", nil, invalidBody(fmt.Sprintf("context.risk: %q is not one of low, medium, reviewed, high", truncate(*c.Risk, 40)))
	case c.Visitor == nil:
		return "", nil, invalidBody("context.visitor: required (an object)")
	case c.Visitor.Verified == nil:
		return "", nil, invalidBody("context.visitor.verified: required (a boolean)")
	}
	c, v := w.Context, w.Context.Visitor
	call = &Call{
		Tool:           *w.Tool,
		ToolCallID:     *w.ToolCallID,
		ConversationID: *c.ConversationID,
		Risk:           Risk(*c.Risk),
		Visitor:        Visitor{Verified: *v.Verified, UnverifiedEmail: deref(v.Email), UnverifiedName: deref(v.Name)},
		ApprovedBy:     deref(c.ApprovedBy),
		RawInput:       w.Input.of(body),
		Body:           body,
	}
	if call.Visitor.Verified {
		call.Visitor.externalID = deref(v.ExternalID)
	}
	return "", call, nil
}

// repeatedInInput reports whether err is a name given twice inside the
// input object.
func repeatedInInput(err error) bool {
	var se *jsontext.SyntacticError
	return errors.Is(err, jsontext.ErrDuplicateName) && errors.As(err, &se) && strings.HasPrefix(string(se.JSONPointer), "/input/")
}

// decodeRepeatingInput decodes a body whose input gives a name twice: once
// letting names repeat, and once more with the input replaced by {} to
// refuse a name given twice anywhere else.
func decodeRepeatingInput(body []byte) (wireBody, error) {
	var w wireBody
	if err := jsonv2.Unmarshal(body, &w, jsontext.AllowDuplicateNames(true)); err != nil {
		return w, err
	}
	if w.Input.count > 1 {
		return w, &jsontext.SyntacticError{JSONPointer: "/input", Err: jsontext.ErrDuplicateName}
	}
	rest := make([]byte, 0, len(body))
	rest = append(append(append(rest, body[:w.Input.start]...), "{}"...), body[w.Input.end:]...)
	return w, jsonv2.Unmarshal(rest, new(wireBody))
}

// bodyError explains why the body was refused.
func bodyError(err error) *Error {
	var se *jsonv2.SemanticError
	var syn *jsontext.SyntacticError
	switch {
	case errors.As(err, &se) && se.JSONPointer == "":
		return invalidBody("the body must be a JSON object, got " + kindName(se.JSONKind))
	case errors.As(err, &se) && se.GoType != nil:
		return invalidBody(fmt.Sprintf("%s: expected %s, got %s", schema.PointerPath(se.JSONPointer), jsonKind(se.GoType.Kind().String()), kindName(se.JSONKind)))
	case errors.Is(err, jsontext.ErrDuplicateName) && errors.As(err, &syn):
		return invalidBody(schema.PointerPath(syn.JSONPointer) + ": given twice; each key may appear once")
	case errors.As(err, &syn):
		msg := fmt.Sprintf("the body is not valid JSON: %v at byte %d", syn.Err, syn.ByteOffset)
		if syn.JSONPointer != "" {
			msg += " (in " + schema.PointerPath(syn.JSONPointer) + ")"
		}
		return invalidBody(msg)
	}
	return invalidBody("the body is not valid JSON: " + err.Error())
}

func invalidBody(msg string) *Error { return newError(CodeInvalidBody, msg) }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// kindName names a JSON kind as a message says it.
func kindName(k jsontext.Kind) string {
	switch k {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	case '0':
		return "number"
	}
	return "nothing"
}
