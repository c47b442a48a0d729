package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"unicode/utf8"
)

// A fastNode is one schema compiled for the quick check: a walk over the raw
// input bytes that needs no generic decode and no big numbers on the usual
// path. It covers the keywords inferred schemas use (type, properties,
// required, additionalProperties, items, enum and const of strings, lengths,
// pattern, numeric bounds, item counts, and the oneOf [X, null] that
// `jsonschema:"nullable"` produces). The quick check only ever answers "valid
// for sure"; on anything else — an invalid value, a keyword it does not
// cover, a number written beyond Validate's limits — the full validator
// decides and writes the problems. FuzzFastCheck holds the two to that.
type fastNode struct {
	opaque  bool     // a keyword the quick check does not cover: never sure
	types   typeMask // allowed JSON types; 0 means any
	enum    []string // allowed string values (enum or const), when hasEnum
	hasEnum bool

	// objects
	props    map[string]*fastNode // while compiling; then in fields
	required map[string]int       // property → its bit in a uint64 of seen required properties
	fields   []fastField          // every property named in properties or required
	index    map[string]int       // field by name, when there are many
	extra    *fastNode            // schema of properties not in props; nil = anything
	noExtra  bool                 // additionalProperties: false

	// arrays
	items              *fastNode
	minItems, maxItems int // maxItems < 0: no bound

	// strings
	minLen, maxLen int // maxLen < 0: no bound
	pattern        *regexp.Regexp

	// numbers
	bounds []numBound
}

// fastField is a property an object schema names.
type fastField struct {
	name string
	node *fastNode // from properties; nil when only required
	bit  int       // its bit among the required, or -1
}

// manyFields is the count of fields above which lookups use a map.
const manyFields = 16

// finish gathers props and required into fields.
func (n *fastNode) finish() {
	n.fields, n.index = nil, nil
	for name, p := range n.props {
		bit, ok := n.required[name]
		if !ok {
			bit = -1
		}
		n.fields = append(n.fields, fastField{name: name, node: p, bit: bit})
	}
	for name, bit := range n.required {
		if _, ok := n.props[name]; !ok {
			n.fields = append(n.fields, fastField{name: name, bit: bit})
		}
	}
	if len(n.fields) > manyFields {
		n.index = make(map[string]int, len(n.fields))
		for i, f := range n.fields {
			n.index[f.name] = i
		}
	}
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

// typeMask is a set of JSON types.
type typeMask uint8

const (
	tObject typeMask = 1 << iota
	tArray
	tString
	tNumber  // any number
	tInteger // a number that is a whole number
	tBoolean
	tNull
)

var typeNames = map[string]typeMask{
	"object": tObject, "array": tArray, "string": tString, "number": tNumber,
	"integer": tInteger, "boolean": tBoolean, "null": tNull,
}

// numBound is one of minimum, maximum, exclusiveMinimum, exclusiveMaximum.
type numBound struct {
	f         float64  // the bound, rounded
	exact     *big.Rat // the bound, exactly
	small     bool     // a whole number under 2^53: exact as a float64
	below     bool     // a minimum (the value must not be below it)
	exclusive bool     // the value must not equal it either
}

// annotations are keywords that never make a value invalid (with format
// assertion on, "format" is not one of them).
var annotations = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "$defs": true, "definitions": true,
	"title": true, "description": true, "default": true, "examples": true,
	"deprecated": true, "readOnly": true, "writeOnly": true,
	"contentEncoding": true, "contentMediaType": true,
}

// draft2020 are the ways of naming draft 2020-12 in "$schema".
var draft2020 = map[string]bool{
	"https://json-schema.org/draft/2020-12/schema":  true,
	"https://json-schema.org/draft/2020-12/schema#": true,
	"http://json-schema.org/draft/2020-12/schema":   true,
	"http://json-schema.org/draft/2020-12/schema#":  true,
}

// compileFast compiles a schema document (decoded with json.Number numbers)
// for the quick check. It never fails: what it cannot cover is opaque.
func compileFast(doc any) *fastNode {
	if obj, ok := doc.(map[string]any); ok && obj["$schema"] != nil && !draft2020[fmt.Sprint(obj["$schema"])] {
		return &fastNode{opaque: true} // another draft: other rules
	}
	return fastSchema(doc, 0)
}

func fastSchema(doc any, depth int) *fastNode {
	n := &fastNode{maxItems: -1, maxLen: -1}
	if depth > maxFastDepth {
		n.opaque = true
		return n
	}
	switch doc := doc.(type) {
	case bool:
		n.opaque = !doc // false: nothing is valid; true: anything is
		return n
	case map[string]any:
		for k, v := range doc {
			if annotations[k] {
				continue
			}
			if !n.keyword(k, v, doc, depth) {
				n.opaque = true
				return n
			}
		}
		n.finish()
		return n
	}
	n.opaque = true
	return n
}

// keyword compiles one keyword of object schema doc into n, reporting false
// when the quick check does not cover it.
func (n *fastNode) keyword(k string, v any, doc map[string]any, depth int) bool {
	switch k {
	case "type":
		switch v := v.(type) {
		case string:
			n.types = typeNames[v]
			return n.types != 0
		case []any:
			for _, t := range v {
				s, _ := t.(string)
				if typeNames[s] == 0 {
					return false
				}
				n.types |= typeNames[s]
			}
			return len(v) > 0
		}
		return false
	case "enum":
		list, ok := v.([]any)
		if !ok || n.hasEnum { // with const too: leave the intersection to the full validator
			return false
		}
		n.hasEnum = true
		for _, e := range list {
			s, ok := e.(string)
			if !ok {
				return false
			}
			n.enum = append(n.enum, s)
		}
		return true
	case "const":
		s, ok := v.(string)
		if !ok || n.hasEnum {
			return false
		}
		n.hasEnum, n.enum = true, []string{s}
		return true
	case "properties":
		props, ok := v.(map[string]any)
		if !ok {
			return false
		}
		n.props = make(map[string]*fastNode, len(props))
		for name, p := range props {
			n.props[name] = fastSchema(p, depth+1)
		}
		return true
	case "required":
		list, ok := v.([]any)
		if !ok || len(list) > 64 {
			return false
		}
		n.required = make(map[string]int, len(list))
		for _, r := range list {
			s, ok := r.(string)
			if !ok {
				return false
			}
			if _, dup := n.required[s]; !dup {
				n.required[s] = len(n.required)
			}
		}
		return true
	case "additionalProperties":
		if b, ok := v.(bool); ok {
			n.noExtra = !b
			return true
		}
		n.extra = fastSchema(v, depth+1)
		return true
	case "items":
		n.items = fastSchema(v, depth+1)
		return true
	case "uniqueItems":
		return v == false
	case "minItems", "maxItems", "minLength", "maxLength":
		num, ok := v.(json.Number)
		if !ok {
			return false
		}
		i, err := strconv.Atoi(string(num))
		if err != nil || i < 0 {
			return false
		}
		switch k {
		case "minItems":
			n.minItems = i
		case "maxItems":
			n.maxItems = i
		case "minLength":
			n.minLen = i
		case "maxLength":
			n.maxLen = i
		}
		return true
	case "pattern":
		s, ok := v.(string)
		if !ok {
			return false
		}
		re, err := regexp.Compile(s)
		if err != nil {
			return false
		}
		n.pattern = re
		return true
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
		num, ok := v.(json.Number)
		if !ok {
			return false
		}
		f, err := strconv.ParseFloat(string(num), 64)
		exact, ok := new(big.Rat).SetString(string(num))
		if err != nil || !ok || math.IsInf(f, 0) {
			return false
		}
		n.bounds = append(n.bounds, numBound{f: f, exact: exact, small: exact.IsInt() && math.Abs(f) < 1<<53,
			below:     k == "minimum" || k == "exclusiveMinimum",
			exclusive: k == "exclusiveMinimum" || k == "exclusiveMaximum"})
		return true
	case "oneOf":
		// `jsonschema:"nullable"` gives {"oneOf":[X,{"type":"null"}]} with X
		// typed and not null: the same as X with null allowed. Nothing else.
		list, ok := v.([]any)
		if !ok || len(list) != 2 || assertions(doc) != 1 {
			return false
		}
		if null, ok := list[1].(map[string]any); !ok || len(null) != 1 || null["type"] != "null" {
			return false
		}
		x := fastSchema(list[0], depth+1)
		if x.opaque || x.types == 0 || x.types&tNull != 0 {
			return false
		}
		*n = *x
		n.types |= tNull
		return true
	}
	return false
}

// assertions counts the keywords of doc that are not annotations.
func assertions(doc map[string]any) int {
	n := 0
	for k := range doc {
		if !annotations[k] {
			n++
		}
	}
	return n
}

// maxFastDepth bounds nesting, in the schema and in the input, for the
// quick check; deeper goes to the full validator.
const maxFastDepth = 64

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

func (s *fastInput) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

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
