package schema

import (
	"bytes"
	"io"
	"math/big"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// This file is the quick check's walk over an input's jsontext tokens;
// quick_compile.go builds the nodes it walks against.

// fastCheck reports whether input is, for sure, valid against n: a single
// JSON value with nothing but space around it. The decoder refuses a key
// given twice and invalid UTF-8, so such inputs go to the full validator,
// which names them.
func (n *fastNode) fastCheck(input []byte) bool {
	if n == nil || n.opaque {
		return false
	}
	s := fastInputs.Get().(*fastInput)
	s.rd = *bytes.NewBuffer(input)
	s.dec.Reset(&s.rd)
	sure := s.value(n, 0) && s.end()
	s.rd = bytes.Buffer{} // the pool keeps no input
	s.dec.Reset(&s.rd)
	fastInputs.Put(s)
	return sure
}

// fastInput is the state of one quick check, pooled: the walk allocates
// nothing on the usual path.
type fastInput struct {
	dec     jsontext.Decoder
	rd      bytes.Buffer // the input, which dec reads without a copy
	unquote []byte       // the last string with escapes, unquoted
}

var fastInputs = sync.Pool{New: func() any { return new(fastInput) }}

// end reports whether nothing but space follows the value.
func (s *fastInput) end() bool {
	_, err := s.dec.ReadToken()
	return err == io.EOF
}

// value checks the next value against n (nil: anything goes) and moves past
// it. It reports false as soon as the input is not valid for sure, or not
// JSON at all.
func (s *fastInput) value(n *fastNode, depth int) bool {
	if n == nil {
		n = anything // still walked: for keys given twice and numbers beyond the limits
	}
	if n.opaque || depth > maxFastDepth {
		return false
	}
	switch s.dec.PeekKind() {
	case '{':
		return n.allows(tObject) && !n.enumOnly() && s.object(n, depth)
	case '[':
		return n.allows(tArray) && !n.enumOnly() && s.array(n, depth)
	case '"':
		str, ok := s.str()
		return ok && n.allows(tString) && n.checkString(str)
	case 't', 'f':
		return n.allows(tBoolean) && !n.enumOnly() && s.skip()
	case 'n':
		return n.allows(tNull) && !n.enumOnly() && s.skip()
	case '0':
		lit, err := s.dec.ReadValue()
		return err == nil && !n.enumOnly() && numberProblem(lit) == "" && n.checkNumber(lit, writtenWhole(lit))
	}
	return false
}

// writtenWhole reports whether the number literal lit has neither a
// fraction nor an exponent.
func writtenWhole(lit []byte) bool {
	for _, c := range lit {
		if c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

// skip moves past a literal.
func (s *fastInput) skip() bool {
	_, err := s.dec.ReadValue()
	return err == nil
}

func (s *fastInput) object(n *fastNode, depth int) bool {
	if _, err := s.dec.ReadToken(); err != nil {
		return false
	}
	var seen uint64 // required properties seen
	for s.dec.PeekKind() == '"' {
		key, ok := s.str()
		if !ok {
			return false
		}
		var sub *fastNode
		fi := n.fieldIndex(key)
		switch {
		case fi >= 0 && n.fields[fi].node != nil:
			sub = n.fields[fi].node
		case n.foldsToProperty(key):
			return false // a case variant of a property: the full path refuses it
		case n.noExtra:
			return false
		default:
			sub = n.extra
		}
		if fi >= 0 && n.fields[fi].bit >= 0 {
			seen |= 1 << n.fields[fi].bit
		}
		if !s.value(sub, depth+1) {
			return false
		}
	}
	_, err := s.dec.ReadToken() // '}', or a syntax error
	return err == nil && n.requiredSeen(seen)
}

func (s *fastInput) array(n *fastNode, depth int) bool {
	if _, err := s.dec.ReadToken(); err != nil {
		return false
	}
	count := 0
	for s.dec.PeekKind() != ']' {
		if !s.value(n.items, depth+1) {
			return false
		}
		count++
	}
	_, err := s.dec.ReadToken()
	return err == nil && n.itemCount(count)
}

// str reads a string, or an object's key, and returns its value: the raw
// bytes when it has no escapes, else the unquoted bytes (valid until the
// next str).
func (s *fastInput) str() ([]byte, bool) {
	v, err := s.dec.ReadValue()
	if err != nil {
		return nil, false
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return v[1 : len(v)-1], true
	}
	s.unquote, err = jsontext.AppendUnquote(s.unquote[:0], v)
	return s.unquote, err == nil
}

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

// foldsToProperty reports whether key matches a name declared in
// properties only when case is ignored (a decoder matching names without
// case would bind it there).
func (n *fastNode) foldsToProperty(key []byte) bool {
	for i := range n.fields {
		f := &n.fields[i]
		if f.node != nil && f.name != string(key) && bytes.EqualFold([]byte(f.name), key) {
			return true
		}
	}
	return false
}

// allows reports whether n accepts values of JSON type t.
func (n *fastNode) allows(t typeMask) bool {
	return n.types == 0 || n.types&t != 0
}

// enumOnly reports whether n accepts only some strings.
func (n *fastNode) enumOnly() bool { return n.hasEnum }

// requiredSeen reports whether every required property was seen.
func (n *fastNode) requiredSeen(seen uint64) bool {
	return seen == 1<<len(n.required)-1
}

func (n *fastNode) itemCount(count int) bool {
	return count >= n.minItems && (n.maxItems < 0 || count <= n.maxItems)
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
