package schema

import (
	"reflect"
	"regexp"
	"sort"
	"strings"
)

// This file finds, for each place of an input, the object schemas that
// apply there, so that the case rule (read.go) can tell a key that differs
// from a declared property only in case.

// maxExpandDepth bounds how many references and applicators expand
// follows from one schema, so that a schema nested without end (through
// $ref chains) costs a bounded walk.
const maxExpandDepth = 64

// schemaWalker finds the schemas that apply at each place of an input.
// Schemas are followed from the root through local $ref, allOf/anyOf/oneOf,
// if/then/else, dependentSchemas, properties, patternProperties,
// additionalProperties, items and prefixItems.
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
		if !ok || depth > maxExpandDepth {
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
