package schema

import (
	"encoding"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
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
	// The decoder calls these methods instead of reading a struct's fields.
	unmarshalerType     = reflect.TypeFor[jsonv2.Unmarshaler]()
	unmarshalerFromType = reflect.TypeFor[jsonv2.UnmarshalerFrom]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	timeType            = reflect.TypeOf(time.Time{})
	urlType             = reflect.TypeOf(url.URL{})
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
//   - Property names follow the decoder BindInput uses
//     (github.com/go-json-experiment/json, encoding/json/v2): `json` tag
//     names, `json:"-"` skips a field, unexported fields are skipped, and
//     fields of embedded structs are promoted. Tags with which the decoder
//     would read what the schema does not describe are errors.
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
//     keys JSON cannot encode) are errors naming the field path and Go type.
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

	out, err = s.MarshalJSON()
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
	t, err := deref(t, path)
	if err != nil {
		return err
	}
	if err := notRecursive(t, path, stack, "refers back to it"); err != nil {
		return err
	}
	// invopop follows JSONSchemaAlias and stops at JSONSchema providers.
	if t.Kind() != reflect.Interface && t.Implements(aliaserType) {
		return walkAlias(t, s, path, stack)
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
		return walkList(t, s, path, stack)
	case reflect.Map:
		return walkMap(t, s, path, stack)
	case reflect.Struct:
		return walkStruct(t, s, path, stack)
	}
	return nil
}

// deref returns the type a chain of pointers to t ends at, refusing a
// pointer type that points to itself.
func deref(t reflect.Type, path string) (reflect.Type, error) {
	for t.Kind() == reflect.Pointer {
		if t.Elem() == t {
			return nil, fmt.Errorf("schema: field %q of type %s is a pointer to itself and cannot be described in JSON Schema", displayPath(path), t)
		}
		t = t.Elem()
	}
	return t, nil
}

// notRecursive refuses a struct, slice, array or map type t that stack
// (the types being expanded) holds already: the field at path, which how
// says how, leads back to it.
func notRecursive(t reflect.Type, path string, stack []reflect.Type, how string) error {
	switch t.Kind() {
	case reflect.Struct, reflect.Slice, reflect.Array, reflect.Map:
	default:
		return nil
	}
	for _, seen := range stack {
		if seen == t {
			return fmt.Errorf("schema: type %s is recursive (field %q %s); recursive types cannot be described by an inlined JSON Schema", t, displayPath(path), how)
		}
	}
	return nil
}

// walkAlias walks what t's JSONSchemaAlias stands for, in the checking
// pass only: the alias may describe anything, so there is nothing to fix.
func walkAlias(t reflect.Type, s *jsonschema.Schema, path string, stack []reflect.Type) error {
	if s != nil {
		return nil
	}
	alias := reflect.New(t).Elem().Interface().(jsonSchemaAliaser).JSONSchemaAlias()
	if alias == nil {
		return nil
	}
	return walk(reflect.TypeOf(alias), nil, path, stack)
}

// walkList walks the elements of slice or array type t; a []byte is a
// base64 string, with nothing inside to walk.
func walkList(t reflect.Type, s *jsonschema.Schema, path string, stack []reflect.Type) error {
	if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
		return nil
	}
	var items *jsonschema.Schema
	if s != nil {
		if items = s.Items; items == nil {
			return nil
		}
	}
	return walk(t.Elem(), items, path+"[]", append(stack, t))
}

// walkMap refuses a map whose keys cannot be JSON object keys, and walks
// its values.
func walkMap(t reflect.Type, s *jsonschema.Schema, path string, stack []reflect.Type) error {
	if k := t.Key(); !jsonKey(k) {
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
}

// jsonKey reports whether values of k can be JSON object keys: strings,
// integers, and text marshalers.
func jsonKey(k reflect.Type) bool {
	kind := k.Kind()
	return kind == reflect.String ||
		kind >= reflect.Int && kind <= reflect.Uint64 && kind != reflect.Uintptr ||
		k.Implements(textMarshalerType)
}

// walkStruct walks the fields of struct type t; in the checking pass it
// also asks the decoder whether it accepts t. time.Time and url.URL are
// strings.
func walkStruct(t reflect.Type, s *jsonschema.Schema, path string, stack []reflect.Type) error {
	if t == timeType || t == urlType {
		return nil
	}
	if err := walkFields(t, s, path, append(stack, t), false, map[string]string{}); err != nil || s != nil {
		return err
	}
	return decoderAccepts(t, path)
}

// walkFields visits the fields of struct type t, promoting embedded structs
// into the same schema s. viaPointer is true when t is reached through an
// embedded pointer, in which case its promoted fields are optional.
//
// names holds the JSON names of the object's fields seen so far (name → Go
// field path), promoted ones included.
func walkFields(t reflect.Type, s *jsonschema.Schema, path string, stack []reflect.Type, viaPointer bool, names map[string]string) error {
	for i := 0; i < t.NumField(); i++ {
		if err := walkField(t.Field(i), s, path, stack, viaPointer, names); err != nil {
			return err
		}
	}
	return nil
}

// walkField visits field f of the struct at path (see walkFields): in the
// checking pass it checks f's tags and that its JSON name is the object's
// only one; an embedded struct's fields are walked into s; another field
// is walked with its property's schema, and taken out of s's required
// list when it is optional.
func walkField(f reflect.StructField, s *jsonschema.Schema, path string, stack []reflect.Type, viaPointer bool, names map[string]string) error {
	fpath := joinPath(path, f.Name)
	if s == nil {
		if err := checkTags(f, fpath); err != nil {
			return err
		}
	}
	name, embed, explicitRequired, ok := fieldName(f)
	switch {
	case !ok:
		return nil
	case embed:
		return walkEmbedded(f, s, fpath, stack, viaPointer, names)
	}
	if s == nil {
		if other, dup := names[name]; dup {
			return fmt.Errorf("schema: fields %q and %q both have the JSON name %q; the decoder reads only one of them (the shallower, or refuses the type) and the schema could describe the other: give one a different json name", other, fpath, name)
		}
		names[name] = fpath
		return walk(f.Type, nil, fpath, stack)
	}
	if s.Properties == nil {
		return nil
	}
	prop, found := s.Properties.Get(name)
	if !found {
		return nil
	}
	if optional := viaPointer || f.Type.Kind() == reflect.Pointer; optional && !explicitRequired {
		s.Required = remove(s.Required, name)
	}
	return walk(f.Type, prop, fpath, stack)
}

// walkEmbedded walks the fields of the struct f embeds (through pointers
// or not) into the same schema s, refusing one that embeds itself.
func walkEmbedded(f reflect.StructField, s *jsonschema.Schema, fpath string, stack []reflect.Type, viaPointer bool, names map[string]string) error {
	et, ptr := f.Type, false
	for et.Kind() == reflect.Pointer {
		et, ptr = et.Elem(), true
	}
	if err := notRecursive(et, fpath, stack, "embeds it"); err != nil {
		return err
	}
	return walkFields(et, s, fpath, append(stack, et), viaPointer || ptr, names)
}

// checkTags refuses the struct tags with which the decoder BindInput uses
// (github.com/go-json-experiment/json, encoding/json/v2) would read a value
// the inferred schema does not describe. Tags the decoder refuses outright
// ("-,", quoted or malformed names, options on an embedded struct) are
// refused by decoderAccepts.
func checkTags(f reflect.StructField, fpath string) error {
	jsonTag, hasJSON := f.Tag.Lookup("json")
	opts := strings.Split(jsonTag, ",")[1:]
	fail := func(format string, a ...any) error {
		return fmt.Errorf("schema: field %q: "+format, append([]any{displayPath(fpath)}, a...)...)
	}
	for _, opt := range opts {
		switch {
		case opt == "inline":
			return fail("the json tag option \"inline\" is one the decoder ignores: it would decode the field from its own key while the schema describes its fields at this level; embed the struct without a json name to flatten it, or drop \"inline\"")
		case opt == "embed":
			return fail("the json tag option \"embed\" makes the decoder read the field's members at this level while the schema describes the field under its own key; embed the struct without a json name instead")
		case opt == "case:ignore":
			return fail("the json tag option \"case:ignore\" makes the decoder match keys without case (and without - and _), while the schema matches names exactly; drop it")
		case strings.HasPrefix(opt, "format:"):
			return fail("the json tag option %q changes how the decoder reads the value, which the schema does not describe; drop it", opt)
		case opt == "string" && !isNumber(f.Type):
			return fail("the json tag option \"string\" applies only to numbers for the decoder, which refuses it on a %s field; drop it", f.Type)
		case opt == "string" && f.Tag.Get("jsonschema") != "":
			return fail("the json tag option \"string\" makes the schema describe a string, so the constraints in its jsonschema tag would not be checked; drop \"string\" or the constraints")
		}
	}
	if schemaTag := f.Tag.Get("jsonschema"); strings.Split(schemaTag, ",")[0] == "-" && !(hasJSON && jsonTag == "-") && (f.IsExported() || f.Anonymous) && decodable(f.Type) {
		return fail("jsonschema tag \"-\" leaves the field out of the schema, but the decoder still reads it; add `json:\"-\"` too, or remove the jsonschema \"-\"")
	}
	return nil
}

// isNumber reports whether t is a Go number, or a pointer to one.
func isNumber(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() >= reflect.Int && t.Kind() <= reflect.Float64 && t.Kind() != reflect.Uintptr
}

// decodable reports whether the decoder can decode a JSON value into t (it
// fails on chan, func, complex and unsafe.Pointer, so a key for such a
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

// decoderAccepts asks the decoder whether it can decode into struct type t
// at all: it refuses, for every input, a struct whose tags it cannot read
// ("-,", a quoted name), two fields with one name, a tag on an unexported
// field, options on an embedded struct, or no exported field. A type that
// decodes itself is left to its method.
func decoderAccepts(t reflect.Type, path string) error {
	p := reflect.PointerTo(t)
	if p.Implements(unmarshalerType) || p.Implements(unmarshalerFromType) || p.Implements(textUnmarshalerType) {
		return nil
	}
	err := jsonv2.Unmarshal([]byte("{}"), reflect.New(t).Interface())
	if err == nil {
		return nil
	}
	var se *jsonv2.SemanticError
	if errors.As(err, &se) && se.Err != nil {
		err = se.Err
	}
	if path == "" {
		return fmt.Errorf("schema: type %s: the decoder refuses it: %w", t, err)
	}
	return fmt.Errorf("schema: field %q of type %s: the decoder refuses the type: %w", displayPath(path), t, err)
}

// fieldName mirrors invopop's field naming (which mirrors the decoder's). It
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
