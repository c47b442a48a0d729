package schema

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
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
		return n.typeKeyword(v)
	case "enum":
		return n.enumKeyword(v)
	case "const":
		return n.constKeyword(v)
	case "properties":
		return n.propertiesKeyword(v, depth)
	case "required":
		return n.requiredKeyword(v)
	case "additionalProperties":
		return n.additionalPropertiesKeyword(v, depth)
	case "items":
		n.items = fastSchema(v, depth+1)
		return true
	case "uniqueItems":
		return v == false
	case "minItems":
		return setCount(&n.minItems, v)
	case "maxItems":
		return setCount(&n.maxItems, v)
	case "minLength":
		return setCount(&n.minLen, v)
	case "maxLength":
		return setCount(&n.maxLen, v)
	case "pattern":
		return n.patternKeyword(v)
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
		return n.boundKeyword(k, v)
	case "oneOf":
		return n.nullableKeyword(v, doc, depth)
	}
	return false
}

// typeKeyword compiles "type": one type name or a non-empty list of them.
func (n *fastNode) typeKeyword(v any) bool {
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
}

// enumKeyword compiles an "enum" of strings. With "const" too it leaves
// the intersection to the full validator.
func (n *fastNode) enumKeyword(v any) bool {
	list, ok := v.([]any)
	if !ok || n.hasEnum {
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
}

// constKeyword compiles a "const" string, as an enum of one. With "enum"
// too it leaves the intersection to the full validator.
func (n *fastNode) constKeyword(v any) bool {
	s, ok := v.(string)
	if !ok || n.hasEnum {
		return false
	}
	n.hasEnum, n.enum = true, []string{s}
	return true
}

// propertiesKeyword compiles "properties", each property's schema one
// level deeper.
func (n *fastNode) propertiesKeyword(v any, depth int) bool {
	props, ok := v.(map[string]any)
	if !ok {
		return false
	}
	n.props = make(map[string]*fastNode, len(props))
	for name, p := range props {
		n.props[name] = fastSchema(p, depth+1)
	}
	return true
}

// requiredKeyword compiles "required": at most 64 names, each given its
// bit in the order first named.
func (n *fastNode) requiredKeyword(v any) bool {
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
}

// additionalPropertiesKeyword compiles "additionalProperties": false, true
// or a schema one level deeper.
func (n *fastNode) additionalPropertiesKeyword(v any, depth int) bool {
	if b, ok := v.(bool); ok {
		n.noExtra = !b
		return true
	}
	n.extra = fastSchema(v, depth+1)
	return true
}

// setCount sets *dst to v, a count keyword's value (minItems, maxItems,
// minLength, maxLength): a non-negative whole number that fits an int.
func setCount(dst *int, v any) bool {
	num, ok := v.(json.Number)
	if !ok {
		return false
	}
	i, err := strconv.Atoi(string(num))
	if err != nil || i < 0 {
		return false
	}
	*dst = i
	return true
}

// patternKeyword compiles a "pattern" that Go's regexp compiles.
func (n *fastNode) patternKeyword(v any) bool {
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
}

// boundKeyword compiles k, one of minimum, maximum, exclusiveMinimum and
// exclusiveMaximum, whose value is a finite number.
func (n *fastNode) boundKeyword(k string, v any) bool {
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
}

// nullableKeyword compiles the one "oneOf" the quick check covers:
// `jsonschema:"nullable"` gives {"oneOf":[X,{"type":"null"}]} with X typed
// and not null, the only assertion of doc: the same as X with null
// allowed.
func (n *fastNode) nullableKeyword(v any, doc map[string]any, depth int) bool {
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
