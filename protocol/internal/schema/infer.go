// Package schema infers JSON Schema (draft 2020-12) documents from Go types,
// compiles schema documents and validates tool inputs against them, turning
// validation failures into short, plain-English problems that an AI agent can
// read and act on.
package schema

import (
	"encoding"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/invopop/jsonschema"
)

// Interfaces that github.com/invopop/jsonschema honours (its own copies are
// unexported). A type implementing jsonSchemaProvider describes itself, so
// the type walk below does not descend into it.
type jsonSchemaProvider interface {
	JSONSchema() *jsonschema.Schema
}

type jsonSchemaAliaser interface {
	JSONSchemaAlias() any
}

var (
	providerType      = reflect.TypeOf((*jsonSchemaProvider)(nil)).Elem()
	aliaserType       = reflect.TypeOf((*jsonSchemaAliaser)(nil)).Elem()
	textMarshalerType = reflect.TypeOf((*encoding.TextMarshaler)(nil)).Elem()
	timeType          = reflect.TypeOf(time.Time{})
	urlType           = reflect.TypeOf(url.URL{})
)

// Infer returns the JSON Schema (draft 2020-12, as compact JSON bytes)
// describing t, which must be a struct (or pointer to struct) type.
//
// The root schema is always {"type":"object", ...} with "properties",
// "required" (omitted when empty) and no "$schema", "$id", "$ref" or "$defs":
// nested structs are inlined. Recursive types cannot be inlined and are
// reported as an error naming the type.
//
// Rules:
//   - Property names follow encoding/json: `json` tag names, `json:"-"`
//     skips a field, unexported fields are skipped, and fields of embedded
//     structs are promoted.
//   - A property is required unless its json tag has omitempty or omitzero,
//     or its Go type is a pointer (fields promoted through an embedded
//     pointer are optional too). `jsonschema:"required"` always makes a
//     property required.
//   - `jsonschema:"..."` and `jsonschema_description` tags are read by
//     github.com/invopop/jsonschema: description, enum, minimum, maximum,
//     exclusiveMinimum, exclusiveMaximum, minLength, maxLength, pattern,
//     default, minItems, maxItems, format, ...
//   - Objects never carry "additionalProperties": false, so unknown input
//     fields are tolerated.
//   - time.Time is {"type":"string","format":"date-time"}.
//   - chan, func, complex, uintptr and unsafe.Pointer fields (and maps with
//     keys encoding/json cannot encode) are errors naming the field path and
//     Go type.
//
// The output is deterministic: the same type always yields the same bytes.
func Infer(t reflect.Type) (out []byte, err error) {
	if t == nil {
		return nil, fmt.Errorf("schema: cannot infer a schema from a nil type")
	}
	root := t
	for root.Kind() == reflect.Pointer {
		root = root.Elem()
	}
	if root.Kind() != reflect.Struct {
		return nil, fmt.Errorf("schema: root type %s must be a struct (or pointer to struct) to be described as a JSON object", t)
	}
	if root == timeType {
		return nil, fmt.Errorf("schema: root type %s is encoded as a JSON string, not an object", t)
	}

	// First pass: reject what invopop would panic on or recurse forever on.
	if err := walk(root, nil, "", nil); err != nil {
		return nil, err
	}

	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("schema: cannot describe %s in JSON Schema: %v", t, r)
		}
	}()

	r := &jsonschema.Reflector{
		Anonymous:                 true, // no $id
		AllowAdditionalProperties: true, // unknown input fields are tolerated
		DoNotReference:            true, // inline everything, no $defs/$ref
		ExpandedStruct:            true, // root is the object itself
	}
	s := r.ReflectFromType(root)
	s.Version = ""
	s.ID = ""
	s.Definitions = nil

	// Second pass: apply the required rules invopop does not know about.
	if err := walk(root, s, "", nil); err != nil {
		return nil, err
	}

	out, err = json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("schema: encoding the schema of %s: %w", t, err)
	}
	return out, nil
}

// walk traverses t the way invopop's Reflector does.
//
// With s == nil it only checks that t can be described (no unsupported kinds,
// no recursion) and returns an error otherwise. With s != nil, s is the
// schema invopop produced for t and walk fixes up "required" lists.
//
// path is the Go field path used in error messages; stack holds the struct
// types currently being expanded, to detect recursion.
func walk(t reflect.Type, s *jsonschema.Schema, path string, stack []reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		if t.Elem() == t {
			return fmt.Errorf("schema: field %q of type %s is a pointer to itself and cannot be described in JSON Schema", displayPath(path), t)
		}
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Slice, reflect.Array, reflect.Map:
		for _, seen := range stack {
			if seen == t {
				return fmt.Errorf("schema: type %s is recursive (field %q refers back to it); recursive types cannot be described by an inlined JSON Schema", t, displayPath(path))
			}
		}
	}
	// invopop follows JSONSchemaAlias and stops at JSONSchema providers.
	if t.Kind() != reflect.Interface && t.Implements(aliaserType) {
		if s != nil {
			return nil // the alias may describe anything; nothing to fix
		}
		alias := reflect.New(t).Elem().Interface().(jsonSchemaAliaser).JSONSchemaAlias()
		if alias == nil {
			return nil
		}
		return walk(reflect.TypeOf(alias), nil, path, stack)
	}
	if t.Implements(providerType) {
		return nil
	}
	if s != nil && len(s.OneOf) > 0 && s.Type == "" {
		// `jsonschema:"nullable"` wraps the schema in oneOf [schema, null].
		s = s.OneOf[0]
	}

	switch t.Kind() {
	case reflect.Chan, reflect.Func, reflect.Complex64, reflect.Complex128,
		reflect.UnsafePointer, reflect.Uintptr, reflect.Invalid:
		return unsupported(path, t)

	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			return nil // []byte is a base64 string
		}
		var items *jsonschema.Schema
		if s != nil {
			if items = s.Items; items == nil {
				return nil
			}
		}
		return walk(t.Elem(), items, path+"[]", append(stack, t))

	case reflect.Map:
		k := t.Key()
		switch {
		case k.Kind() == reflect.String,
			k.Kind() >= reflect.Int && k.Kind() <= reflect.Uint64 && k.Kind() != reflect.Uintptr,
			k.Implements(textMarshalerType):
		default:
			return fmt.Errorf("schema: field %q of type %s cannot be described in JSON Schema: map keys of type %s cannot be encoded as JSON object keys", displayPath(path), t, k)
		}
		var elem *jsonschema.Schema
		if s != nil {
			elem = s.AdditionalProperties
			for _, p := range s.PatternProperties {
				elem = p
			}
			if elem == nil {
				return nil
			}
		}
		return walk(t.Elem(), elem, path+"[]", append(stack, t))

	case reflect.Struct:
		if t == timeType || t == urlType {
			return nil
		}
		return walkFields(t, s, path, append(stack, t), false, map[string]string{})
	}
	return nil
}

// walkFields visits the fields of struct type t, promoting embedded structs
// into the same schema s. viaPointer is true when t is reached through an
// embedded pointer, in which case its promoted fields are optional.
//
// names holds the JSON names of the object's fields seen so far (name → Go
// field path), promoted ones included.
func walkFields(t reflect.Type, s *jsonschema.Schema, path string, stack []reflect.Type, viaPointer bool, names map[string]string) error {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		fpath := joinPath(path, f.Name)
		if s == nil {
			if err := checkTags(f, fpath); err != nil {
				return err
			}
		}
		name, embed, explicitRequired, ok := fieldName(f)
		if !ok {
			continue
		}
		if s == nil && !embed {
			if other, dup := names[name]; dup {
				return fmt.Errorf("schema: fields %q and %q both have the JSON name %q; encoding/json reads only one of them (by Go's rules for promoted fields) and the schema could describe the other: give one a different json name", other, fpath, name)
			}
			names[name] = fpath
		}
		if embed {
			et := f.Type
			ptr := false
			for et.Kind() == reflect.Pointer {
				et, ptr = et.Elem(), true
			}
			for _, seen := range stack {
				if seen == et {
					return fmt.Errorf("schema: type %s is recursive (field %q embeds it); recursive types cannot be described by an inlined JSON Schema", et, displayPath(fpath))
				}
			}
			if err := walkFields(et, s, fpath, append(stack, et), viaPointer || ptr, names); err != nil {
				return err
			}
			continue
		}
		var prop *jsonschema.Schema
		if s != nil {
			if s.Properties == nil {
				continue
			}
			p, found := s.Properties.Get(name)
			if !found {
				continue
			}
			prop = p
			optional := viaPointer || f.Type.Kind() == reflect.Pointer
			if optional && !explicitRequired {
				s.Required = remove(s.Required, name)
			}
		}
		if err := walk(f.Type, prop, fpath, stack); err != nil {
			return err
		}
	}
	return nil
}

// checkTags refuses the struct tags with which encoding/json would read a
// value the inferred schema does not describe.
func checkTags(f reflect.StructField, fpath string) error {
	jsonTag, hasJSON := f.Tag.Lookup("json")
	opts := strings.Split(jsonTag, ",")
	name := opts[0]
	fail := func(format string, a ...any) error {
		return fmt.Errorf("schema: field %q: "+format, append([]any{displayPath(fpath)}, a...)...)
	}
	switch {
	case slices.Contains(opts[1:], "inline"):
		return fail("the json tag option \"inline\" is one encoding/json ignores: it would decode the field from its own key while the schema describes its fields at this level; embed the struct without a json name to flatten it, or drop \"inline\"")
	case name == "-" && len(opts) > 1:
		return fail("json tag %q names the key \"-\" for encoding/json, but the schema would leave the field out; write `json:\"-\"` to skip the field, or give it another name", jsonTag)
	case name != "" && name != "-" && !validJSONName(name):
		return fail("json name %q is one encoding/json does not accept (it would read the key %q instead); use letters, digits and !#$%%&()*+-./:;<=>?@[]^_{|}~ and space", name, f.Name)
	case slices.Contains(opts[1:], "string") && f.Tag.Get("jsonschema") != "":
		return fail("the json tag option \"string\" makes the schema describe a string, so the constraints in its jsonschema tag would not be checked; drop \"string\" or the constraints")
	}
	if schemaTag := f.Tag.Get("jsonschema"); strings.Split(schemaTag, ",")[0] == "-" && !(hasJSON && jsonTag == "-") && (f.IsExported() || f.Anonymous) && decodable(f.Type) {
		return fail("jsonschema tag \"-\" leaves the field out of the schema, but encoding/json still reads it; add `json:\"-\"` too, or remove the jsonschema \"-\"")
	}
	return nil
}

// decodable reports whether encoding/json can decode a JSON value into t
// (it fails on chan, func, complex and unsafe.Pointer, so a key for such a
// field is refused anyway).
func decodable(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Chan, reflect.Func, reflect.Complex64, reflect.Complex128, reflect.UnsafePointer:
		return false
	}
	return true
}

// validJSONName is encoding/json's rule for the name in a json tag.
func validJSONName(name string) bool {
	for _, c := range name {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// fieldName mirrors invopop's field naming (which mirrors encoding/json). It
// returns the property name, whether the field is an embedded struct whose
// fields are promoted, whether `jsonschema:"required"` is present, and false
// when the field does not appear in JSON at all.
func fieldName(f reflect.StructField) (name string, embed, required, ok bool) {
	jsonTags := strings.Split(f.Tag.Get("json"), ",")
	if jsonTags[0] == "-" {
		return "", false, false, false
	}
	schemaTags := strings.Split(f.Tag.Get("jsonschema"), ",")
	if schemaTags[0] == "-" {
		return "", false, false, false
	}
	for _, tag := range schemaTags {
		if tag == "required" {
			required = true
		}
	}
	if f.Anonymous && jsonTags[0] == "" {
		k := f.Type.Kind()
		if k == reflect.Struct || (k == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct) {
			return "", true, false, true
		}
	}
	if !f.Anonymous && !f.IsExported() {
		return "", false, false, false
	}
	name = f.Name
	if jsonTags[0] != "" {
		name = jsonTags[0]
	}
	return name, false, required, true
}

// joinPath appends a Go field name to a field path.
func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func unsupported(path string, t reflect.Type) error {
	return fmt.Errorf("schema: field %q of type %s cannot be described in JSON Schema", displayPath(path), t)
}

func displayPath(path string) string {
	if path == "" {
		return "(root)"
	}
	return path
}

func remove(list []string, name string) []string {
	out := list[:0]
	for _, v := range list {
		if v != name {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
