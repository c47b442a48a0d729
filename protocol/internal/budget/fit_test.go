package budget

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/internal/base/chars"
)

// items returns n JSON strings of 10 characters each ("item00001"-style),
// joined by commas.
func items(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `"item` + strings.Repeat("0", 4-len(itoa(i+1))) + itoa(i+1) + `"`
	}
	return strings.Join(parts, ",")
}

func itoa(i int) string { return chars.Group(i) }

func TestFitRules(t *testing.T) {
	for _, c := range []struct {
		name, in string
		max      int
		want     string
	}{
		{"fits: returned as it is", `{"orders":[` + items(10) + `]}`, 122, `{"orders":[` + items(10) + `]}`},
		{"one list: items dropped from the end, counted", `{"orders":[` + items(10) + `]}`, 60, `{"orders":[` + items(3) + `],"omitted":7}`},
		{"one list: the budget is a maximum, not a target", `{"orders":[` + items(10) + `]}`, 67, `{"orders":[` + items(3) + `],"omitted":7}`},
		{"one list: one more item when it fits", `{"orders":[` + items(10) + `]}`, 68, `{"orders":[` + items(4) + `],"omitted":6}`},
		{"top-level list wrapped", `[` + items(10) + `]`, 60, `{"items":[` + items(3) + `],"omitted":7}`},
		{"omitted taken: named after the list", `{"omitted":0,"orders":[` + items(10) + `]}`, 80, `{"omitted":0,"orders":[` + items(3) + `],"omitted_orders":7}`},
		{"omitted taken as an escape", `{"omitt\u0065d":0,"orders":[` + items(10) + `]}`, 85, `{"omitt\u0065d":0,"orders":[` + items(3) + `],"omitted_orders":7}`},
		{"the longest list only", `{"a":[` + items(10) + `],"b":[` + items(3) + `]}`, 113, `{"a":[` + items(5) + `],"b":[` + items(3) + `],"omitted":5}`},
		{"tie: the first list loses an item", `{"a":[` + items(10) + `],"b":[` + items(3) + `]}`, 80, `{"a":[` + items(2) + `],"b":[` + items(3) + `],"omitted":8}`},
		{"two lists shortened: two named counts", `{"a":[` + items(10) + `],"b":[` + items(3) + `]}`, 79, `{"a":[` + items(1) + `],"b":[` + items(2) + `],"omitted_a":9,"omitted_b":1}`},
		{"duplicate names numbered", `{"a":[` + items(3) + `],"a":[` + items(3) + `]}`, 65, `{"a":[` + items(1) + `],"a":[` + items(1) + `],"omitted_a":2,"omitted_a_2":2}`},
		{"names held by lists not shortened", `{"a":[1,2],"a":[` + items(10) + `],"b":[` + items(10) + `]}`, 75, `{"a":[1,2],"a":[` + items(1) + `],"b":[` + items(1) + `],"omitted_a_2":9,"omitted_b":9}`},
		{"count in the object holding the list", `{"data":{"orders":[` + items(10) + `],"page":1},"ok":true}`, 85, `{"data":{"orders":[` + items(3) + `],"page":1,"omitted":7},"ok":true}`},
		{"lists inside items are kept whole", `{"orders":[{"lines":[1,2,3]},{"lines":[4,5,6]}]}`, 47, `{"orders":[{"lines":[1,2,3]}],"omitted":1}`},
		{"other members untouched", `{"title":"x","orders":[` + items(10) + `],"n":1.50e3,"tags":["a"]}`, 95, `{"title":"x","orders":[` + items(3) + `],"n":1.50e3,"tags":["a"],"omitted":7}`},
		{"white space kept", "{ \"a\" : [ 1 ,\n 2 , 3 , 4 , 5 , 6 ] }", 32, "{ \"a\" : [ 1 ,\n 2 ],\"omitted\":4 }"},
		{"white space around a top-level list kept", ` [` + items(10) + `] `, 60, ` {"items":[` + items(3) + `],"omitted":7} `},
		{"characters, not bytes: fits", `["ééééé","ééééé","ééééé"]`, 25, `["ééééé","ééééé","ééééé"]`},
		{"characters, not bytes", `[` + strings.Repeat(`"ééééé",`, 9) + `"ééééé"]`, 40, `{"items":["ééééé","ééééé"],"omitted":8}`},
		{"an empty list is left alone", `{"a":[],"b":[` + items(10) + `]}`, 60, `{"a":[],"b":[` + items(3) + `],"omitted":7}`},
		{"count with more digits", `[` + strings.Repeat("1,", 199) + `1]`, 30, `{"items":[1,1],"omitted":198}`},
		{"key needing escapes", `{"a\"b":[` + items(3) + `],"c":[` + items(3) + `],"omitted":1}`, 92, `{"a\"b":[` + items(1) + `],"c":[` + items(2) + `],"omitted":1,"omitted_a\"b":2,"omitted_c":1}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Fit([]byte(c.in), c.max)
			require.NoError(t, err)
			assert.Equal(t, c.want, string(got))
			assert.LessOrEqual(t, utf8.RuneCount(got), c.max)
		})
	}
}

func TestFitReturnsTheSameBytesWhenItFits(t *testing.T) {
	in := []byte(` {"a": [1, 2]} `)
	got, err := Fit(in, len(in))
	require.NoError(t, err)
	assert.Same(t, &in[0], &got[0])
	assert.Len(t, got, len(in))
}

func TestFitErrors(t *testing.T) {
	big := strings.Repeat("x", 9118)
	for _, c := range []struct {
		name, in string
		max      int
		kind     error
		msg      string
	}{
		{"a long string", `"` + big + `"`, 4000, ErrTooLarge,
			"result is 9,120 characters, over the limit of 4,000, and has no list to shorten; return fewer fields or a summary"},
		{"an object without lists", `{"text":"` + big[:9000] + `"}`, 4000, ErrTooLarge, "has no list to shorten"},
		{"only empty lists", `{"a":[],"text":"` + big[:9000] + `"}`, 4000, ErrTooLarge, "has no list to shorten"},
		{"a first item alone too large", `{"data":{"or/de~rs":["` + big[:5000] + `",1,2]}}`, 4000, ErrTooLarge,
			`result is 5,030 characters, over the limit of 4,000, and still 5,038 with every list cut to its first item (the longest first item is 5,002 characters, in "/data/or~1de~0rs"); return fewer or shorter fields, or a summary`},
		{"a top-level list of one item", `[{"lines":[` + items(500) + `]}]`, 4000, ErrTooLarge, "in the top-level list"},
		{"the count does not fit", `[1,2]`, 4, ErrTooLarge, "still 25 with every list cut to its first item"},
		{"a list beside a long field", `{"a":[1,2,3],"text":"` + big[:5000] + `"}`, 4000, ErrTooLarge, "the longest first item is 1 character, in \"/a\")"},
		{"a long path cut", `{"` + big[:300] + `":{"b":["` + big[:5000] + `",1]}}`, 4000, ErrTooLarge, `in "/` + big[:199] + `…"`},
		{"not JSON", `{"a":`, 3, ErrBadInput, "result is not one valid JSON value: "},
		{"not JSON and fits", `{"a":}`, 100, ErrBadInput, "result is not one valid JSON value: "},
		{"empty", ``, 100, ErrBadInput, "result is not one valid JSON value: "},
		{"two values", `[1,2] [3]`, 5, ErrBadInput, "result is not one valid JSON value: "},
		{"two values that fit", `1 2`, 100, ErrBadInput, "result is not one valid JSON value: "},
		{"trailing comma", `[1,2,]`, 3, ErrBadInput, "result is not one valid JSON value: "},
		{"budget of zero", `1`, 0, ErrBadInput, "the budget must be at least 1 character, got 0"},
		{"negative budget", `1`, -5, ErrBadInput, "the budget must be at least 1 character, got -5"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Fit([]byte(c.in), c.max)
			require.Error(t, err)
			assert.Nil(t, got)
			assert.True(t, errors.Is(err, c.kind), "%v is not %v", err, c.kind)
			assert.Contains(t, err.Error(), c.msg)
		})
	}
}

func TestCountChars(t *testing.T) {
	for _, s := range []string{"", "a", "abcdefgh", "abcdefghi", "abcdefgé", "é", "ééééé", "😀x", "\xff", "a\xffb", "\xe2\x82", "abcdefg\xe2\x82\xac", strings.Repeat("ab€", 9)} {
		assert.Equal(t, utf8.RuneCountInString(s), countChars([]byte(s)), "%q", s)
	}
}
