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

// bodyFields is what a POST body says, as both of its decoders leave it:
// decodeUsual reads the usual tool call straight off the tokens, and
// decodeAny reads every other body through wireBody. Strings absent or null
// are empty; given says which fields were there.
type bodyFields struct {
	op, input                              rawSpan
	tool, toolCallID, conversationID, risk string
	approvedBy, externalID, email, name    string
	verified                               bool
	given                                  field
}

// field is one of bodyFields' fields, or a set of them.
type field uint16

const (
	fieldTool field = 1 << iota
	fieldToolCallID
	fieldConversationID
	fieldRisk
	fieldApprovedBy
	fieldExternalID
	fieldEmail
	fieldName
	fieldContext
	fieldVisitor
	fieldVerified
)

// stringOf returns the string field one names.
func (f *bodyFields) stringOf(one field) *string {
	switch one {
	case fieldTool:
		return &f.tool
	case fieldToolCallID:
		return &f.toolCallID
	case fieldConversationID:
		return &f.conversationID
	case fieldRisk:
		return &f.risk
	case fieldApprovedBy:
		return &f.approvedBy
	case fieldExternalID:
		return &f.externalID
	case fieldEmail:
		return &f.email
	case fieldName:
		return &f.name
	}
	panic("protocol: not a string field")
}

// decodeBody decodes a POST body (PROTOCOL.md §2). It returns op
// "diagnostics" and a nil call for a DiagnosticsRequest, or the decoded
// ToolCall. Errors are *Error values: invalid_body naming the field that is
// missing, of the wrong type or given twice, or unknown_op.
func decodeBody(body []byte) (op string, call *Call, err error) {
	var f bodyFields
	if !decodeUsual(body, &f) {
		f = bodyFields{}
		if err := decodeAny(body, &f); err != nil {
			return "", nil, err
		}
	}
	return f.call(body)
}

// decodeAny decodes any body into f through wireBody, and explains a body
// it cannot take.
func decodeAny(body []byte, f *bodyFields) *Error {
	var w wireBody
	if err := jsonv2.Unmarshal(body, &w); err != nil {
		if !repeatedInInput(err) {
			return bodyError(err)
		}
		// A name given twice inside the input is the input's problem, which
		// the schema check answers (invalid_input, naming it) after the
		// tool lookup.
		if w, err = decodeRepeatingInput(body); err != nil {
			return bodyError(err)
		}
	}
	f.op, f.input = w.Op, w.Input
	f.take(fieldTool, w.Tool)
	f.take(fieldToolCallID, w.ToolCallID)
	if c := w.Context; c != nil {
		f.given |= fieldContext
		f.take(fieldConversationID, c.ConversationID)
		f.take(fieldRisk, c.Risk)
		f.take(fieldApprovedBy, c.ApprovedBy)
		if v := c.Visitor; v != nil {
			f.given |= fieldVisitor
			if v.Verified != nil {
				f.given |= fieldVerified
				f.verified = *v.Verified
			}
			f.take(fieldExternalID, v.ExternalID)
			f.take(fieldEmail, v.Email)
			f.take(fieldName, v.Name)
		}
	}
	return nil
}

// take sets the string field one to *s when s is given.
func (f *bodyFields) take(one field, s *string) {
	if s != nil {
		f.given |= one
		*f.stringOf(one) = *s
	}
}

// call checks the decoded fields in the contract's order and builds the
// call (or reports the diagnostics op).
func (f *bodyFields) call(body []byte) (op string, call *Call, err error) {
	if f.op.kind != 0 {
		var name string
		if f.op.kind != '"' || jsonv2.Unmarshal(f.op.of(body), &name) != nil || name != opDiagnostics {
			return "", nil, newError(CodeUnknownOp, fmt.Sprintf("op %s is not supported; the only op is %q", truncate(string(f.op.of(body)), 40), opDiagnostics))
		}
		return opDiagnostics, nil, nil
	}
	switch has := f.given; {
	case has&fieldTool == 0:
		return "", nil, invalidBody("tool: required (a string naming the tool)")
	case f.tool == "":
		return "", nil, invalidBody("tool: must not be empty")
	case has&fieldToolCallID == 0:
		return "", nil, invalidBody("toolCallId: required (a string)")
	case f.toolCallID == "":
		return "", nil, invalidBody("toolCallId: must not be empty")
	case f.input.kind == 0 || f.input.kind == 'n':
		return "", nil, invalidBody("input: required (an object)")
	case f.input.kind != '{':
		return "", nil, invalidBody("input: expected object, got " + kindName(f.input.kind))
	case has&fieldContext == 0:
		return "", nil, invalidBody("context: required (an object)")
	case has&fieldConversationID == 0:
		return "", nil, invalidBody("context.conversationId: required (a string)")
	case has&fieldRisk == 0:
		return "", nil, invalidBody("context.risk: required (one of low, medium, reviewed, high)")
	case Risk(f.risk).rank() == 0:
		return "", nil, invalidBody(fmt.Sprintf("context.risk: %q is not one of low, medium, reviewed, high", truncate(f.risk, 40)))
	case has&fieldVisitor == 0:
		return "", nil, invalidBody("context.visitor: required (an object)")
	case has&fieldVerified == 0:
		return "", nil, invalidBody("context.visitor.verified: required (a boolean)")
	}
	call = &Call{
		Tool:           f.tool,
		ToolCallID:     f.toolCallID,
		ConversationID: f.conversationID,
		Risk:           Risk(f.risk),
		Visitor:        Visitor{Verified: f.verified, UnverifiedEmail: f.email, UnverifiedName: f.name},
		ApprovedBy:     f.approvedBy,
		RawInput:       f.input.of(body),
		Body:           body,
	}
	if call.Visitor.Verified {
		call.Visitor.externalID = f.externalID
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
