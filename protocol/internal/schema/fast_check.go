package schema

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strconv"
	"unicode/utf8"

	"github.com/median-go/median/protocol/internal/jsonscan"
)

// This file is the quick check's walk over the raw input; fast_compile.go
// builds the nodes it walks against.

// fieldIndex returns the index of the field named key, or -1.
func (n *fastNode) fieldIndex(key []byte) int {
	if n.index != nil {
		if i, ok := n.index[string(key)]; ok {
			return i
		}
		return -1
	}
	for i := range n.fields {
		if n.fields[i].name == string(key) {
			return i
		}
	}
	return -1
}

// anything is the schema of a value nothing constrains.
var anything = &fastNode{maxItems: -1, maxLen: -1}

// maxOtherKeys bounds the keys of one object that are not fields the quick
// check tracks for duplicates; an object with more is left to the full path.
const maxOtherKeys = 16

// foldsToProperty reports whether key matches a name declared in
// properties only when case is ignored (encoding/json would bind it there).
func (n *fastNode) foldsToProperty(key []byte) bool {
	for i := range n.fields {
		f := &n.fields[i]
		if f.node != nil && f.name != string(key) && bytes.EqualFold([]byte(f.name), key) {
			return true
		}
	}
	return false
}

// fastCheck reports whether input is, for sure, valid against n: a single
// JSON value with nothing but space around it.
func (n *fastNode) fastCheck(input []byte) bool {
	if n == nil || n.opaque {
		return false
	}
	s := fastInput{b: input}
	s.space()
	if !s.value(n, 0) {
		return false
	}
	s.space()
	return s.i == len(s.b)
}

// mayHaveWildNumber reports whether input may hold a number written
// beyond the limits Validate enforces (maxNumberLength, maxNumberExponent):
// an exponent of three digits or more, or a run of 40 digits (a literal of
// over 128 characters has one). It may say yes for text inside strings;
// that only sends the input to the full validator.
func mayHaveWildNumber(input []byte) bool {
	run := 0
	for i, c := range input {
		switch {
		case c >= '0' && c <= '9':
			if run++; run >= 40 {
				return true
			}
			continue
		case c == 'e' || c == 'E':
			j := i + 1
			if j < len(input) && (input[j] == '+' || input[j] == '-') {
				j++
			}
			if k := j + 2; k < len(input) && isDigit(input[j]) && isDigit(input[j+1]) && isDigit(input[k]) {
				return true
			}
		}
		run = 0
	}
	return false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// fastInput walks raw JSON. Every method reports false as soon as the input
// is not valid for sure (or not JSON at all).
type fastInput struct {
	b []byte
	i int
}

func (s *fastInput) space() { s.i = jsonscan.Space(s.b, s.i) }

// value checks the next value against n (nil: anything goes) and moves past it.
func (s *fastInput) value(n *fastNode, depth int) bool {
	if n == nil {
		n = anything // still walked: for duplicate keys and numbers beyond the limits
	}
	if n.opaque || depth > maxFastDepth || s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return n.allows(tObject) && !n.enumOnly() && s.object(n, depth)
	case c == '[':
		return n.allows(tArray) && !n.enumOnly() && s.array(n, depth)
	case c == '"':
		str, ok := s.str()
		return ok && n.allows(tString) && n.checkString(str)
	case c == 't':
		return n.allows(tBoolean) && s.literal("true") && !n.enumOnly()
	case c == 'f':
		return n.allows(tBoolean) && s.literal("false") && !n.enumOnly()
	case c == 'n':
		return n.allows(tNull) && s.literal("null") && !n.enumOnly()
	case c == '-' || c >= '0' && c <= '9':
		lit, whole, ok := s.number()
		return ok && !n.enumOnly() && !mayHaveWildNumber(lit) && n.checkNumber(lit, whole)
	}
	return false
}

// allows reports whether n accepts values of JSON type t.
func (n *fastNode) allows(t typeMask) bool {
	return n.types == 0 || n.types&t != 0
}

// enumOnly reports whether n accepts only some strings.
func (n *fastNode) enumOnly() bool { return n.hasEnum }

func (s *fastInput) literal(word string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		return false
	}
	s.i += len(word)
	return true
}

func (s *fastInput) object(n *fastNode, depth int) bool {
	s.i++                      // {
	var seen, fieldSeen uint64 // required properties seen; fields seen, by index
	var others [maxOtherKeys][]byte
	nOthers := 0
	s.space()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return n.requiredSeen(seen)
	}
	for {
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return false
		}
		key, ok := s.str()
		if !ok {
			return false
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		s.space()
		var sub *fastNode
		fi := n.fieldIndex(key)
		var f *fastField
		if fi >= 0 {
			f = &n.fields[fi]
		}
		switch {
		case f != nil && f.node != nil:
			sub = f.node
		case n.foldsToProperty(key):
			return false // a case variant of a property: the full path refuses it
		case n.noExtra:
			return false
		default:
			sub = n.extra
		}
		// A key seen twice is left to the full path, which refuses it.
		if fi >= 0 {
			if fi >= 64 || fieldSeen&(1<<fi) != 0 {
				return false
			}
			fieldSeen |= 1 << fi
			if f.bit >= 0 {
				seen |= 1 << f.bit
			}
		} else {
			if nOthers == maxOtherKeys {
				return false
			}
			for _, k := range others[:nOthers] {
				if bytes.Equal(k, key) {
					return false
				}
			}
			others[nOthers] = key
			nOthers++
		}
		if !s.value(sub, depth+1) {
			return false
		}
		s.space()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return n.requiredSeen(seen)
		default:
			return false
		}
	}
}

// requiredSeen reports whether every required property was seen.
func (n *fastNode) requiredSeen(seen uint64) bool {
	return seen == 1<<len(n.required)-1
}

func (s *fastInput) array(n *fastNode, depth int) bool {
	s.i++ // [
	items, count := n.items, 0
	s.space()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return n.itemCount(0)
	}
	for {
		s.space()
		if !s.value(items, depth+1) {
			return false
		}
		count++
		s.space()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return n.itemCount(count)
		default:
			return false
		}
	}
}

func (n *fastNode) itemCount(count int) bool {
	return count >= n.minItems && (n.maxItems < 0 || count <= n.maxItems)
}

// str reads a string and returns its value: the raw bytes when it has no
// escapes, else what encoding/json decodes (the value the full validator
// sees). A string without escapes in invalid UTF-8 (which encoding/json
// would change) or with a control character is not sure.
func (s *fastInput) str() ([]byte, bool) {
	start := s.i + 1
	escaped, ascii := false, true
	for i := start; i < len(s.b); i++ {
		switch c := s.b[i]; {
		case c == '"':
			s.i = i + 1
			raw := s.b[start:i]
			if !escaped {
				return raw, ascii || utf8.Valid(raw)
			}
			var out string
			if json.Unmarshal(s.b[start-1:i+1], &out) != nil {
				return nil, false
			}
			return []byte(out), true
		case c == '\\':
			escaped = true
			i++ // skip the escaped byte, so an escaped quote does not end the string
		case c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// checkString applies n's string keywords to str.
func (n *fastNode) checkString(str []byte) bool {
	if n.hasEnum {
		found := false
		for _, e := range n.enum {
			if e == string(str) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if n.minLen > 0 || n.maxLen >= 0 {
		l := utf8.RuneCount(str)
		if l < n.minLen || n.maxLen >= 0 && l > n.maxLen {
			return false
		}
	}
	return n.pattern == nil || n.pattern.Match(str)
}

// number reads a JSON number and returns its literal and whether it is
// written as a whole number (no fraction, no exponent).
func (s *fastInput) number() (lit []byte, whole, ok bool) {
	start := s.i
	if s.b[s.i] == '-' {
		s.i++
	}
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	intStart := s.i
	if d := digits(); d == 0 || d > 1 && s.b[intStart] == '0' {
		return nil, false, false
	}
	whole = true
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return nil, false, false
		}
		whole = false
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return nil, false, false
		}
		whole = false
	}
	return s.b[start:s.i], whole, true
}

// smallWhole returns the value of a whole-number literal of at most 15
// digits, exact as a float64, without strconv.
func smallWhole(lit []byte, whole bool) (float64, bool) {
	neg := len(lit) > 0 && lit[0] == '-'
	digits := lit
	if neg {
		digits = lit[1:]
	}
	if !whole || len(digits) == 0 || len(digits) > 15 {
		return 0, false
	}
	var v int64
	for _, c := range digits {
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return float64(v), true
}

// checkNumber applies n's type and bounds to the number lit. A number that
// is a whole number but written with a fraction or exponent (1.0, 1e2) is
// left to the full validator when n wants an integer.
func (n *fastNode) checkNumber(lit []byte, whole bool) bool {
	if n.types != 0 && n.types&tNumber == 0 && !(whole && n.types&tInteger != 0) {
		return false
	}
	if len(n.bounds) == 0 {
		return true
	}
	f, ok := smallWhole(lit, whole)
	if !ok {
		var err error
		if f, err = strconv.ParseFloat(string(lit), 64); err != nil {
			return false // overflows float64: let the full validator judge
		}
	}
	for _, b := range n.bounds {
		cmp := 0 // the sign of value - bound
		switch {
		case f < b.f:
			cmp = -1
		case f > b.f:
			cmp = 1
		case b.small && whole && len(lit) <= 15:
			cmp = 0 // both exact as float64s, so equal
		default:
			// Rounded equal: compare exactly (rare; a value on its bound).
			v, ok := new(big.Rat).SetString(string(lit))
			if !ok {
				return false
			}
			cmp = v.Cmp(b.exact)
		}
		switch {
		case b.below && (cmp < 0 || b.exclusive && cmp == 0):
			return false
		case !b.below && (cmp > 0 || b.exclusive && cmp == 0):
			return false
		}
	}
	return true
}
