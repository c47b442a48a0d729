// Package answerjson reads an endpoint's answer the one way conformance
// (the suite and CallTool) and conformance/agent (what the agent is told)
// both read it, so that the two cannot disagree: [Parse] holds an answer to
// the shape docs/PROTOCOL.md §3 gives it ([ParseBody] its body alone, for
// a check that leaves the Content-Type to another), [IsRefusal] and
// [CheckRefusal] read a refusal result (§3.1), and [Members] lists an
// object's members as sent.
//
// It is part of the client side of the wire (conformance/internal), imported
// by conformance and conformance/agent; only conformance and the packages
// under it can import it (Go's internal rule), and it imports of this module
// only protocol and internal/base (internal/testonly/surface holds it to
// protocol and the helpers).
package answerjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/median-go/median/internal/base/chars"
)

// Answer is an answer of the contract's shape: {"result": …} or
// {"error": {"code": …, "message": …}}.
type Answer struct {
	Result  json.RawMessage // the result as sent; nil for an error
	Code    string          // the error's code, "" for a result
	Message string          // the error's message
}

// IsError reports whether the answer is {"error": …}.
func (a Answer) IsError() bool { return a.Result == nil }

// IsJSON reports whether a Content-Type header names application/json
// (parameters such as charset=utf-8 allowed), the media type of every
// answer (docs/PROTOCOL.md §3).
func IsJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// Parse reads an answer from its Content-Type header and body, and holds
// it to docs/PROTOCOL.md §3 exactly: the Content-Type is application/json,
// and the body is one JSON object with exactly one member, either "result"
// (any JSON) or "error", an object with exactly the members "code" (a
// non-empty string) and "message" (a string). A name sent twice counts
// twice. The error says what is wrong, the Content-Type and the body both
// when both are; the code's value and the message's wording are the
// caller's to judge.
func Parse(contentType string, body []byte) (Answer, error) {
	a, err := ParseBody(body)
	if !IsJSON(contentType) {
		problem := fmt.Sprintf("Content-Type is %q, not application/json", contentType)
		if err != nil {
			return Answer{}, fmt.Errorf("%s, and %w", problem, err)
		}
		return Answer{}, errors.New(problem)
	}
	return a, err
}

// ParseBody reads an answer's body as [Parse] does, whatever its
// Content-Type: for a check of the body's shape that another check's
// verdict on the Content-Type must not repeat.
func ParseBody(body []byte) (Answer, error) {
	top, ok := Members(body)
	if !ok {
		return Answer{}, fmt.Errorf("the answer is not a JSON object: %s", chars.Line(body, 80))
	}
	if len(top) != 1 || (top[0].Name != "result" && top[0].Name != "error") {
		return Answer{}, fmt.Errorf("the answer must have exactly one key, \"result\" or \"error\"; it has %s", names(top))
	}
	if top[0].Name == "result" {
		return Answer{Result: top[0].Value}, nil
	}
	raw := top[0].Value
	e, ok := Members(raw)
	if !ok {
		return Answer{}, fmt.Errorf("\"error\" must be an object with code and message, got %s", chars.Line(raw, 80))
	}
	var code, message json.RawMessage
	for _, m := range e {
		switch m.Name {
		case "code":
			code = m.Value
		case "message":
			message = m.Value
		}
	}
	if len(e) != 2 || code == nil || message == nil {
		return Answer{}, fmt.Errorf("\"error\" must have exactly code and message; it has %s", names(e))
	}
	a := Answer{Code: str(code), Message: str(message)}
	if code[0] != '"' || a.Code == "" {
		return Answer{}, fmt.Errorf("\"error.code\" must be a non-empty string, got %s", chars.Line(code, 40))
	}
	if message[0] != '"' {
		return Answer{}, fmt.Errorf("\"error.message\" must be a string, got %s", chars.Line(message, 40))
	}
	return a, nil
}

// str decodes a JSON string value, "" for any other value.
func str(value []byte) string {
	var s string
	_ = json.Unmarshal(value, &s)
	return s
}

// IsRefusal reports whether a result is a refusal object (docs/PROTOCOL.md
// §3.1): an object with ok, known or allowed set to false, or an outcome
// of blocked or unknown.
func IsRefusal(result json.RawMessage) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(result, &m) != nil {
		return false
	}
	for _, k := range []string{"ok", "known", "allowed"} {
		if string(m[k]) == "false" {
			return true
		}
	}
	o := string(m["outcome"])
	return o == `"blocked"` || o == `"unknown"`
}

// CheckRefusal checks the shape of a refusal result (docs/PROTOCOL.md
// §3.1), and no more: every field is optional; ok, known and allowed are
// only ever false; outcome is blocked or unknown; reason is a short code
// and detail a line of text; and at least one of them marks the refusal
// (ok, known or allowed false, or an outcome).
func CheckRefusal(result json.RawMessage) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(result, &m); err != nil || m == nil {
		return fmt.Errorf("a refusal must be a JSON object, got %s", chars.Line(result, 80))
	}
	markers := 0
	for _, k := range []string{"ok", "known", "allowed"} {
		v, ok := m[k]
		if !ok {
			continue
		}
		if string(v) != "false" {
			return fmt.Errorf("%q in a refusal is only ever false, got %s", k, v)
		}
		markers++
	}
	if v, ok := m["outcome"]; ok {
		var outcome string
		if json.Unmarshal(v, &outcome) != nil || (outcome != "blocked" && outcome != "unknown") {
			return fmt.Errorf("a refusal's outcome is \"blocked\" or \"unknown\", got %s", chars.Line(v, 40))
		}
		markers++
	}
	if markers == 0 {
		return fmt.Errorf("a refusal carries ok, known or allowed set to false, or an outcome; got %s", chars.Line(result, 120))
	}
	if v, ok := m["reason"]; ok {
		var reason string
		if json.Unmarshal(v, &reason) != nil || reason == "" {
			return fmt.Errorf("a refusal's reason must be a short non-empty string code, got %s", chars.Line(v, 40))
		}
	}
	if v, ok := m["detail"]; ok {
		var detail string
		if json.Unmarshal(v, &detail) != nil {
			return fmt.Errorf("a refusal's detail must be a string, got %s", chars.Line(v, 40))
		}
	}
	return nil
}

// Member is one member of a JSON object as sent: its decoded name, its
// value's text, and its whole text from the name to the end of the value.
type Member struct {
	Name  string
	Value []byte
	Raw   []byte
}

// Members returns the members of raw in order when raw is one JSON object
// and nothing else but white space, a name sent twice included; false when
// raw is anything else. Text that is not valid UTF-8 is read as
// encoding/json reads it, without an error.
func Members(raw []byte) ([]Member, bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, false
	}
	var ms []Member
	for dec.PeekKind() != '}' {
		start := skipSpace(raw, int(dec.InputOffset()))
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, false
		}
		name := tok.String() // before the next read voids tok
		value, err := dec.ReadValue()
		if err != nil {
			return nil, false
		}
		end := int(dec.InputOffset())
		ms = append(ms, Member{Name: name, Value: bytes.Clone(value), Raw: raw[start:end]})
	}
	if _, err := dec.ReadToken(); err != nil { // the closing brace
		return nil, false
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, false
	}
	return ms, true
}

// skipSpace returns the offset of the first byte at or after i that is
// neither JSON white space nor a comma.
func skipSpace(raw []byte, i int) int {
	for i < len(raw) && strings.IndexByte(" \t\r\n,", raw[i]) >= 0 {
		i++
	}
	return i
}

// names lists members' names, quoted and sorted, for a message that says
// which keys an answer has: `"error", "result"`, or "no keys".
func names(ms []Member) string {
	if len(ms) == 0 {
		return "no keys"
	}
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = fmt.Sprintf("%q", m.Name)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}
