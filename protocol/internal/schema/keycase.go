package schema

import (
	"fmt"
	"sort"
	"strings"
)

// A keyShape is the property names a schema declares at each level of the
// input, used to refuse keys that differ from a declared property only in
// case. JSON Schema matches names exactly, but encoding/json binds a key to
// a struct field whatever its case, so {"ORDERID": -5} would pass the
// schema as an unknown field and then land in OrderID unchecked.
type keyShape struct {
	props map[string]*keyShape // declared properties
	items *keyShape            // array elements
	extra *keyShape            // other properties (additionalProperties)
}

// shapeOf gathers the property names of schema document doc: from
// properties, items and additionalProperties, merging the branches of
// allOf, anyOf and oneOf. References are not followed.
func shapeOf(doc any, depth int) *keyShape {
	obj, ok := doc.(map[string]any)
	if !ok || depth > maxFastDepth {
		return nil
	}
	var sh *keyShape
	if props, ok := obj["properties"].(map[string]any); ok {
		sh = &keyShape{props: make(map[string]*keyShape, len(props))}
		for name, p := range props {
			sh.props[name] = shapeOf(p, depth+1)
		}
	}
	if items := shapeOf(obj["items"], depth+1); items != nil {
		sh = mergeShapes(sh, &keyShape{items: items})
	}
	if extra := shapeOf(obj["additionalProperties"], depth+1); extra != nil {
		sh = mergeShapes(sh, &keyShape{extra: extra})
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		branches, _ := obj[k].([]any)
		for _, b := range branches {
			sh = mergeShapes(sh, shapeOf(b, depth+1))
		}
	}
	return sh
}

// mergeShapes returns the union of a and b.
func mergeShapes(a, b *keyShape) *keyShape {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	out := &keyShape{items: mergeShapes(a.items, b.items), extra: mergeShapes(a.extra, b.extra)}
	if a.props != nil || b.props != nil {
		out.props = make(map[string]*keyShape, len(a.props)+len(b.props))
		for name, p := range a.props {
			out.props[name] = p
		}
		for name, p := range b.props {
			out.props[name] = mergeShapes(out.props[name], p)
		}
	}
	return out
}

// foldMatch returns the declared property that key matches except for case
// (the first in sort order when several do), or "" when key is declared as
// it is or matches none.
func (sh *keyShape) foldMatch(key string) string {
	if sh == nil || len(sh.props) == 0 {
		return ""
	}
	if _, ok := sh.props[key]; ok {
		return ""
	}
	var found []string
	for name := range sh.props {
		if strings.EqualFold(name, key) {
			found = append(found, name)
		}
	}
	if len(found) == 0 {
		return ""
	}
	sort.Strings(found)
	return found[0]
}

// caseMismatches returns a problem for each key of doc that differs from a
// property declared at its place only in case.
func caseMismatches(doc any, sh *keyShape) []Problem {
	if sh == nil {
		return nil
	}
	var out []Problem
	var loc []string
	var walk func(v any, sh *keyShape)
	walk = func(v any, sh *keyShape) {
		if sh == nil {
			return
		}
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				loc = append(loc, k)
				if name := sh.foldMatch(k); name != "" {
					out = append(out, Problem{Path: formatPath(loc, doc), Message: fmt.Sprintf("unknown field; property names are case-sensitive: did you mean %q?", name)})
				}
				if p, ok := sh.props[k]; ok {
					walk(e, p)
				} else {
					walk(e, sh.extra)
				}
				loc = loc[:len(loc)-1]
			}
		case []any:
			for i, e := range v {
				loc = append(loc, fmt.Sprint(i))
				walk(e, sh.items)
				loc = loc[:len(loc)-1]
			}
		}
	}
	walk(doc, sh)
	return out
}
