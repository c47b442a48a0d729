package schema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/median-go/median/protocol/internal/jsonscan"
)

// The checks in this file close two ways in which encoding/json, decoding a
// valid input into the tool's Go type, would bind a value the schema never
// checked:
//
//   - it binds a key to a struct field whatever its case, so {"ORDERID": -5}
//     passes the schema as an unknown field and lands in OrderID;
//   - it decodes every copy of a duplicated key into the same value, so in
//     {"q":{"n":-5},"q":{}} the schema checks only the last copy of q while
//     n = -5 is kept.
//
// So a key that differs from a declared property only in case is refused,
// and so is a key given twice in one object.

// caseMismatches returns a problem for each key of doc that differs only in
// case from a property some schema at its place declares. Schemas are
// followed from root through local $ref, allOf/anyOf/oneOf, if/then/else,
// dependentSchemas, properties, patternProperties, additionalProperties,
// items and prefixItems.
func caseMismatches(root any, doc any) []Problem {
	c := schemaWalker{root: root, patterns: map[string]*regexp.Regexp{}}
	var found problemList
	var loc []string
	var walk func(v any, set []map[string]any)
	walk = func(v any, set []map[string]any) {
		if len(set) == 0 {
			return
		}
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				loc = append(loc, k)
				if name := foldMatch(set, k); name != "" {
					found.add(func() string { return formatPath(loc, doc) }, fmt.Sprintf("unknown field; property names are case-sensitive: did you mean %q?", name))
				}
				walk(e, c.child(set, k))
				loc = loc[:len(loc)-1]
			}
		case []any:
			for i, e := range v {
				loc = append(loc, strconv.Itoa(i))
				walk(e, c.item(set, i))
				loc = loc[:len(loc)-1]
			}
		}
	}
	walk(doc, c.expand([]any{root}))
	return found.problems()
}

// schemaWalker finds the schemas that apply at each place of an input.
type schemaWalker struct {
	root     any
	patterns map[string]*regexp.Regexp // compiled patternProperties; nil when invalid
}

// expand returns the object schemas that apply at one place: those given,
// and those they reach through $ref and the applicators that keep the place
// (allOf, anyOf, oneOf, if, then, else, dependentSchemas). Each is listed
// once, so recursive references end.
func (c *schemaWalker) expand(schemas []any) []map[string]any {
	var out []map[string]any
	listed := map[uintptr]bool{}
	var visit func(s any, depth int)
	visit = func(s any, depth int) {
		obj, ok := s.(map[string]any)
		if !ok || depth > maxFastDepth {
			return
		}
		id := reflect.ValueOf(obj).Pointer()
		if listed[id] {
			return
		}
		listed[id] = true
		out = append(out, obj)
		if ref, ok := obj["$ref"].(string); ok {
			visit(resolveRef(c.root, ref), depth+1)
		}
		for _, k := range []string{"allOf", "anyOf", "oneOf"} {
			list, _ := obj[k].([]any)
			for _, b := range list {
				visit(b, depth+1)
			}
		}
		for _, k := range []string{"if", "then", "else"} {
			visit(obj[k], depth+1)
		}
		if deps, ok := obj["dependentSchemas"].(map[string]any); ok {
			for _, d := range deps {
				visit(d, depth+1)
			}
		}
	}
	for _, s := range schemas {
		visit(s, 0)
	}
	return out
}

// resolveRef returns the part of root a local reference ("#", "#/$defs/x")
// points at, or nil.
func resolveRef(root any, ref string) any {
	if ref == "#" {
		return root
	}
	if !strings.HasPrefix(ref, "#/") {
		return nil
	}
	cur := root
	for _, tok := range strings.Split(ref[2:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if cur, _ = step(cur, tok); cur == nil {
			return nil
		}
	}
	return cur
}

// child returns the schemas that apply to the value of key k.
func (c *schemaWalker) child(set []map[string]any, k string) []map[string]any {
	var next []any
	for _, s := range set {
		matched := false
		if props, ok := s["properties"].(map[string]any); ok {
			if p, ok := props[k]; ok {
				next, matched = append(next, p), true
			}
		}
		if pats, ok := s["patternProperties"].(map[string]any); ok {
			for pat, p := range pats {
				if re := c.pattern(pat); re != nil && re.MatchString(k) {
					next, matched = append(next, p), true
				}
			}
		}
		if !matched && s["additionalProperties"] != nil {
			next = append(next, s["additionalProperties"])
		}
	}
	return c.expand(next)
}

// pattern compiles pat once.
func (c *schemaWalker) pattern(pat string) *regexp.Regexp {
	re, ok := c.patterns[pat]
	if !ok {
		re, _ = regexp.Compile(pat)
		c.patterns[pat] = re
	}
	return re
}

// item returns the schemas that apply to element i of an array.
func (c *schemaWalker) item(set []map[string]any, i int) []map[string]any {
	var next []any
	for _, s := range set {
		prefix, _ := s["prefixItems"].([]any)
		switch {
		case i < len(prefix):
			next = append(next, prefix[i])
		case s["items"] != nil:
			next = append(next, s["items"])
		}
	}
	return c.expand(next)
}

// foldMatch returns the property, declared by a schema of set, that key
// matches only when case is ignored (the first in sort order when several
// do), or "" when a schema declares key as it is or none folds to it.
func foldMatch(set []map[string]any, key string) string {
	var found []string
	for _, s := range set {
		props, _ := s["properties"].(map[string]any)
		if _, ok := props[key]; ok {
			return ""
		}
		for name := range props {
			if strings.EqualFold(name, key) {
				found = append(found, name)
			}
		}
	}
	if len(found) == 0 {
		return ""
	}
	sort.Strings(found)
	return found[0]
}

// duplicateKeys returns a problem for each key given twice in one object
// of input, valid JSON whose decoded form is doc.
func duplicateKeys(input []byte, doc any) []Problem {
	var found problemList
	var loc []string
	var value func(i int) int
	value = func(i int) int {
		i = jsonscan.Space(input, i)
		switch input[i] {
		case '{':
			keys := keySet{}
			i = jsonscan.Space(input, i+1)
			if input[i] == '}' {
				return i + 1
			}
			for {
				end, _ := jsonscan.Skip(input, i, 1)
				key := decodeKey(input[i:end])
				if !keys.add(key) {
					found.add(func() string { return formatPath(append(loc, key), doc) }, "given twice; each key may appear once")
				}
				i = jsonscan.Space(input, end) + 1 // past ':'
				loc = append(loc, key)
				i = jsonscan.Space(input, value(i))
				loc = loc[:len(loc)-1]
				if input[i] == '}' {
					return i + 1
				}
				i = jsonscan.Space(input, i+1) // past ','
			}
		case '[':
			i = jsonscan.Space(input, i+1)
			if input[i] == ']' {
				return i + 1
			}
			for n := 0; ; n++ {
				loc = append(loc, strconv.Itoa(n))
				i = jsonscan.Space(input, value(i))
				loc = loc[:len(loc)-1]
				if input[i] == ']' {
					return i + 1
				}
				i++ // past ','
			}
		}
		end, _ := jsonscan.Skip(input, i, 0)
		return end
	}
	value(0)
	return found.problems()
}

// keySet holds the keys of one object: a slice while it is small, a map
// beyond.
type keySet struct {
	list []string
	set  map[string]bool
}

// add adds key and reports whether it was new.
func (k *keySet) add(key string) bool {
	if k.set != nil {
		if k.set[key] {
			return false
		}
		k.set[key] = true
		return true
	}
	for _, have := range k.list {
		if have == key {
			return false
		}
	}
	if k.list = append(k.list, key); len(k.list) > 16 {
		k.set = make(map[string]bool, 2*len(k.list))
		for _, have := range k.list {
			k.set[have] = true
		}
		k.list = nil
	}
	return true
}

// decodeKey returns the value of a JSON string literal.
func decodeKey(lit []byte) string {
	if !strings.ContainsRune(string(lit), '\\') {
		return string(lit[1 : len(lit)-1])
	}
	var s string
	_ = json.Unmarshal(lit, &s)
	return s
}
