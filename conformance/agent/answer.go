package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/median-go/median/internal/answerjson"
	"github.com/median-go/median/internal/chars"
)

// answer is a body of the contract's shape: {"result": …} or
// {"error": {"code": …, "message": …}}.
type answer struct {
	result  json.RawMessage
	isError bool
	code    string
	message string
}

// parse reads a body of the contract's shape, saying what is wrong
// otherwise.
func parse(contentType string, body []byte) (answer, error) {
	if !isJSONType(contentType) {
		return answer{}, fmt.Errorf("Content-Type is %q, not application/json", contentType)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return answer{}, fmt.Errorf("the body is not a JSON object: %s", chars.Snippet(body, 80))
	}
	if len(top) != 1 || (top["result"] == nil && top["error"] == nil) {
		return answer{}, fmt.Errorf("the body must have exactly one key, \"result\" or \"error\"; it has %s", answerjson.KeysOf(top))
	}
	if r, ok := top["result"]; ok {
		return answer{result: r}, nil
	}
	var e struct {
		Code    *string `json:"code"`
		Message *string `json:"message"`
	}
	if err := json.Unmarshal(top["error"], &e); err != nil || e.Code == nil || *e.Code == "" || e.Message == nil {
		return answer{}, fmt.Errorf("\"error\" must be an object with a string code and message, got %s", chars.Snippet(top["error"], 80))
	}
	return answer{isError: true, code: *e.Code, message: *e.Message}, nil
}

// member is one member of a JSON object: its decoded name, its value's
// text, and its whole text from the name to the end of the value.
type member struct {
	name  string
	value []byte
	raw   []byte
}

// readObject returns the members of raw in order when raw is a JSON object,
// duplicate names included.
func readObject(raw []byte) ([]member, bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, false
	}
	var ms []member
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
		ms = append(ms, member{name: name, value: bytes.Clone(value), raw: raw[start:end]})
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

// join writes members back as one object.
func join(members [][]byte) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(m)
	}
	b.WriteByte('}')
	return b.Bytes()
}
