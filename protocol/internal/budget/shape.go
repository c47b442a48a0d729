package budget

import (
	"bytes"
	"io"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/median-go/median/internal/base/chars"
)

// decodeOptions accept what encoding/json's Valid accepts.
var decodeOptions = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// shape is what one pass over the input learns: the lists Fit may shorten,
// where they are, and how many characters everything takes.
type shape struct {
	raw     []byte
	chars   int       // characters of raw
	lists   []*list   // lists Fit may shorten, in the order they start
	holders []*holder // holders of those lists
}

// span is a piece of raw: raw[start:end].
type span struct{ start, end int }

// item is where one list item ends and how many characters the list holds
// from just after its '[' up to that end.
type item struct{ end, chars int }

// list is one list Fit may shorten.
type list struct {
	open   int     // offset of its '['
	items  []item  // one per item
	tail   int     // characters after the last item, up to and with ']'
	close  int     // offset just past its ']'
	name   span    // its member name, quoted; empty for the top-level list
	holder *holder // the object that holds it (a made-up one for the top level)
	index  int     // position in shape.lists
	keep   int     // items kept; starts at len(items)

	// count names, quoted (see names.go)
	single, multi []byte
	singleChars   int
	multiChars    int
}

// holder is an object holding lists Fit may shorten, or the made-up object
// a shortened top-level list is wrapped in.
type holder struct {
	insert int     // where counts go: just past its last member's value
	names  []span  // its member names, quoted
	lists  []*list // the lists it holds, in order
	parent *holder // the object holding it; nil at the top
	name   span    // its member name in parent
	top    bool    // the made-up wrapper of a top-level list

	// running totals while trimming (see trim.go)
	shortened int // lists shortened
	sumMulti  int // characters of their counts under their "omitted_..." names
	sumDelta  int // single-name minus multi-name characters, summed
}

// readShape reads raw, which must be one JSON value of chars characters,
// and finds its lists.
func readShape(raw []byte, chars int) (*shape, error) {
	r := &reader{dec: jsontext.NewDecoder(bytes.NewBuffer(raw), decodeOptions...), s: &shape{raw: raw, chars: chars}}
	var err error
	switch r.dec.PeekKind() {
	case '{':
		err = r.object(nil, span{})
	case '[':
		err = r.list(&holder{top: true}, span{})
	default:
		_, err = r.dec.ReadValue()
	}
	if err != nil {
		return nil, err
	}
	if _, err := r.dec.ReadToken(); err != io.EOF {
		if err == nil {
			return nil, errMoreThanOne
		}
		return nil, err
	}
	return r.s, nil
}

// countChars counts characters by the module's one rule (internal/base/chars).
func countChars(b []byte) int { return chars.Count(b) }

// reader walks the input with a jsontext decoder.
type reader struct {
	dec *jsontext.Decoder
	s   *shape
}

// offset is the decoder's offset just past what it last read.
func (r *reader) offset() int { return int(r.dec.InputOffset()) }

// object reads an object, its lists and the objects inside it.
func (r *reader) object(parent *holder, name span) error {
	if _, err := r.dec.ReadToken(); err != nil {
		return err
	}
	h := &holder{parent: parent, name: name}
	for r.dec.PeekKind() != '}' {
		// A name is read as a value: its quoted bytes, without a copy.
		n, err := r.dec.ReadValue()
		if err != nil {
			return err
		}
		member := span{r.offset() - len(n), r.offset()}
		h.names = append(h.names, member)
		switch r.dec.PeekKind() {
		case '{':
			err = r.object(h, member)
		case '[':
			err = r.list(h, member)
		default:
			_, err = r.dec.ReadValue()
		}
		if err != nil {
			return err
		}
		h.insert = r.offset()
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return err
	}
	if len(h.lists) > 0 {
		r.s.holders = append(r.s.holders, h)
	}
	return nil
}

// list reads a list item by item, without looking inside the items.
func (r *reader) list(h *holder, name span) error {
	if _, err := r.dec.ReadToken(); err != nil {
		return err
	}
	l := &list{open: r.offset() - 1, name: name, holder: h, index: len(r.s.lists)}
	prev, chars := r.offset(), 0
	for r.dec.PeekKind() != ']' {
		if _, err := r.dec.ReadValue(); err != nil {
			return err
		}
		end := r.offset()
		chars += countChars(r.s.raw[prev:end])
		l.items = append(l.items, item{end, chars})
		prev = end
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return err
	}
	l.close = r.offset()
	l.tail = countChars(r.s.raw[prev:l.close])
	l.keep = len(l.items)
	r.s.lists = append(r.s.lists, l)
	h.lists = append(h.lists, l)
	if h.top {
		h.insert = l.close
		r.s.holders = append(r.s.holders, h)
	}
	return nil
}
