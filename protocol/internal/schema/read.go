package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// readJSON reads one JSON value in one pass over its jsontext tokens. It
// builds the document the validator checks (objects as map[string]any,
// arrays as []any, numbers as json.Number, exactly as written) and, on the
// way, applies the key rules of a tool input:
//
//   - a number written with more than 128 characters or an exponent beyond
//     ±400 is refused (problems.wild), before any arithmetic;
//   - a key that differs only in case from a property a schema at its place
//     declares is refused (problems.folded): a decoder matching names
//     without case (encoding/json does) would bind it past the schema;
//   - a key given twice in one object is refused (problems.twice): the
//     schema sees only the last copy, while a decoder may merge both.
//
// root is the schema document the case rule follows, or nil for none.
// Nesting is limited to jsontext's default depth (10,000); strings must be
// valid UTF-8. The error is the first syntax error.
func readJSON(input []byte, root any) (doc any, problems keyProblems, err error) {
	r := reader{dec: jsontext.NewDecoder(bytes.NewBuffer(input), jsontext.AllowDuplicateNames(true))}
	var set []map[string]any
	if root != nil {
		r.walker = &schemaWalker{root: root, patterns: map[string]*regexp.Regexp{}}
		set = r.walker.expand([]any{root})
	}
	if doc, err = r.value(set); err != nil {
		return nil, keyProblems{}, err
	}
	end := r.dec.InputOffset()
	if _, err := r.dec.ReadToken(); err != io.EOF {
		if err == nil { // the decoder reads a stream of values
			err = fmt.Errorf("another value after the first (at byte %d)", end)
		}
		return nil, keyProblems{}, err
	}
	return doc, keyProblems{wild: r.wild.problems(), folded: r.folded.problems(), twice: r.twice.problems()}, nil
}

// keyProblems are the problems readJSON finds, each kind sorted.
type keyProblems struct {
	wild, folded, twice []Problem
}

// reader is the state of one readJSON.
type reader struct {
	dec                 *jsontext.Decoder
	walker              *schemaWalker // nil: no case rule
	path                []pathStep    // where the reader is
	wild, folded, twice problemList
}

// pathText renders the reader's place.
func (r *reader) pathText() string { return pathText(r.path) }

// value reads the next value; set are the object schemas that apply to it.
func (r *reader) value(set []map[string]any) (any, error) {
	switch r.dec.PeekKind() {
	case '{':
		return r.object(set)
	case '[':
		return r.array(set)
	case '0':
		lit, err := r.dec.ReadValue()
		if err != nil {
			return nil, err
		}
		if msg := numberProblem(lit); msg != "" {
			r.wild.add(r.pathText, msg)
		}
		return json.Number(lit), nil
	}
	tok, err := r.dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case '"':
		return tok.String(), nil
	case 't', 'f':
		return tok.Bool(), nil
	}
	return nil, nil // null: any other token is a syntax error ReadToken reports
}

func (r *reader) object(set []map[string]any) (any, error) {
	if _, err := r.dec.ReadToken(); err != nil {
		return nil, err
	}
	m := map[string]any{}
	for r.dec.PeekKind() == '"' {
		tok, err := r.dec.ReadToken()
		if err != nil {
			return nil, err
		}
		key := tok.String()
		r.path = append(r.path, pathStep{key: key})
		if _, twice := m[key]; twice {
			r.twice.add(r.pathText, "given twice; each key may appear once")
		}
		var next []map[string]any
		if len(set) > 0 {
			if name := foldMatch(set, key); name != "" {
				r.folded.add(r.pathText, fmt.Sprintf("unknown field; property names are case-sensitive: did you mean %q?", name))
			}
			next = r.walker.child(set, key)
		}
		if m[key], err = r.value(next); err != nil {
			return nil, err
		}
		r.path = r.path[:len(r.path)-1]
	}
	_, err := r.dec.ReadToken() // '}', or the syntax error
	return m, err
}

func (r *reader) array(set []map[string]any) (any, error) {
	if _, err := r.dec.ReadToken(); err != nil {
		return nil, err
	}
	list := []any{}
	for i := 0; r.dec.PeekKind() != ']'; i++ {
		r.path = append(r.path, pathStep{key: strconv.Itoa(i), index: true})
		var next []map[string]any
		if len(set) > 0 {
			next = r.walker.item(set, i)
		}
		v, err := r.value(next)
		if err != nil {
			return nil, err
		}
		list = append(list, v)
		r.path = r.path[:len(r.path)-1]
	}
	_, err := r.dec.ReadToken() // ']'
	return list, err
}
