package budget

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// This file is a second, naive reading of the package doc's rules, for the
// property tests to hold Fit to: it keeps the input as a tree, renders the
// whole result again after every dropped item and measures it from scratch.
// It shares only the JSON reader with Fit.

// refNode is a JSON value as the reference sees it.
type refNode struct {
	kind    byte        // '{' an object walked into, '[' a list Fit may shorten, 0 anything kept whole
	raw     []byte      // kind 0: the value's bytes
	members []refMember // kind '{'
	items   [][]byte    // kind '[': each item's bytes
	keep    int         // kind '[': items kept
}

// refMember is one member of an object: its name as written and decoded.
type refMember struct {
	raw   []byte
	name  string
	value *refNode
}

// refParse reads one JSON value into a tree; lists are walked into only
// where rule 1 allows, everything else is kept as bytes.
func refParse(b []byte) (*refNode, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(b), decodeOptions...)
	n, err := refRead(dec)
	if err != nil {
		return nil, err
	}
	return n, nil
}

func refRead(dec *jsontext.Decoder) (*refNode, error) {
	switch dec.PeekKind() {
	case '{':
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		n := &refNode{kind: '{'}
		for dec.PeekKind() != '}' {
			name, err := dec.ReadValue()
			if err != nil {
				return nil, err
			}
			m := refMember{raw: bytes.Clone(name), name: unquote(name)}
			if m.value, err = refRead(dec); err != nil {
				return nil, err
			}
			n.members = append(n.members, m)
		}
		_, err := dec.ReadToken()
		return n, err
	case '[':
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		n := &refNode{kind: '['}
		for dec.PeekKind() != ']' {
			v, err := dec.ReadValue()
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, bytes.Clone(v))
		}
		n.keep = len(n.items)
		_, err := dec.ReadToken()
		return n, err
	default:
		v, err := dec.ReadValue()
		return &refNode{raw: bytes.Clone(v)}, err
	}
}

// lists returns the lists of the tree in the order they start.
func (n *refNode) lists() []*refNode {
	switch n.kind {
	case '[':
		return []*refNode{n}
	case '{':
		var out []*refNode
		for _, m := range n.members {
			out = append(out, m.value.lists()...)
		}
		return out
	}
	return nil
}

// shortened reports whether l lost items.
func (n *refNode) shortened() bool { return n.keep < len(n.items) }

// countNames returns the count names of obj's shortened lists, by rule 4.
func countNames(obj *refNode) map[*refNode]string {
	taken := map[string]bool{}
	var short []*refNode
	for _, m := range obj.members {
		taken[m.name] = true
		if m.value.kind == '[' && m.value.shortened() {
			short = append(short, m.value)
		}
	}
	names := map[*refNode]string{}
	if len(short) == 1 && !taken["omitted"] {
		names[short[0]] = "omitted"
		return names
	}
	for _, m := range obj.members {
		if m.value.kind != '[' || len(m.value.items) < 2 {
			continue
		}
		base := "omitted_" + m.name
		name := base
		for i := 2; taken[name]; i++ {
			name = base + "_" + strconv.Itoa(i)
		}
		taken[name] = true
		if m.value.shortened() {
			names[m.value] = name
		}
	}
	return names
}

// render writes the tree compactly, as trimmed.
func (n *refNode) render(b []byte, top bool) []byte {
	switch n.kind {
	case '{':
		b = append(b, '{')
		for i, m := range n.members {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, m.raw...)
			b = append(b, ':')
			b = m.value.render(b, false)
		}
		names := countNames(n)
		for _, m := range n.members {
			if name, ok := names[m.value]; ok {
				b = append(b, ',')
				b, _ = jsontext.AppendQuote(b, name)
				b = append(b, ':')
				b = strconv.AppendInt(b, int64(len(m.value.items)-m.value.keep), 10)
			}
		}
		return append(b, '}')
	case '[':
		wrap := top && n.shortened()
		if wrap {
			b = append(b, `{"items":`...)
		}
		b = append(b, '[')
		b = append(b, bytes.Join(n.items[:n.keep], []byte(","))...)
		b = append(b, ']')
		if wrap {
			b = append(b, `,"omitted":`...)
			b = strconv.AppendInt(b, int64(len(n.items)-n.keep), 10)
			b = append(b, '}')
		}
		return b
	}
	return append(b, n.raw...)
}

// refFit is Fit by the naive reading, for compact input: drop the last item
// of the longest list, render, measure, until it fits or no list can lose
// another item. It returns false where Fit must fail with ErrTooLarge.
func refFit(in []byte, maxChars int) ([]byte, bool) {
	root, err := refParse(in)
	if err != nil {
		panic("refFit needs valid JSON: " + err.Error())
	}
	if out := root.render(nil, true); !bytes.Equal(out, in) {
		panic("refFit needs compact JSON")
	}
	lists := root.lists()
	for {
		out := root.render(nil, true)
		if utf8.RuneCount(out) <= maxChars {
			return out, true
		}
		var longest *refNode
		most := -1
		for _, l := range lists {
			if l.keep < 2 {
				continue
			}
			if c := utf8.RuneCount(l.render(nil, false)); c > most {
				longest, most = l, c
			}
		}
		if longest == nil {
			return nil, false
		}
		longest.keep--
	}
}
