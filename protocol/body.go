package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// opDiagnostics is the one op the contract knows (PROTOCOL.md §4).
const opDiagnostics = "diagnostics"

// wireBody is the union of the two body shapes. Pointers tell a missing or
// null field from an empty one; raw fields are type-checked by hand.
type wireBody struct {
	Op         json.RawMessage `json:"op"`
	Tool       *string         `json:"tool"`
	ToolCallID *string         `json:"toolCallId"`
	Input      json.RawMessage `json:"input"`
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

// decodeBody decodes a POST body (PROTOCOL.md §2). It returns op
// "diagnostics" and a nil call for a DiagnosticsRequest, or the decoded
// ToolCall. Errors are *Error values: invalid_body naming the field that is
// missing or of the wrong type, or unknown_op. Unknown fields are ignored.
func decodeBody(body []byte) (op string, call *Call, err error) {
	if call, ok := decodeCallFast(body); ok {
		return "", call, nil
	}
	return decodeBodySlow(body)
}

// decodeBodySlow decodes any body with encoding/json and explains what is
// wrong with it.
func decodeBodySlow(body []byte) (op string, call *Call, err error) {
	var w wireBody
	if err := json.Unmarshal(body, &w); err != nil {
		return "", nil, bodyError(err)
	}
	if w.Op != nil {
		var s string
		if json.Unmarshal(w.Op, &s) != nil || s != opDiagnostics {
			return "", nil, newError(CodeUnknownOp, fmt.Sprintf("op %s is not supported; the only op is %q", truncate(string(w.Op), 40), opDiagnostics))
		}
		return opDiagnostics, nil, nil
	}
	switch {
	case w.Tool == nil:
		return "", nil, invalidBody("tool: required (a string naming the tool)")
	case *w.Tool == "":
		return "", nil, invalidBody("tool: must not be empty")
	case w.ToolCallID == nil:
		return "", nil, invalidBody("toolCallId: required (a string)")
	case *w.ToolCallID == "":
		return "", nil, invalidBody("toolCallId: must not be empty")
	case w.Input == nil:
		return "", nil, invalidBody("input: required (an object)")
	case firstByte(w.Input) != '{':
		return "", nil, invalidBody("input: expected object, got " + jsonType(w.Input))
	case w.Context == nil:
		return "", nil, invalidBody("context: required (an object)")
	case w.Context.ConversationID == nil:
		return "", nil, invalidBody("context.conversationId: required (a string)")
	case w.Context.Risk == nil:
		return "", nil, invalidBody("context.risk: required (one of low, medium, reviewed, high)")
	case Risk(*w.Context.Risk).rank() == 0:
		return "", nil, invalidBody(fmt.Sprintf("context.risk: %q is not one of low, medium, reviewed, high", truncate(*w.Context.Risk, 40)))
	case w.Context.Visitor == nil:
		return "", nil, invalidBody("context.visitor: required (an object)")
	case w.Context.Visitor.Verified == nil:
		return "", nil, invalidBody("context.visitor.verified: required (a boolean)")
	}
	c := w.Context
	v := c.Visitor
	call = &Call{
		Tool:           *w.Tool,
		ToolCallID:     *w.ToolCallID,
		ConversationID: *c.ConversationID,
		Risk:           Risk(*c.Risk),
		Visitor:        Visitor{Verified: *v.Verified, UnverifiedEmail: deref(v.Email), UnverifiedName: deref(v.Name)},
		ApprovedBy:     deref(c.ApprovedBy),
		RawInput:       w.Input,
		Body:           body,
	}
	if call.Visitor.Verified {
		call.Visitor.externalID = deref(v.ExternalID)
	}
	return "", call, nil
}

// bodyError explains why encoding/json refused the body.
func bodyError(err error) *Error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		if typeErr.Field == "" {
			return invalidBody("the body must be a JSON object, got " + typeErr.Value)
		}
		return invalidBody(describeDecodeError(typeErr))
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

// firstByte returns the first non-space byte of raw JSON, or 0.
func firstByte(raw []byte) byte {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}

// jsonType names the JSON type of a raw value.
func jsonType(raw []byte) string {
	switch firstByte(raw) {
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
	}
	return "number"
}
