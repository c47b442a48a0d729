package schema

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fastType is a tool input using every tag the quick check covers.
type fastType struct {
	OrderID  string            `json:"orderId" jsonschema:"minLength=1,maxLength=12,pattern=^[A-Z]-[0-9]+$"`
	Priority string            `json:"priority,omitempty" jsonschema:"enum=low,enum=normal,enum=high"`
	Quantity int               `json:"quantity" jsonschema:"minimum=1,maximum=1000"`
	Ratio    float64           `json:"ratio,omitempty" jsonschema:"exclusiveMinimum=0,exclusiveMaximum=1"`
	Lines    []fastLine        `json:"lines" jsonschema:"minItems=1,maxItems=3"`
	Labels   map[string]string `json:"labels,omitempty"`
	Nick     *string           `json:"nick,omitempty" jsonschema:"nullable"`
	Gift     bool              `json:"gift,omitempty"`
	Note     string            `json:"note,omitempty" jsonschema:"maxLength=5"`
}

type fastLine struct {
	SKU   string  `json:"sku" jsonschema:"minLength=1"`
	Price float64 `json:"price" jsonschema:"minimum=0.5"`
}

// fastSchemaDocs are the schema documents the quick check is tried on: one
// inferred from fastType ("inferred"), and the hand-written fastDocs with
// the edges of each keyword and keywords it leaves to the full validator.
func fastSchemaDocs(t testing.TB) map[string]string {
	t.Helper()
	raw, err := Infer(reflect.TypeOf(fastType{}))
	require.NoError(t, err)
	docs := map[string]string{"inferred": string(raw)}
	for name, doc := range fastDocs {
		docs[name] = doc
	}
	return docs
}

// fastSchemas compiles fastSchemaDocs.
func fastSchemas(t testing.TB) map[string]*Schema {
	t.Helper()
	out := map[string]*Schema{}
	for name, doc := range fastSchemaDocs(t) {
		out[name] = mustCompile(t, doc)
	}
	return out
}

// fastDocs are the hand-written schemas of fastSchemaDocs.
var fastDocs = map[string]string{
	"order": orderSchema,
	"edges": `{"type":"object","properties":{
			"big":{"type":"integer","maximum":9007199254740993},
			"tiny":{"type":"number","minimum":0.1,"exclusiveMaximum":0.30000000000000004},
			"exact":{"type":"integer","minimum":-5,"maximum":5},
			"word":{"const":"yes"},
			"both":{"const":"a","enum":["a","b"]},
			"any":{},
			"none":false,
			"typed":{"type":["string","integer"]},
			"closed":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false},
			"dict":{"type":"object","additionalProperties":{"type":"integer"}},
			"unique":{"type":"array","uniqueItems":false,"items":{"type":"boolean"}},
			"emoji":{"type":"string","minLength":2,"maxLength":2,"pattern":"^\\p{So}+$"}},
			"required":["exact"]}`,
	"opaque": `{"type":"object","$defs":{"x":{"type":"string"}},"properties":{
			"when":{"type":"string","format":"date"},
			"ref":{"$ref":"#/$defs/x"},
			"either":{"anyOf":[{"type":"string"},{"type":"integer"}]},
			"step":{"type":"number","multipleOf":0.5},
			"set":{"type":"array","uniqueItems":true},
			"num":{"enum":[1,2]},
			"pp":{"type":"object","patternProperties":{"^x":{"type":"string"}}}}}`,
	"old draft": `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":"string"}}}`,
}

// fastCases are inputs per schema: sure says whether the quick check must
// find the input valid by itself (true) or leave it to the full validator.
var fastCases = []struct {
	schema, name, input string
	sure                bool
}{
	{"inferred", "typical", `{"orderId":"A-1","quantity":3,"lines":[{"sku":"x","price":0.5}]}`, true},
	{"inferred", "every field", `{"orderId":"B-22","priority":"high","quantity":1000,"ratio":0.25,"lines":[{"sku":"x","price":1},{"sku":"y","price":2.5e1}],"labels":{"a":"b"},"nick":null,"gift":true,"note":"héllo","extra":[1,{"x":null}]}`, true},
	{"inferred", "nullable given", `{"orderId":"A-1","quantity":1,"lines":[{"sku":"x","price":1}],"nick":"ada"}`, true},
	{"inferred", "escapes and space", " {\n\"orderId\" : \"A-1\", \"quantity\":1,\"lines\":[{\"sku\":\"\\u0078\\n\",\"price\":1}], \"note\":\"a\\\"b\"}\t", true},
	{"inferred", "quantity on its bounds", `{"orderId":"A-1","quantity":1,"lines":[{"sku":"x","price":0.5}]}`, true},
	{"inferred", "missing required", `{"orderId":"A-1","lines":[{"sku":"x","price":1}]}`, false},
	{"inferred", "missing nested required", `{"orderId":"A-1","quantity":1,"lines":[{"sku":"x"}]}`, false},
	{"inferred", "pattern", `{"orderId":"a-1","quantity":1,"lines":[{"sku":"x","price":1}]}`, false},
	{"inferred", "enum", `{"orderId":"A-1","priority":"urgent","quantity":1,"lines":[{"sku":"x","price":1}]}`, false},
	{"inferred", "enum wants a string", `{"orderId":"A-1","priority":{},"quantity":1,"lines":[{"sku":"x","price":1}]}`, false},
	{"inferred", "below minimum", `{"orderId":"A-1","quantity":0,"lines":[{"sku":"x","price":1}]}`, false},
	{"inferred", "above maximum", `{"orderId":"A-1","quantity":1001,"lines":[{"sku":"x","price":1}]}`, false},
	{"inferred", "exclusive bound", `{"orderId":"A-1","quantity":1,"ratio":1,"lines":[{"sku":"x","price":1}]}`, false},
	{"inferred", "exclusive zero", `{"orderId":"A-1","quantity":1,"ratio":0,"lines":[{"sku":"x","price":1}]}`, false},
	{"inferred", "decimal minimum", `{"orderId":"A-1","quantity":1,"lines":[{"sku":"x","price":0.49999999999999999999}]}`, false},
	{"inferred", "too few items", `{"orderId":"A-1","quantity":1,"lines":[]}`, false},
	{"inferred", "too many items", `{"orderId":"A-1","quantity":1,"lines":[{"sku":"x","price":1},{"sku":"x","price":1},{"sku":"x","price":1},{"sku":"x","price":1}]}`, false},
	{"inferred", "max length in runes", `{"orderId":"A-1","quantity":1,"lines":[{"sku":"x","price":1}],"note":"héllo!"}`, false},
	{"inferred", "integer written 1.0", `{"orderId":"A-1","quantity":1.0,"lines":[{"sku":"x","price":1}]}`, false},
	{"inferred", "integer written 1e2", `{"orderId":"A-1","quantity":1e2,"lines":[{"sku":"x","price":1}]}`, false},
	{"inferred", "wrong type", `{"orderId":"A-1","quantity":"1","lines":[{"sku":"x","price":1}]}`, false},
	{"inferred", "map value type", `{"orderId":"A-1","quantity":1,"lines":[{"sku":"x","price":1}],"labels":{"a":1}}`, false},
	{"inferred", "duplicate key, last one bad", `{"orderId":"A-1","quantity":1,"quantity":0,"lines":[{"sku":"x","price":1}]}`, false},
	{"inferred", "invalid UTF-8", "{\"orderId\":\"A-1\",\"quantity\":1,\"lines\":[{\"sku\":\"\xff\",\"price\":1}]}", false},
	{"inferred", "not JSON", `{"orderId":"A-1",}`, false},
	{"inferred", "trailing data", `{"orderId":"A-1","quantity":1,"lines":[{"sku":"x","price":1}]} {}`, false},
	{"inferred", "leading zero", `{"orderId":"A-1","quantity":01,"lines":[{"sku":"x","price":1}]}`, false},
	{"inferred", "not an object", `[1]`, false},
	{"edges", "exact bound", `{"exact":-5}`, true},
	{"edges", "big integer on its bound (compared exactly)", `{"exact":0,"big":9007199254740993}`, true},
	{"edges", "big integer over its bound", `{"exact":0,"big":9007199254740994}`, false},
	{"edges", "float on a rounded bound", `{"exact":0,"tiny":0.30000000000000004}`, false},
	{"edges", "float under a rounded bound", `{"exact":0,"tiny":0.3}`, true},
	{"edges", "const", `{"exact":0,"word":"yes"}`, true},
	{"edges", "const, wrong", `{"exact":0,"word":"no"}`, false},
	{"edges", "const and enum: in the enum, not the const", `{"exact":0,"both":"b"}`, false},
	{"edges", "true schema", `{"exact":0,"any":[{"deep":[[[]]]}]}`, true},
	{"edges", "false schema", `{"exact":0,"none":1}`, false},
	{"edges", "type list", `{"exact":0,"typed":7}`, true},
	{"edges", "type list, wrong", `{"exact":0,"typed":true}`, false},
	{"edges", "closed object", `{"exact":0,"closed":{"a":"x"}}`, true},
	{"edges", "closed object, unknown key", `{"exact":0,"closed":{"b":"x"}}`, false},
	{"edges", "dictionary", `{"exact":0,"dict":{"a":1,"b":-2}}`, true},
	{"edges", "uniqueItems false", `{"exact":0,"unique":[true,true]}`, true},
	{"edges", "emoji", `{"exact":0,"emoji":"🙂🙃"}`, true},
	{"edges", "number too big for float64", `{"exact":1e400}`, false},
	{"edges", "exponent math/big refuses, under float64's range", `{"exact":0,"tiny":1e-1000001}`, false},
	{"edges", "exponent math/big refuses, in an unconstrained value", `{"exact":0,"any":[1e1000001]}`, false},
	{"edges", "six-digit exponent math/big takes", `{"exact":0,"any":1.5e-999999}`, false},
	{"edges", "five-digit exponent", `{"exact":0,"tiny":1e-99999}`, false},
	{"edges", "exponent-looking text in a string", `{"exact":0,"any":"see e1234567"}`, true},
	{"edges", "exponent-looking text in a string nobody checks", `{"exact":0,"free":"see e1234567"}`, true},
	{"edges", "a 40-digit run in a string nobody checks", `{"exact":0,"free":"` + strings.Repeat("7", 40) + `"}`, true},
	{"edges", "a wild number nobody checks", `{"exact":0,"free":{"deep":[1e401]}}`, false},
	{"edges", "a duplicate key nobody checks", `{"exact":0,"free":[{"a":1,"a":2}]}`, false},
	{"edges", "a declared key twice", `{"exact":0,"exact":0}`, false},
	{"edges", "three-digit exponent", `{"exact":0,"typed":1e100}`, false},
	{"opaque", "without the opaque fields", `{"other":1}`, true},
	{"opaque", "format", `{"when":"2024-01-02"}`, false},
	{"opaque", "ref", `{"ref":"x"}`, false},
	{"opaque", "anyOf", `{"either":"x"}`, false},
	{"opaque", "multipleOf", `{"step":1.5}`, false},
	{"opaque", "uniqueItems", `{"set":[1,2]}`, false},
	{"opaque", "number enum", `{"num":1}`, false},
	{"opaque", "patternProperties", `{"pp":{"xa":"b"}}`, false},
	{"old draft", "another draft", `{"a":"x"}`, false},
}

// TestFastCheck checks which inputs the quick check settles alone, and that
// Validate always agrees with the full validator.
func TestFastCheck(t *testing.T) {
	schemas := fastSchemas(t)
	for _, tc := range fastCases {
		t.Run(tc.schema+"/"+tc.name, func(t *testing.T) {
			s := schemas[tc.schema]
			require.NotNil(t, s, tc.schema)
			full := s.validateFully([]byte(tc.input))
			sure := s.fast.fastCheck([]byte(tc.input))
			assert.Equal(t, tc.sure, sure, "quick check")
			if sure {
				assert.NoError(t, full, "the quick check accepted what the full validator refuses")
			}
			got := s.Validate([]byte(tc.input))
			if full == nil {
				assert.NoError(t, got)
			} else {
				assert.EqualError(t, got, full.Error())
			}
		})
	}
}

// TestFastCheckCoversInferredSchemas checks that inferred schemas of
// ordinary types have no opaque part, so their valid inputs never need the
// full validator.
func TestFastCheckCoversInferredSchemas(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeOf(fastType{}), reflect.TypeOf(fastLine{})} {
		raw, err := Infer(typ)
		require.NoError(t, err)
		s := mustCompile(t, string(raw))
		assert.False(t, opaqueAnywhere(s.fast), "%s: %s", typ, raw)
	}
}

func opaqueAnywhere(n *fastNode) bool {
	if n == nil {
		return false
	}
	if n.opaque || opaqueAnywhere(n.items) || opaqueAnywhere(n.extra) {
		return true
	}
	for _, p := range n.props {
		if opaqueAnywhere(p) {
			return true
		}
	}
	return false
}

// FuzzFastCheck holds the quick check to the full validator: whatever it
// finds valid for sure, the full validator must find valid.
func FuzzFastCheck(f *testing.F) {
	for _, tc := range fastCases {
		f.Add(tc.schema, []byte(tc.input))
	}
	schemas := fastSchemas(f)
	f.Fuzz(func(t *testing.T, schema string, input []byte) {
		s, ok := schemas[schema]
		if !ok {
			// Pick one by the name's length, so every schema gets inputs.
			names := []string{"inferred", "order", "edges", "opaque", "old draft"}
			s = schemas[names[len(schema)%len(names)]]
		}
		if s.fast.fastCheck(input) {
			if err := s.validateFully(input); err != nil {
				t.Fatalf("the quick check accepted %q, the full validator refuses it: %v", input, err)
			}
		}
	})
}

// FuzzFastCheckSchemas fuzzes the schema too: for any schema that
// compiles, whatever the quick check accepts, the full validator must.
func FuzzFastCheckSchemas(f *testing.F) {
	docs := fastSchemaDocs(f)
	for _, tc := range fastCases {
		f.Add([]byte(docs[tc.schema]), []byte(tc.input))
	}
	f.Fuzz(func(t *testing.T, doc, input []byte) {
		s, err := Compile(doc)
		if err != nil {
			return
		}
		if s.fast.fastCheck(input) {
			if err := s.validateFully(input); err != nil {
				t.Fatalf("schema %s: the quick check accepted %q, the full validator refuses it: %v", doc, input, err)
			}
		}
	})
}

// BenchmarkValidateTyped validates a 251-byte input against a schema
// inferred from a Go type: the quick check on the usual path, and the full
// validator it spares.
func BenchmarkValidateTyped(b *testing.B) {
	raw, err := Infer(reflect.TypeOf(fastType{}))
	require.NoError(b, err)
	s := mustCompile(b, string(raw))
	line := `{"sku":"SKU-0000-blue-large","price":12.5}`
	input := []byte(`{"orderId":"A-1001","priority":"high","quantity":12,"ratio":0.5,"lines":[` + strings.Repeat(line+",", 2) + line + `],"labels":{"gift":"yes","floor":"3"},"note":"hi"}`)
	for name, validate := range map[string]func([]byte) error{"impl=quick": s.Validate, "impl=full": s.validateFully} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(input)))
			for b.Loop() {
				if err := validate(input); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
