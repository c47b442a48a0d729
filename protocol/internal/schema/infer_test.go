package schema

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type inferBase struct {
	TenantID string `json:"tenantId" jsonschema:"description=Tenant that owns the order"`
}

type inferAudit struct {
	By string `json:"by"`
}

type inferAddress struct {
	Zip string `json:"zip" jsonschema:"pattern=^[0-9]{5}$"`
}

type inferItem struct {
	SKU string `json:"sku" jsonschema:"minLength=1,maxLength=64"`
	Qty int    `json:"qty" jsonschema:"minimum=1,maximum=9"`
}

type inferOrder struct {
	inferBase
	*inferAudit
	OrderID   string            `json:"orderId" jsonschema:"description=The order id,pattern=^[A-Z]-\\d+$"`
	Priority  string            `json:"priority,omitempty" jsonschema:"enum=low,enum=medium,default=low"`
	Amount    float64           `json:"amount" jsonschema:"exclusiveMinimum=0,maximum=1000"`
	Note      *string           `json:"note" jsonschema_description:"Free text"`
	Forced    *int              `json:"forced" jsonschema:"required"`
	Count     int               `json:"count,omitzero"`
	Address   inferAddress      `json:"address"`
	Items     []inferItem       `json:"items" jsonschema:"minItems=1,maxItems=50"`
	DueAt     time.Time         `json:"dueAt"`
	Email     string            `json:"email,omitempty" jsonschema:"format=email"`
	Labels    map[string]string `json:"labels,omitempty"`
	Secret    string            `json:"-"`
	NoTag     bool
	Skipped   chan int `jsonschema:"-"`
	ShadowTag string   `json:"shadow,omitempty"`
	//lint:ignore U1000 an unexported field, which Infer must leave out
	internal func()
}

const inferOrderSchema = `{
  "type": "object",
  "properties": {
    "tenantId": {"type": "string", "description": "Tenant that owns the order"},
    "by": {"type": "string"},
    "orderId": {"type": "string", "description": "The order id", "pattern": "^[A-Z]-\\d+$"},
    "priority": {"type": "string", "enum": ["low", "medium"], "default": "low"},
    "amount": {"type": "number", "exclusiveMinimum": 0, "maximum": 1000},
    "note": {"type": "string", "description": "Free text"},
    "forced": {"type": "integer"},
    "count": {"type": "integer"},
    "address": {
      "type": "object",
      "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
      "required": ["zip"]
    },
    "items": {
      "type": "array",
      "minItems": 1,
      "maxItems": 50,
      "items": {
        "type": "object",
        "properties": {
          "sku": {"type": "string", "minLength": 1, "maxLength": 64},
          "qty": {"type": "integer", "minimum": 1, "maximum": 9}
        },
        "required": ["sku", "qty"]
      }
    },
    "dueAt": {"type": "string", "format": "date-time"},
    "email": {"type": "string", "format": "email"},
    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    "NoTag": {"type": "boolean"},
    "shadow": {"type": "string"}
  },
  "required": ["tenantId", "orderId", "amount", "forced", "address", "items", "dueAt", "NoTag"]
}`

func TestInferRepresentativeStruct(t *testing.T) {
	tests := []struct {
		name string
		typ  reflect.Type
	}{
		{"struct", reflect.TypeOf(inferOrder{})},
		{"pointer to struct", reflect.TypeOf(&inferOrder{})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Infer(tc.typ)
			require.NoError(t, err)
			assert.JSONEq(t, inferOrderSchema, string(got))
			assert.NotContains(t, string(got), "$schema")
			assert.NotContains(t, string(got), "$id")
			assert.NotContains(t, string(got), "$ref")
			assert.NotContains(t, string(got), "$defs")
			assert.NotContains(t, string(got), "additionalProperties\":false")

			// The inferred schema must compile as-is.
			_, err = Compile(got)
			require.NoError(t, err)
		})
	}
}

func TestInferStable(t *testing.T) {
	first, err := Infer(reflect.TypeOf(inferOrder{}))
	require.NoError(t, err)
	for i := 0; i < 20; i++ {
		again, err := Infer(reflect.TypeOf(inferOrder{}))
		require.NoError(t, err)
		require.Equal(t, string(first), string(again))
	}
}

func TestInferRequiredRules(t *testing.T) {
	type S struct {
		Plain     string  `json:"plain"`
		OmitEmpty string  `json:"omitEmpty,omitempty"`
		OmitZero  string  `json:"omitZero,omitzero"`
		Ptr       *string `json:"ptr"`
		PtrReq    *string `json:"ptrReq" jsonschema:"required"`
		OmitReq   string  `json:"omitReq,omitempty" jsonschema:"required"`
		Nullable  *string `json:"nullable" jsonschema:"nullable"`
	}
	got, err := Infer(reflect.TypeOf(S{}))
	require.NoError(t, err)
	var doc struct {
		Required []string `json:"required"`
	}
	require.NoError(t, jsonUnmarshal(got, &doc))
	assert.Equal(t, []string{"plain", "ptrReq", "omitReq"}, doc.Required)
}

func TestInferNoRequiredOmitted(t *testing.T) {
	type S struct {
		A *int `json:"a"`
		B int  `json:"b,omitempty"`
	}
	got, err := Infer(reflect.TypeOf(S{}))
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}}}`, string(got))
}

type recNode struct {
	Name     string     `json:"name"`
	Children []*recNode `json:"children"`
}

type recA struct {
	B *recB `json:"b"`
}

type recB struct {
	A []recA `json:"a"`
}

type recList []recList

type withRecList struct {
	L recList `json:"l"`
}

type recEmbed struct {
	//lint:ignore U1000 read by reflection: the embedding Infer must refuse
	*recEmbed
	X int `json:"x"`
}

type recMap struct {
	M map[string]recMap `json:"m"`
}

type withFunc struct {
	Name     string `json:"name"`
	Callback func() `json:"callback"`
}

type withChan struct {
	Inner struct {
		Events chan string `json:"events"`
	} `json:"inner"`
}

type withComplex struct {
	Items []struct {
		Z complex128 `json:"z"`
	} `json:"items"`
}

type withUnsafe struct {
	P unsafe.Pointer `json:"p"`
}

type withBadMap struct {
	M map[[2]int]string `json:"m"`
}

// sharedTwice uses the same struct type twice: not recursion.
type sharedTwice struct {
	From inferAddress `json:"from"`
	To   inferAddress `json:"to"`
}

type inlinePage struct {
	Limit int `json:"limit" jsonschema:"maximum=10"`
}

// withInline's Page would be described flattened (invopop) but decoded from
// the key "Page" (encoding/json): {"limit":1,"page":{"limit":1000}} passed a
// maximum of 10 (found in review).
type withInline struct {
	Outer struct {
		Page inlinePage `json:",inline"`
	} `json:"outer"`
}

// Tags with which encoding/json would read what the schema does not
// describe (found in review: each let a value past the schema).
type withDashComma struct {
	//lint:ignore SA5008 the malformed tag is the fixture: the decoder refuses it
	X int `json:"-," jsonschema:"minimum=0"`
}

// withOddName's name is one encoding/json refused (it read "Price"); the
// decoder reads "price€", as the schema says.
type withOddName struct {
	Price int `json:"price€" jsonschema:"minimum=0"`
}

type withStringOpt struct {
	N int `json:"n,string" jsonschema:"minimum=0"`
}

type withStringBool struct {
	B bool `json:"b,string"`
}

type withEmbedOpt struct {
	Page inlinePage `json:"page,embed"`
}

type withCaseIgnore struct {
	OrderID string `json:"orderId,case:ignore"`
}

type withFormat struct {
	At time.Time `json:"at,format:unix"`
}

//lint:ignore U1000 read by reflection, embedded in withEmbeddedNonStruct
type namedString string

type withEmbeddedNonStruct struct {
	//lint:ignore U1000 read by reflection: the embedding the decoder refuses
	namedString
}

type withOptionsOnEmbedded struct {
	inlinePage `json:",omitempty"`
}

type noExported struct {
	//lint:ignore U1000 a struct with no exported field, which the decoder refuses
	n int
}

type withNoExported struct {
	Inner noExported `json:"inner"`
}

type withHidden struct {
	Admin bool `json:"admin" jsonschema:"-"`
}

type shadowInner struct{ A int }

type withShadow struct {
	A int `jsonschema:"minimum=0"`
	shadowInner
}

func TestInferErrors(t *testing.T) {
	tests := []struct {
		name    string
		typ     reflect.Type
		wantErr string
	}{
		{"nil type", nil, "nil type"},
		{"int root", reflect.TypeOf(0), "root type int must be a struct"},
		{"slice root", reflect.TypeOf([]inferItem{}), "root type []schema.inferItem must be a struct"},
		{"interface root", reflect.TypeOf((*error)(nil)).Elem(), "root type error must be a struct"},
		{"time root", reflect.TypeOf(time.Time{}), "root type time.Time is encoded as a JSON string"},
		{"func field", reflect.TypeOf(withFunc{}), `schema: field "Callback" of type func() cannot be described in JSON Schema`},
		{"chan field nested", reflect.TypeOf(withChan{}), `schema: field "Inner.Events" of type chan string cannot be described in JSON Schema`},
		{"complex in slice", reflect.TypeOf(withComplex{}), `schema: field "Items[].Z" of type complex128 cannot be described in JSON Schema`},
		{"unsafe pointer", reflect.TypeOf(withUnsafe{}), `schema: field "P" of type unsafe.Pointer cannot be described in JSON Schema`},
		{"bad map key", reflect.TypeOf(withBadMap{}), `field "M" of type map[[2]int]string cannot be described`},
		{"self recursive", reflect.TypeOf(recNode{}), `type schema.recNode is recursive (field "Children[]"`},
		{"mutually recursive", reflect.TypeOf(recA{}), `type schema.recA is recursive (field "B.A[]"`},
		{"recursive slice type", reflect.TypeOf(withRecList{}), `type schema.recList is recursive (field "L[]"`},
		{"recursive embedding", reflect.TypeOf(recEmbed{}), `type schema.recEmbed is recursive (field "recEmbed" embeds it)`},
		{"recursive via map", reflect.TypeOf(recMap{}), `type schema.recMap is recursive (field "M[]"`},
		{"inline tag", reflect.TypeOf(withInline{}), `field "Outer.Page": the json tag option "inline" is one the decoder ignores`},
		{"dash-comma tag", reflect.TypeOf(withDashComma{}), "type schema.withDashComma: the decoder refuses it: Go struct field X has malformed `json` tag"},
		{"string option with constraints", reflect.TypeOf(withStringOpt{}), `field "N": the json tag option "string" makes the schema describe a string`},
		{"string option on a bool", reflect.TypeOf(withStringBool{}), `field "B": the json tag option "string" applies only to numbers for the decoder, which refuses it on a bool field`},
		{"embed option", reflect.TypeOf(withEmbedOpt{}), `field "Page": the json tag option "embed" makes the decoder read the field's members at this level`},
		{"case:ignore option", reflect.TypeOf(withCaseIgnore{}), `field "OrderID": the json tag option "case:ignore" makes the decoder match keys without case`},
		{"format option", reflect.TypeOf(withFormat{}), `field "At": the json tag option "format:unix" changes how the decoder reads the value`},
		{"embedded non-struct", reflect.TypeOf(withEmbeddedNonStruct{}), "the decoder refuses it: embedded Go struct field namedString of non-struct type must be explicitly given a JSON name"},
		{"options on an embedded struct", reflect.TypeOf(withOptionsOnEmbedded{}), "the decoder refuses it: Go struct field inlinePage cannot have any options other than `embed` specified"},
		{"nested struct without exported fields", reflect.TypeOf(withNoExported{}), `field "Inner" of type schema.noExported: the decoder refuses the type: Go struct has no exported fields`},
		{"jsonschema dash on a decodable field", reflect.TypeOf(withHidden{}), `field "Admin": jsonschema tag "-" leaves the field out of the schema, but the decoder still reads it`},
		{"same JSON name twice", reflect.TypeOf(withShadow{}), `fields "A" and "shadowInner.A" both have the JSON name "A"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Infer(tc.typ)
			require.Error(t, err)
			assert.Nil(t, got)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

// TestInferKeepsTheDecodersError: a type the decoder refuses is an error
// wrapping the decoder's own, at the root and in a field.
func TestInferKeepsTheDecodersError(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeOf(withDashComma{}), reflect.TypeOf(withNoExported{})} {
		_, err := Infer(typ)
		require.Error(t, err)
		cause := errors.Unwrap(err)
		require.NotNil(t, cause, "%s: %v wraps nothing", typ, err)
		assert.True(t, strings.HasSuffix(err.Error(), ": "+cause.Error()), "%s: %v ends with the decoder's error", typ, err)
	}
}

func TestInferSharedTypeIsNotRecursion(t *testing.T) {
	got, err := Infer(reflect.TypeOf(sharedTwice{}))
	require.NoError(t, err)
	addr := `{"type":"object","properties":{"zip":{"type":"string","pattern":"^[0-9]{5}$"}},"required":["zip"]}`
	assert.JSONEq(t, `{"type":"object","properties":{"from":`+addr+`,"to":`+addr+`},"required":["from","to"]}`, string(got))
}

// TestInferNamesAsTheDecoderReads: a name encoding/json refused is the
// decoder's name and the schema's.
func TestInferNamesAsTheDecoderReads(t *testing.T) {
	got, err := Infer(reflect.TypeOf(withOddName{}))
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"object","properties":{"price€":{"type":"integer","minimum":0}},"required":["price€"]}`, string(got))
	var v withOddName
	require.NoError(t, jsonv2.Unmarshal([]byte(`{"price€":5,"Price":7}`), &v))
	assert.Equal(t, 5, v.Price)
}
