package schema

import (
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// resourceURL is the name under which a schema document is registered with
// the compiler. It never reaches a message shown to callers.
const resourceURL = "urn:median:tool-input-schema"

// Schema is a compiled JSON Schema, safe for concurrent use. Compile once and
// call Validate as often as needed.
type Schema struct {
	compiled *jsonschema.Schema
	fast     *fastNode // the quick check for inputs valid for sure
	doc      any       // the schema document, decoded, for the key checks
}

// Compile compiles raw, a JSON Schema document. Draft 2020-12 is assumed when
// "$schema" is absent. The root schema must declare "type": "object", since a
// tool input is always a JSON object.
//
// The "format" keyword is asserted (not just an annotation): a time.Time
// field inferred as {"format":"date-time"} rejects "tomorrow" at validation
// time. Format checks only run for values whose schema has a format, so the
// cost is negligible.
//
// External references are not loaded: "$ref" may only point inside raw (or to
// the standard meta-schemas); anything else is a compile error. Regular
// expressions use Go's regexp (RE2) syntax.
//
// The returned error names what is wrong in plain words.
func Compile(raw []byte) (*Schema, error) {
	doc, keys, err := readJSON(raw, nil)
	if err != nil {
		return nil, fmt.Errorf("schema: the schema is not valid JSON: %s", jsonErrorText(err))
	}
	if probs := append(keys.twice, keys.wild...); len(probs) > 0 {
		return nil, fmt.Errorf("schema: the schema is not usable: %s", (&ValidationError{Problems: probs}).Error())
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schema: the root schema must be a JSON object with \"type\": \"object\", got %s", jsonKind(doc))
	}
	switch typ := obj["type"].(type) {
	case string:
		if typ != "object" {
			return nil, fmt.Errorf("schema: the root schema must have \"type\": \"object\" (tool input is a JSON object), got %q", typ)
		}
	case nil:
		return nil, errors.New("schema: the root schema must have \"type\": \"object\" (tool input is a JSON object), but \"type\" is missing")
	default:
		return nil, fmt.Errorf("schema: the root schema must have \"type\": \"object\" (tool input is a JSON object), got %s", jsonKind(typ))
	}

	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noLoader{})
	if err := c.AddResource(resourceURL, doc); err != nil {
		return nil, fmt.Errorf("schema: %s", cleanCompileError(err))
	}
	compiled, err := c.Compile(resourceURL)
	if err != nil {
		return nil, fmt.Errorf("schema: %s", cleanCompileError(err))
	}
	return &Schema{compiled: compiled, fast: compileFast(doc), doc: doc}, nil
}

// noLoader refuses to load any external document.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external reference %q is not supported; schemas must be self-contained", url)
}

// cleanCompileError turns a compiler error into a plain sentence without the
// internal resource URL.
func cleanCompileError(err error) string {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		var ve *jsonschema.ValidationError
		if errors.As(sve.Err, &ve) {
			probs := problemsFrom(ve, nil)
			parts := make([]string, len(probs))
			for i, p := range probs {
				parts[i] = p.text()
			}
			return "invalid schema: " + strings.Join(parts, "; ")
		}
		return "invalid schema: " + hideResource(sve.Err.Error())
	}
	var re *jsonschema.InvalidRegexError
	if errors.As(err, &re) {
		return fmt.Sprintf("invalid schema: pattern %q at %s is not a valid regular expression: %v", re.Regex, fragment(re.URL), re.Err)
	}
	var lue *jsonschema.LoadURLError
	if errors.As(err, &lue) {
		return "invalid schema: " + hideResource(lue.Err.Error())
	}
	return "invalid schema: " + hideResource(err.Error())
}

// fragment returns the JSON pointer part of a schema location, or "the root".
func fragment(loc string) string {
	if i := strings.IndexByte(loc, '#'); i >= 0 && i+1 < len(loc) {
		return loc[i+1:]
	}
	return "the root"
}

// hideResource removes the internal resource URL from a compiler message,
// keeping JSON pointers ("#/$defs/x") and external URLs, which help the
// schema author.
func hideResource(s string) string {
	s = strings.ReplaceAll(s, resourceURL+"#", "#")
	s = strings.ReplaceAll(s, "\""+resourceURL+"\"", "the schema")
	s = strings.ReplaceAll(s, "'"+resourceURL+"'", "the schema")
	return strings.ReplaceAll(s, resourceURL, "the schema")
}

// stripURLs removes every URL (and the internal resource name) from a
// validation message: an agent fixing its input has no use for them.
func stripURLs(s string) string {
	s = hideResource(s)
	s = urlPattern.ReplaceAllString(s, "")
	return strings.TrimSpace(s)
}
