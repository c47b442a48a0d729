package protocol

import (
	"bytes"
	"io"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// decodeUsual reads the usual tool call straight off the decoder's tokens
// into f, without reflection: every known field of the kind the contract
// gives it, names unescaped, no op. It reports false for anything else
// (a null, a field of another kind, an escaped name, a name given twice,
// an op, bad JSON), and decodeAny then reads the body and explains it.
// What it reports true for, decodeAny decodes to the same fields:
// FuzzDecodeUsual holds the two together.
//
// The decoder is the same jsontext one that jsonv2.Unmarshal runs, with
// the same options, so syntax, UTF-8 and repeated names are checked alike,
// inside the input and unknown fields too.
func decodeUsual(body []byte, f *bodyFields) bool {
	d := usualDecoders.Get().(*usualDecoder)
	d.buf = *bytes.NewBuffer(body)
	d.dec.Reset(&d.buf)
	d.text, d.strings = d.text[:0], d.strings[:0]
	ok := d.readCall(f)
	if ok {
		text := string(d.text) // one allocation for all the call's strings
		for _, s := range d.strings {
			*f.stringOf(s.field) = text[s.start:s.end]
		}
	}
	d.buf = bytes.Buffer{} // let the pool's decoder forget the body
	d.dec.Reset(&d.buf)
	if cap(d.text) > 4<<10 {
		d.text = nil
	}
	usualDecoders.Put(d)
	return ok
}

// usualDecoder is a jsontext decoder reading a body in place (it does not
// copy a bytes.Buffer), pooled so that a call allocates none, and the
// call's strings, unquoted one after another in text.
type usualDecoder struct {
	buf     bytes.Buffer
	dec     jsontext.Decoder
	text    []byte
	strings []textString
}

// textString is where a string field lies in usualDecoder.text.
type textString struct {
	field      field
	start, end int
}

var usualDecoders = sync.Pool{New: func() any { return new(usualDecoder) }}

func (d *usualDecoder) readCall(f *bodyFields) bool {
	ok := d.readObject(func(name []byte) bool {
		switch string(name) {
		case `"tool"`:
			return d.readString(f, fieldTool)
		case `"toolCallId"`:
			return d.readString(f, fieldToolCallID)
		case `"input"`:
			return d.readSpan(&f.input)
		case `"context"`:
			return d.readContext(f)
		case `"op"`:
			return false
		}
		return d.skip(name)
	})
	if !ok {
		return false
	}
	_, err := d.dec.ReadToken()
	return err == io.EOF // nothing but white space after the object
}

func (d *usualDecoder) readContext(f *bodyFields) bool {
	f.given |= fieldContext
	return d.readObject(func(name []byte) bool {
		switch string(name) {
		case `"conversationId"`:
			return d.readString(f, fieldConversationID)
		case `"risk"`:
			return d.readString(f, fieldRisk)
		case `"approvedBy"`:
			return d.readString(f, fieldApprovedBy)
		case `"visitor"`:
			return d.readVisitor(f)
		}
		return d.skip(name)
	})
}

func (d *usualDecoder) readVisitor(f *bodyFields) bool {
	f.given |= fieldVisitor
	return d.readObject(func(name []byte) bool {
		switch string(name) {
		case `"verified"`:
			f.given |= fieldVerified
			return d.readBool(&f.verified)
		case `"externalId"`:
			return d.readString(f, fieldExternalID)
		case `"email"`:
			return d.readString(f, fieldEmail)
		case `"name"`:
			return d.readString(f, fieldName)
		}
		return d.skip(name)
	})
}

// readObject reads an object, calling member for each name (quoted, as
// written) with the decoder before its value, which member must read.
func (d *usualDecoder) readObject(member func(name []byte) bool) bool {
	if d.dec.PeekKind() != '{' {
		return false
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return false
	}
	for d.dec.PeekKind() == '"' {
		name, err := d.dec.ReadValue()
		if err != nil || !member(name) {
			return false
		}
	}
	tok, err := d.dec.ReadToken()
	return err == nil && tok.Kind() == '}'
}

// skip reads the value of an unknown name; a name written with an escape
// might spell a known one, which decodeAny decides.
func (d *usualDecoder) skip(name []byte) bool {
	return bytes.IndexByte(name, '\\') < 0 && d.dec.SkipValue() == nil
}

func (d *usualDecoder) readString(f *bodyFields, one field) bool {
	if d.dec.PeekKind() != '"' {
		return false
	}
	v, err := d.dec.ReadValue()
	if err != nil {
		return false
	}
	start := len(d.text)
	if q := v[1 : len(v)-1]; bytes.IndexByte(q, '\\') < 0 {
		d.text = append(d.text, q...)
	} else if d.text, err = jsontext.AppendUnquote(d.text, v); err != nil {
		return false
	}
	d.strings = append(d.strings, textString{one, start, len(d.text)})
	f.given |= one
	return true
}

func (d *usualDecoder) readBool(b *bool) bool {
	switch d.dec.PeekKind() {
	case 't', 'f':
		tok, err := d.dec.ReadToken()
		*b = err == nil && tok.Bool()
		return err == nil
	}
	return false
}

func (d *usualDecoder) readSpan(s *rawSpan) bool {
	if d.dec.PeekKind() != '{' {
		return false
	}
	return s.UnmarshalJSONFrom(&d.dec) == nil
}
