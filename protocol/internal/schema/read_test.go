package schema

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// jsonSeeds are JSON texts, valid and not, for FuzzReadJSON.
var jsonSeeds = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1.5e+3`, `-1E-2`, `true`, `false`, `null`,
	`{"a":1,"b":[true,false,null,"s",{"c":{}}]}`, ` { "a" : [ 1 , 2 ] } `,
	`"\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00"`, "\"\xff\xfe\"", `"é"`, `"\ud800"`,
	`01`, `1.`, `.5`, `1e`, `1e+`, `-`, `+1`, `0x1`, `NaN`, `Infinity`,
	`tru`, `nul`, `"\x"`, `"\u12G4"`, `"\u12"`, "\"a\nb\"", `"unterminated`,
	`{"a"}`, `{"a":}`, `{"a":1,}`, `{,}`, `{1:2}`, `[1,]`, `[,1]`, `[1 2]`,
	`{"a":1}}`, `[[]`, `{"a":1} x`, ``, ` `, `"a" "b"`, `{"a":1,"a":2}`, `{"a":{"b":1,"\u0062":2}}`,
}

// FuzzReadJSON holds the two walks over an input's tokens to the library's
// own validity check: readJSON (names may repeat, to report them) reads
// exactly what jsontext finds valid with repeated names allowed, and the
// quick check is never sure of a text jsontext finds invalid. Its corpus
// holds FuzzSkip's, from the hand-written scanner these walks replaced.
func FuzzReadJSON(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, err := readJSON(b, nil)
		if valid := jsontext.Value(b).IsValid(jsontext.AllowDuplicateNames(true)); (err == nil) != valid {
			t.Fatalf("readJSON(%q) = %v, jsontext says valid=%v", b, err, valid)
		}
		if anything.fastCheck(b) && !jsontext.Value(b).IsValid() {
			t.Fatalf("the quick check is sure of %q, which jsontext finds invalid", b)
		}
	})
}
