package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// whole reports whether b is one JSON value with only space around it, by Skip.
func whole(b []byte, maxDepth int) bool {
	end, ok := Skip(b, Space(b, 0), maxDepth)
	return ok && Space(b, end) == len(b)
}

func TestSkipAgreesWithValid(t *testing.T) {
	for _, in := range seeds {
		assert.Equal(t, json.Valid([]byte(in)), whole([]byte(in), 1000), "%q", in)
	}
}

func TestSkipStopsAfterTheValue(t *testing.T) {
	b := []byte(`{"a":[1,"x\"y",{"b":null}]} ,"next"`)
	end, ok := Skip(b, 0, 10)
	assert.True(t, ok)
	assert.Equal(t, `{"a":[1,"x\"y",{"b":null}]}`, string(b[:end]))
}

func TestSkipDepthLimit(t *testing.T) {
	deep := []byte(strings.Repeat("[", 5) + strings.Repeat("]", 5))
	assert.True(t, whole(deep, 5))
	assert.False(t, whole(deep, 4))
}

var seeds = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1.5e+3`, `-1E-2`, `true`, `false`, `null`,
	`{"a":1,"b":[true,false,null,"s",{"c":{}}]}`, ` { "a" : [ 1 , 2 ] } `,
	`"\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00"`, "\"\xff\xfe\"", `"é"`,
	`01`, `1.`, `.5`, `1e`, `1e+`, `-`, `+1`, `0x1`, `NaN`, `Infinity`,
	`tru`, `nul`, `"\x"`, `"\u12G4"`, `"\u12"`, "\"a\nb\"", `"unterminated`,
	`{"a"}`, `{"a":}`, `{"a":1,}`, `{,}`, `{1:2}`, `[1,]`, `[,1]`, `[1 2]`,
	`{"a":1}}`, `[[]`, `{"a":1} x`, ``, ` `, `"a" "b"`,
}

// FuzzSkip holds Skip to encoding/json's Valid.
func FuzzSkip(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := whole(b, 10000), json.Valid(b); got != want {
			t.Fatalf("Skip says %v, json.Valid says %v, for %q", got, want, b)
		}
	})
}
