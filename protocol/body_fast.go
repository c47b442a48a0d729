package protocol

import (
	"strings"
	"unicode/utf8"

	"github.com/median-go/median/protocol/internal/jsonscan"
)

// decodeCallFast decodes the usual ToolCall body without reflection, which
// makes it several times faster than encoding/json. It accepts only a plain,
// well-formed ToolCall: the strings it decodes have no escapes (values it
// keeps raw, the input and unknown fields, may have any), every required field
// present once with its type, no key that differs from a known one only in
// case (encoding/json would match it), nothing after the object. For
// anything else, a DiagnosticsRequest included, it reports false and
// decodeBody decodes with encoding/json, which also writes the error
// message. FuzzDecodeBodyFast checks that what it accepts, encoding/json
// decodes the same way.
func decodeCallFast(body []byte) (*Call, bool) {
	// One copy of the body as a string, so every key and string field is a
	// substring of it rather than an allocation of its own.
	s := fastScanner{b: body, text: string(body)}
	var (
		call       Call
		seen       uint16
		verified   bool
		externalID string
	)
	const (
		fTool = 1 << iota
		fID
		fInput
		fContext
		fConversation
		fRisk
		fVisitor
		fApprovedBy
		fVerified
		fExternalID
		fEmail
		fName
	)
	// once marks a field seen, refusing a duplicate (encoding/json keeps
	// the last one; the slow path handles that).
	once := func(f uint16) bool {
		if seen&f != 0 {
			return false
		}
		seen |= f
		return true
	}
	str := func(f uint16, dst *string) bool {
		v, ok := s.str()
		if ok && once(f) {
			*dst = v
			return true
		}
		return false
	}
	visitor := func(key string) bool {
		switch key {
		case "verified":
			v, ok := s.boolean()
			verified = v
			return ok && once(fVerified)
		case "externalId":
			return str(fExternalID, &externalID)
		case "email":
			return str(fEmail, &call.Visitor.UnverifiedEmail)
		case "name":
			return str(fName, &call.Visitor.UnverifiedName)
		}
		return s.skipUnknown(key, "verified", "externalId", "email", "name")
	}
	context := func(key string) bool {
		switch key {
		case "conversationId":
			return str(fConversation, &call.ConversationID)
		case "risk":
			var r string
			ok := str(fRisk, &r)
			call.Risk = Risk(r)
			return ok
		case "approvedBy":
			return str(fApprovedBy, &call.ApprovedBy)
		case "visitor":
			return once(fVisitor) && s.object(visitor)
		}
		return s.skipUnknown(key, "conversationId", "risk", "approvedBy", "visitor")
	}
	top := func(key string) bool {
		switch key {
		case "tool":
			return str(fTool, &call.Tool)
		case "toolCallId":
			return str(fID, &call.ToolCallID)
		case "input":
			raw, ok := s.value()
			call.RawInput = raw
			return ok && raw[0] == '{' && once(fInput)
		case "context":
			return once(fContext) && s.object(context)
		}
		return s.skipUnknown(key, "tool", "toolCallId", "input", "context", "op")
	}
	if !s.object(top) || !s.end() {
		return nil, false
	}
	const required = fTool | fID | fInput | fContext | fConversation | fRisk | fVisitor | fVerified
	if seen&required != required || call.Tool == "" || call.ToolCallID == "" || call.Risk.rank() == 0 {
		return nil, false
	}
	call.Visitor.Verified = verified
	if verified {
		call.Visitor.externalID = externalID
	}
	call.Body = body
	return &call, true
}

// maxFastDepth bounds nesting inside one value on the fast path, far below
// encoding/json's limit for the whole body (10,000).
const maxFastDepth = 512

// fastScanner reads the JSON shapes decodeCallFast accepts. Every method
// reports false on anything it does not accept.
type fastScanner struct {
	b    []byte
	text string // the same bytes as b, as a string
	i    int
}

func (s *fastScanner) space() { s.i = jsonscan.Space(s.b, s.i) }

// consume skips space and then c, if c is next.
func (s *fastScanner) consume(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// end reports whether only space is left.
func (s *fastScanner) end() bool {
	s.space()
	return s.i == len(s.b)
}

// str reads a string without escapes or control characters, in valid UTF-8.
func (s *fastScanner) str() (string, bool) {
	if !s.consume('"') {
		return "", false
	}
	start, ascii := s.i, true
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			v := s.b[start:s.i]
			s.i++
			if !ascii && !utf8.Valid(v) {
				return "", false
			}
			return s.text[start : s.i-1], true
		case c == '\\' || c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// boolean reads true or false.
func (s *fastScanner) boolean() (bool, bool) {
	s.space()
	rest := s.b[s.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		s.i += 4
		return true, true
	case len(rest) >= 5 && string(rest[:5]) == "false":
		s.i += 5
		return false, true
	}
	return false, false
}

// object reads an object, calling field for each key with the scanner
// placed before the key's value.
func (s *fastScanner) object(field func(key string) bool) bool {
	if !s.consume('{') {
		return false
	}
	if s.consume('}') {
		return true
	}
	for {
		key, ok := s.str()
		if !ok || !s.consume(':') || !field(key) {
			return false
		}
		if s.consume(',') {
			continue
		}
		return s.consume('}')
	}
}

// value returns the raw bytes of the next value, whatever it is, checked
// as encoding/json's Valid would.
func (s *fastScanner) value() ([]byte, bool) {
	s.space()
	start := s.i
	end, ok := jsonscan.Skip(s.b, start, maxFastDepth)
	if !ok {
		return nil, false // deeper than maxFastDepth too: encoding/json counts depth over the whole body, let it decide
	}
	s.i = end
	return s.b[start:end:end], true // capped: appending to it must not write into the body
}

// skipUnknown skips the value of a key the shape does not use. A key that
// matches a known one except for case is refused, since encoding/json
// would take it for that field.
func (s *fastScanner) skipUnknown(key string, known ...string) bool {
	for _, k := range known {
		if strings.EqualFold(key, k) {
			return false
		}
	}
	_, ok := s.value()
	return ok
}
