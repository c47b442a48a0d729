package inspector

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// formProblem says why the page's form cannot be built from schema, ""
// when it can. The form shows objects with properties, strings (enum,
// pattern, length, format), integers and numbers (bounds), booleans, and
// arrays of any of these; a schema using anything else is edited as raw
// JSON, and this says what and where.
func formProblem(schema json.RawMessage) string {
	if len(bytes.TrimSpace(schema)) == 0 {
		return "the tool declares no input schema"
	}
	var doc any
	if err := json.Unmarshal(schema, &doc); err != nil {
		return "the input schema is not JSON: " + err.Error()
	}
	root, ok := doc.(map[string]any)
	if !ok || root["type"] != "object" {
		return `the input schema's root is not {"type": "object", …}`
	}
	return walkForm(root, "")
}

// unformable are the keywords the form does not show.
var unformable = []string{"$ref", "$dynamicRef", "oneOf", "anyOf", "allOf", "not", "if", "then", "else", "patternProperties", "prefixItems", "dependentSchemas", "unevaluatedProperties", "contains"}

// walkForm checks one schema node at JSON Pointer path.
func walkForm(node map[string]any, path string) string {
	where := path
	if where == "" {
		where = "the root"
	}
	for _, k := range unformable {
		if _, ok := node[k]; ok {
			return fmt.Sprintf("the form cannot show %q (at %s)", k, where)
		}
	}
	typ, ok := node["type"].(string)
	if !ok {
		if _, isList := node["type"].([]any); isList {
			return fmt.Sprintf("the form cannot show a value of several types (at %s)", where)
		}
		return fmt.Sprintf("the form needs a \"type\" (at %s)", where)
	}
	switch typ {
	case "string", "integer", "number", "boolean":
		return ""
	case "array":
		items, ok := node["items"].(map[string]any)
		if !ok {
			return fmt.Sprintf("the form needs the array's \"items\" as one schema (at %s)", where)
		}
		return walkForm(items, path+"/items")
	case "object":
		props, _ := node["properties"].(map[string]any)
		names := slices.Sorted(maps.Keys(props))
		for _, name := range names {
			p, ok := props[name].(map[string]any)
			if !ok {
				return fmt.Sprintf("property %q is not a schema object (at %s)", name, where)
			}
			if why := walkForm(p, path+"/properties/"+name); why != "" {
				return why
			}
		}
		return ""
	}
	return fmt.Sprintf("the form cannot show type %q (at %s)", typ, where)
}

// validate checks input (JSON text) against tool's schema, from the
// manifest last read, and returns what is wrong, nothing when it fits or
// the schema cannot be compiled (the endpoint then decides).
func (s *Server) validate(tool, input string) []string {
	s.mu.Lock()
	var schema json.RawMessage
	for _, t := range s.tools {
		if t.Name == tool {
			schema = t.InputSchema
		}
	}
	s.mu.Unlock()
	if strings.TrimSpace(input) == "" {
		input = "{}"
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(input))
	if err != nil {
		return []string{"the input is not valid JSON: " + err.Error()}
	}
	if len(schema) == 0 {
		return nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	const url = "urn:mediancheck:input"
	if c.AddResource(url, doc) != nil {
		return nil
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(sch.Validate(v), &verr) {
		return nil
	}
	var out []string
	leaves(verr, &out)
	return out
}

// printer writes validation messages in English.
var printer = message.NewPrinter(language.English)

// leaves appends the messages of e's innermost causes, each with the
// place in the input it is about.
func leaves(e *jsonschema.ValidationError, out *[]string) {
	if len(e.Causes) == 0 {
		at := "/" + strings.Join(e.InstanceLocation, "/")
		*out = append(*out, at+": "+e.ErrorKind.LocalizedString(printer))
		return
	}
	for _, c := range e.Causes {
		leaves(c, out)
	}
}
