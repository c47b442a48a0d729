package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/median-go/median/protocol/internal/schema"
)

// BindInput decodes the raw input into v (a pointer) with
// github.com/go-json-experiment/json: names match exactly, a name given
// twice is refused, numbers decode exactly into integer fields. The error
// is an *Error with code invalid_input naming the field.
//
// JSON Schema counts 5.0 and 1e2 as integers, so an input that passed the
// schema may carry them for an integer field; BindInput then decodes them as
// the integers they are. A field of encoding/json's json.Number type gets
// the number's literal.
func (c *Call) BindInput(v any) error {
	err := jsonv2.Unmarshal(c.RawInput, v)
	var se *jsonv2.SemanticError
	if errors.As(err, &se) && se.JSONKind == '0' {
		// A number the decoder refused: maybe a whole number written 5.0
		// for an integer field, or one for encoding/json's json.Number.
		raw := c.RawInput
		if whole, ok := wholeNumbersAsIntegers(raw); ok {
			raw = whole
		}
		err = jsonv2.Unmarshal(raw, v, v1Numbers)
	}
	if err != nil {
		return newError(CodeInvalidInput, describeDecodeError(err))
	}
	return nil
}

// v1Numbers decodes a number into encoding/json's json.Number, which the
// decoder does not know, as encoding/json does: the literal as written.
var v1Numbers = jsonv2.WithUnmarshalers(jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, n *json.Number) error {
	if dec.PeekKind() != '0' {
		return errors.ErrUnsupported
	}
	lit, err := dec.ReadValue()
	*n = json.Number(lit)
	return err
}))

// describeDecodeError turns a decoding error into one plain sentence
// naming the field.
func describeDecodeError(err error) string {
	var se *jsonv2.SemanticError
	var syn *jsontext.SyntacticError
	switch {
	case errors.As(err, &se) && se.GoType != nil:
		where := schema.PointerPath(se.JSONPointer)
		if where != "" {
			where += ": "
		}
		got := kindName(se.JSONKind)
		if se.JSONKind == '0' && len(se.JSONValue) > 0 {
			got += " " + truncate(string(se.JSONValue), 40)
		}
		switch {
		case se.Err == nil, errors.Is(se.Err, strconv.ErrSyntax):
			return fmt.Sprintf("%sexpected %s, got %s", where, jsonKind(se.GoType.Kind().String()), got)
		case errors.Is(se.Err, strconv.ErrRange):
			return fmt.Sprintf("%s%s is out of range for this field", where, got)
		}
		return where + se.Err.Error()
	case errors.Is(err, jsontext.ErrDuplicateName) && errors.As(err, &syn):
		return schema.PointerPath(syn.JSONPointer) + ": given twice; each key may appear once"
	case errors.As(err, &syn):
		return fmt.Sprintf("not valid JSON: %v at byte %d", syn.Err, syn.ByteOffset)
	}
	return err.Error()
}

// jsonKind names a Go kind the way a JSON reader would.
func jsonKind(kind string) string {
	switch kind {
	case "struct", "map":
		return "object"
	case "slice", "array":
		return "array"
	case "bool":
		return "boolean"
	case "string":
		return "string"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "integer"
	case "float32", "float64":
		return "number"
	}
	return kind
}

// wholeNumbersAsIntegers rewrites numbers such as 5.0 or 1e2 that are whole
// and fit in 64 bits as plain integers (5, 100), leaving every other byte as
// it is; larger ones could not go into an integer field anyway, and writing
// them out in full could take a great deal of memory. It reports false when
// nothing changed or raw is not valid JSON.
func wholeNumbersAsIntegers(raw []byte) ([]byte, bool) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(raw))
	var out []byte
	last := 0
	for {
		var err error
		switch dec.PeekKind() {
		case 0:
			if _, err := dec.ReadToken(); err != io.EOF || out == nil {
				return nil, false
			}
			return append(out, raw[last:]...), true
		case '{', '}', '[', ']':
			_, err = dec.ReadToken()
		case '0':
			var lit jsontext.Value
			if lit, err = dec.ReadValue(); err == nil {
				if whole, ok := wholeInteger(lit); ok {
					end := int(dec.InputOffset())
					out = append(append(out, raw[last:end-len(lit)]...), whole...)
					last = end
				}
			}
		default:
			_, err = dec.ReadValue()
		}
		if err != nil {
			return nil, false
		}
	}
}

// wholeInteger returns the number lit written as an integer, when it is
// written with a fraction or exponent, is whole and is under 2^64.
func wholeInteger(lit []byte) (string, bool) {
	if len(lit) > 40 || !bytes.ContainsAny(lit, ".eE") {
		return "", false
	}
	// |f| < 2^64 is checked before Int, which would build the whole number.
	f, ok := new(big.Float).SetPrec(256).SetString(string(lit))
	if !ok || !f.IsInt() || f.MantExp(nil) > 64 {
		return "", false
	}
	i, _ := f.Int(nil)
	return i.String(), true
}
