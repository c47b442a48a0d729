package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		wantErr string
	}{
		{"not json", `{"type":`, "schema: the schema is not valid JSON"},
		{"trailing garbage", `{"type":"object"} x`, "schema: the schema is not valid JSON"},
		{"boolean schema", `true`, `root schema must be a JSON object with "type": "object", got a boolean`},
		{"array root", `{"type":"array"}`, `root schema must have "type": "object" (tool input is a JSON object), got "array"`},
		{"missing type", `{"properties":{}}`, `"type" is missing`},
		{"type list", `{"type":["object","null"]}`, `got an array`},
		{"invalid keyword value", `{"type":"object","properties":{"a":{"minLength":"x"}}}`, "schema: invalid schema: properties.a.minLength: expected integer, got string"},
		{"bad type name", `{"type":"object","properties":{"a":{"type":"strin"}}}`, "schema: invalid schema: properties.a.type:"},
		{"bad regex", `{"type":"object","properties":{"a":{"type":"string","pattern":"(?=x)"}}}`, "properties.a.pattern: must be a valid regex"},
		{"dangling ref", `{"type":"object","properties":{"a":{"$ref":"#/$defs/nope"}}}`, `"#/$defs/nope"`},
		{"external ref refused", `{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`, "not supported; schemas must be self-contained"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile([]byte(tc.raw))
			require.Error(t, err)
			assert.Nil(t, s)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.NotContains(t, err.Error(), resourceURL)
		})
	}
}

const orderSchema = `{
  "type": "object",
  "properties": {
    "orderId": {"type": "string", "pattern": "^A-\\d+$"},
    "amount": {"type": "number", "minimum": 1, "maximum": 9},
    "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    "priority": {"type": "string", "enum": ["low", "medium"]},
    "code": {"type": "string", "minLength": 3, "maxLength": 5},
    "dueAt": {"type": "string", "format": "date-time"},
    "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
    "nick": {"oneOf": [{"type": "string"}, {"type": "null"}]},
    "customer": {
      "type": "object",
      "properties": {
        "address": {
          "type": "object",
          "properties": {"zip": {"type": "string", "minLength": 5}},
          "required": ["zip"],
          "additionalProperties": false
        }
      }
    },
    "items": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
        "required": ["sku", "qty"]
      }
    },
    "big": {"type": "integer", "maximum": 9007199254740993},
    "weird": {"type": "object", "properties": {"a b": {"type": "integer"}}}
  },
  "required": ["orderId", "amount"]
}`

func mustCompile(t testing.TB, raw string) *Schema {
	t.Helper()
	s, err := Compile([]byte(raw))
	require.NoError(t, err)
	return s
}

func TestValidateMessages(t *testing.T) {
	s := mustCompile(t, orderSchema)
	tests := []struct {
		name  string
		input string
		want  []Problem // nil means valid
	}{
		{"valid", `{"orderId":"A-1","amount":2,"dueAt":"2024-01-02T15:04:05Z","extra":true}`, nil},
		{"missing fields", `{}`, []Problem{{"amount", "required"}, {"orderId", "required"}}},
		{"wrong type", `{"orderId":"A-1","amount":"2"}`, []Problem{{"amount", "expected number, got string"}}},
		{"integer wanted", `{"orderId":"A-1","amount":2,"items":[{"sku":"x","qty":1.5}]}`, []Problem{{"items[0].qty", "expected integer, got number"}}},
		{"enum", `{"orderId":"A-1","amount":2,"priority":"high"}`, []Problem{{"priority", `must be one of "low", "medium"`}}},
		{"minLength", `{"orderId":"A-1","amount":2,"code":"ab"}`, []Problem{{"code", "must be at least 3 characters long"}}},
		{"maxLength", `{"orderId":"A-1","amount":2,"code":"abcdef"}`, []Problem{{"code", "must be at most 5 characters long"}}},
		{"minimum", `{"orderId":"A-1","amount":0}`, []Problem{{"amount", "must be >= 1"}}},
		{"maximum", `{"orderId":"A-1","amount":10}`, []Problem{{"amount", "must be <= 9"}}},
		{"exclusive bounds", `{"orderId":"A-1","amount":2,"ratio":0}`, []Problem{{"ratio", "must be > 0"}}},
		{"exclusive max", `{"orderId":"A-1","amount":2,"ratio":1}`, []Problem{{"ratio", "must be < 1"}}},
		{"pattern", `{"orderId":"B-1","amount":2}`, []Problem{{"orderId", `must match pattern ^A-\d+$`}}},
		{"minItems", `{"orderId":"A-1","amount":2,"tags":[]}`, []Problem{{"tags", "must contain at least 1 item"}}},
		{"maxItems", `{"orderId":"A-1","amount":2,"tags":["a","b","c"]}`, []Problem{{"tags", "must contain at most 2 items"}}},
		{"format", `{"orderId":"A-1","amount":2,"dueAt":"tomorrow"}`, []Problem{{"dueAt", "must be a valid date-time"}}},
		{"nullable alternative", `{"orderId":"A-1","amount":2,"nick":5}`, []Problem{{"nick", "expected string or null, got number"}}},
		{"unknown field when forbidden", `{"orderId":"A-1","amount":2,"customer":{"address":{"zip":"12345","x":1,"y":2}}}`,
			[]Problem{{"customer.address.x", `unknown field "x"`}, {"customer.address.y", `unknown field "y"`}}},
		{"nested paths", `{"orderId":"A-1","amount":2,"customer":{"address":{"zip":"12"}},"items":[{"sku":"a","qty":1},{"sku":"b","qty":1},{"qty":0}]}`,
			[]Problem{{"customer.address.zip", "must be at least 5 characters long"}, {"items[2].qty", "must be >= 1"}, {"items[2].sku", "required"}}},
		{"odd key", `{"orderId":"A-1","amount":2,"weird":{"a b":"x"}}`, []Problem{{`weird["a b"]`, "expected integer, got string"}}},
		{"several at once", `{"amount":"x","priority":"urgent","code":"a","tags":[1]}`, []Problem{
			{"amount", "expected number, got string"},
			{"code", "must be at least 3 characters long"},
			{"orderId", "required"},
			{"priority", `must be one of "low", "medium"`},
			{"tags[0]", "expected string, got number"},
		}},
		{"not an object", `[1,2]`, []Problem{{"", "expected object, got array"}}},
		{"big integer not rounded", `{"orderId":"A-1","amount":2,"big":9007199254740993}`, nil},
		{"big integer over", `{"orderId":"A-1","amount":2,"big":9007199254740994}`, []Problem{{"big", "must be <= 9007199254740993"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Validate([]byte(tc.input))
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			var ve *ValidationError
			require.True(t, errors.As(err, &ve), "error must be a *ValidationError, got %T", err)
			assert.Equal(t, tc.want, ve.Problems)
			assert.NotContains(t, err.Error(), "://")
			assert.NotContains(t, err.Error(), "jsonschema")
			assert.NotContains(t, err.Error(), resourceURL)
		})
	}
}

func TestValidateInvalidJSON(t *testing.T) {
	s := mustCompile(t, orderSchema)
	for _, in := range []string{``, `   `, `{"a":`, `{"a":1} trailing`, `nope`} {
		t.Run(fmt.Sprintf("%q", in), func(t *testing.T) {
			err := s.Validate([]byte(in))
			var ve *ValidationError
			require.True(t, errors.As(err, &ve))
			require.Len(t, ve.Problems, 1)
			assert.Equal(t, "", ve.Problems[0].Path)
			assert.Contains(t, ve.Problems[0].Message, "input is not valid JSON: ")
			assert.Less(t, len(ve.Problems[0].Message), 120)
		})
	}
}

func TestValidateNilSchema(t *testing.T) {
	var s *Schema
	err := s.Validate([]byte(`{}`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "use Compile")
}

func TestValidationErrorString(t *testing.T) {
	tests := []struct {
		problems []Problem
		want     string
	}{
		{[]Problem{{"amount", "expected number, got string"}, {"orderId", "required"}}, "amount: expected number, got string; orderId: required"},
		{[]Problem{{"", "input is not valid JSON: unexpected end of input"}}, "input is not valid JSON: unexpected end of input"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, (&ValidationError{Problems: tc.problems}).Error())
	}

	s := mustCompile(t, orderSchema)
	err := s.Validate([]byte(`{"amount":"1"}`))
	require.Error(t, err)
	assert.Equal(t, "amount: expected number, got string; orderId: required", err.Error())
}

func TestProblemsDedupAndSort(t *testing.T) {
	// allOf repeating the same constraint produces identical leaves.
	s := mustCompile(t, `{"type":"object","allOf":[{"required":["b"]},{"required":["b","a"]}]}`)
	err := s.Validate([]byte(`{}`))
	var ve *ValidationError
	require.True(t, errors.As(err, &ve))
	assert.Equal(t, []Problem{{"a", "required"}, {"b", "required"}}, ve.Problems)
}

func TestInferredSchemaValidates(t *testing.T) {
	raw, err := Infer(reflect.TypeOf(inferOrder{}))
	require.NoError(t, err)
	s := mustCompile(t, string(raw))

	valid := `{"tenantId":"t","orderId":"A-1","amount":5,"forced":1,"address":{"zip":"12345"},
		"items":[{"sku":"x","qty":2}],"dueAt":"2024-01-02T15:04:05Z","NoTag":true,"unknown":"tolerated"}`
	require.NoError(t, s.Validate([]byte(valid)))

	err = s.Validate([]byte(`{"orderId":"x","amount":0,"items":[],"dueAt":"soon","email":"nope"}`))
	require.Error(t, err)
	assert.Equal(t, `NoTag: required; address: required; amount: must be > 0; dueAt: must be a valid date-time; `+
		`email: must be a valid email; forced: required; items: must contain at least 1 item; `+
		`orderId: must match pattern ^[A-Z]-\d+$; tenantId: required`, err.Error())
}

func TestValidateConcurrent(t *testing.T) {
	s := mustCompile(t, orderSchema)
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				if (i+j)%2 == 0 {
					assert.NoError(t, s.Validate([]byte(`{"orderId":"A-1","amount":3}`)))
				} else {
					err := s.Validate([]byte(`{"amount":"x"}`))
					assert.EqualError(t, err, "amount: expected number, got string; orderId: required")
				}
			}
		}(i)
	}
	wg.Wait()
}

func BenchmarkValidateSmall(b *testing.B) {
	s := mustCompile(b, `{"type":"object","properties":{
		"orderId":{"type":"string","minLength":1},
		"amount":{"type":"number","minimum":0},
		"note":{"type":"string"}},"required":["orderId","amount"]}`)
	input := []byte(`{"orderId":"A-1","amount":12.5,"note":"hi"}`)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.Validate(input); err != nil {
			b.Fatal(err)
		}
	}
}

// TestValidateRefusesWildNumbers: a number written with more than 128
// characters or an exponent beyond ±400 is refused, with its path, wherever
// it is, and quickly (math/big would spend seconds on some, and the
// validator panicked on others).
func TestValidateRefusesWildNumbers(t *testing.T) {
	s := mustCompile(t, `{"type":"object","properties":{"x":{"type":"number","maximum":1},"list":{"type":"array"}}}`)
	const exp, long = "number out of range: its exponent is beyond ±400", "number out of range: it is written with more than 128 characters"
	for input, want := range map[string]string{
		`{"x":1e-1000001}`:                                  "x: " + exp,
		`{"x":1E+401}`:                                      "x: " + exp,
		`{"x":1e-401}`:                                      "x: " + exp,
		`{"x":0,"list":[1,{"y":-1e9999999}]}`:               "list[1].y: " + exp,
		`{"x":0,"list":[1e999999,1e999999,2]}`:              "list[0]: " + exp + "; list[1]: " + exp,
		`{"x":0.` + strings.Repeat("0", 127) + `1}`:         "x: " + long,
		`{"x":1,"list":[` + strings.Repeat("9", 200) + `]}`: "list[0]: " + long,
	} {
		t.Run(input[:min(len(input), 40)], func(t *testing.T) {
			assert.EqualError(t, s.Validate([]byte(input)), want)
		})
	}
	t.Run("many of them, a short answer", func(t *testing.T) {
		input := `{"x":0,"list":[` + strings.Repeat("1e999999,", 100_000) + `1]}`
		err := s.Validate([]byte(input))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "list[9]: "+exp+"; and 99990 more like these")
		assert.Less(t, len(err.Error()), 1000)
	})
	t.Run("many of them deep down, a short answer", func(t *testing.T) {
		input := `{"x":0,"list":` + strings.Repeat("[", 2000) + strings.Repeat("1e999,", 20000) + "1" + strings.Repeat("]", 2000) + "}"
		err := s.Validate([]byte(input))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "list[0][0][0][0][0][0][0]…[0][0][0][0][0][0][0][9]: "+exp)
		assert.Less(t, len(err.Error()), 2000)
	})
	for _, input := range []string{`{"x":1e-400}`, `{"x":-1e400}`, `{"list":[1E+300]}`, `{"list":[1e0000001]}`, `{"x":0.` + strings.Repeat("0", 120) + `1}`} {
		t.Run(input[:min(len(input), 40)], func(t *testing.T) {
			assert.NoError(t, s.Validate([]byte(input)), "within the limits")
		})
	}
}

// TestValidateRefusesKeysDifferingOnlyInCase: encoding/json binds a key to
// a field whatever its case, so a case variant of a declared property would
// pass the schema as an unknown field and land in the field unchecked.
func TestValidateRefusesKeysDifferingOnlyInCase(t *testing.T) {
	raw, err := Infer(reflect.TypeOf(fastType{}))
	require.NoError(t, err)
	s := mustCompile(t, string(raw))
	ok := `"orderId":"A-1","quantity":3,"lines":[{"sku":"x","price":1}]`
	for input, want := range map[string]string{
		`{` + ok + `,"QUANTITY":-5}`:                                                `QUANTITY: unknown field; property names are case-sensitive: did you mean "quantity"?`,
		`{"orderId":"A-1","Quantity":3,"lines":[{"sku":"x","price":1}]}`:            `Quantity: unknown field; property names are case-sensitive: did you mean "quantity"?; quantity: required`,
		`{"orderId":"A-1","quantity":3,"lines":[{"sku":"x","PRICE":-1,"price":1}]}`: `lines[0].PRICE: unknown field; property names are case-sensitive: did you mean "price"?`,
		`{` + ok + `,"nick":null,"NICK":"x"}`:                                       `NICK: unknown field; property names are case-sensitive: did you mean "nick"?`,
	} {
		t.Run(input, func(t *testing.T) {
			assert.False(t, s.fast.fastCheck([]byte(input)), "the quick check leaves it to the full path")
			assert.EqualError(t, s.Validate([]byte(input)), want)
		})
	}
	// Map keys (additionalProperties) and unknown keys that match nothing are free.
	assert.NoError(t, s.Validate([]byte(`{`+ok+`,"labels":{"Quantity":"x","QUANTITY":"y"},"other":1}`)))
	// Explicit schemas too, through anyOf branches.
	e := mustCompile(t, `{"type":"object","anyOf":[{"properties":{"a":{"type":"integer"}}},{"properties":{"b":{"type":"string"}}}]}`)
	assert.EqualError(t, e.Validate([]byte(`{"B":1}`)), `B: unknown field; property names are case-sensitive: did you mean "b"?`)
	assert.NoError(t, e.Validate([]byte(`{"b":"x","c":1}`)))
}

// TestValidateRefusesDuplicateKeys: encoding/json decodes every copy of a
// key into the same value, so the schema, which sees only the last copy,
// would not check what is bound.
func TestValidateRefusesDuplicateKeys(t *testing.T) {
	s := mustCompile(t, `{"type":"object","properties":{"q":{"type":"object","properties":{"n":{"type":"integer","minimum":0}}},"list":{"type":"array"}}}`)
	many := ""
	for i := range 40 {
		many += fmt.Sprintf(`"k%d":%d,`, i, i)
	}
	for input, want := range map[string]string{
		`{"q":{"n":-5},"q":{}}`:            "q: given twice; each key may appear once",
		`{"q":{"n":1,"n":2}}`:              "q.n: given twice; each key may appear once",
		`{"list":[{},{"a":1,"\u0061":2}]}`: "list[1].a: given twice; each key may appear once",
		`{` + many + `"k7":0}`:             "k7: given twice; each key may appear once",
		`{"x":1,"x":2,"x":3}`:              "x: given twice; each key may appear once",
	} {
		t.Run(input[:min(len(input), 40)], func(t *testing.T) {
			assert.False(t, s.fast.fastCheck([]byte(input)), "the quick check leaves it to the full path")
			assert.EqualError(t, s.Validate([]byte(input)), want)
		})
	}
	assert.NoError(t, s.Validate([]byte(`{"q":{"n":1},"list":[{"a":1},{"a":1}],`+many[:len(many)-1]+`}`)), "the same key in different objects is fine")
}

// TestCaseRuleFollowsTheSchema: case variants are found through local
// $ref, combinators, patternProperties and prefixItems, and for names that
// are only required.
func TestCaseRuleFollowsTheSchema(t *testing.T) {
	s := mustCompile(t, `{"type":"object","$defs":{"q":{"type":"object","properties":{"n":{"type":"integer","minimum":0}}}},
		"properties":{"q":{"$ref":"#/$defs/q"},"t":{"type":"array","prefixItems":[{"$ref":"#/$defs/q"}]},
		"p":{"type":"object","patternProperties":{"^x":{"$ref":"#/$defs/q"}}},
		"c":{"if":{"type":"object"},"then":{"properties":{"deep":{"type":"string"}}}}}}`)
	for input, want := range map[string]string{
		`{"q":{"N":-5}}`:       `q.N: unknown field; property names are case-sensitive: did you mean "n"?`,
		`{"t":[{"N":-5}]}`:     `t[0].N: unknown field; property names are case-sensitive: did you mean "n"?`,
		`{"p":{"xa":{"N":1}}}`: `p.xa.N: unknown field; property names are case-sensitive: did you mean "n"?`,
		`{"c":{"DEEP":"x"}}`:   `c.DEEP: unknown field; property names are case-sensitive: did you mean "deep"?`,
	} {
		t.Run(input, func(t *testing.T) {
			assert.EqualError(t, s.Validate([]byte(input)), want)
		})
	}
	assert.EqualError(t, s.Validate([]byte(`{"Q":{}}`)), `Q: unknown field; property names are case-sensitive: did you mean "q"?`)

	r := mustCompile(t, `{"type":"object","properties":{"n":{"type":"integer","minimum":0}},"required":["N"]}`)
	assert.False(t, r.fast.fastCheck([]byte(`{"N":-5}`)), "a required-only name that folds to a property")
	assert.EqualError(t, r.Validate([]byte(`{"N":-5}`)), `N: unknown field; property names are case-sensitive: did you mean "n"?`)
}

// TestValidationAnswerStaysShort: however many problems an input has and
// however long its keys are, the message is bounded (found in review: a
// 54 KB input gave a 100 MB message).
func TestValidationAnswerStaysShort(t *testing.T) {
	s := mustCompile(t, `{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"array","items":{"type":"string"}}}}}`)
	key := strings.Repeat("k", 50_000)
	input := `{"m":{"` + key + `":[` + strings.Repeat("1,", 1999) + `1]}}`
	err := s.Validate([]byte(input))
	require.Error(t, err)
	msg := err.Error()
	assert.Less(t, len(msg), 4000, "message of %d bytes", len(msg))
	assert.Contains(t, msg, `m["`+strings.Repeat("k", 64)+`…"][0]: expected string, got number`)
	assert.True(t, strings.HasSuffix(msg, "; and 1980 more problems"), msg[max(0, len(msg)-80):])
}
