package budget

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// checkFit holds Fit(in, maxChars) to the package doc's promises, for any
// input and any budget.
func checkFit(t *testing.T, in []byte, maxChars int) {
	t.Helper()
	require.Equal(t, utf8.RuneCount(in), countChars(in))
	out, err := Fit(in, maxChars)
	if maxChars < 1 || !json.Valid(in) {
		require.ErrorIs(t, err, ErrBadInput, "input %q, budget %d", in, maxChars)
		require.Nil(t, out)
		return
	}
	require.NotErrorIs(t, err, ErrBadInput, "encoding/json accepts %q", in)
	if utf8.RuneCount(in) <= maxChars {
		require.NoError(t, err)
		require.Equal(t, in, out, "a result that fits is returned as it is")
		if len(in) > 0 {
			require.Same(t, &in[0], &out[0], "not even copied")
		}
		return
	}

	// The shortest result the rules allow, measured as Fit measures it.
	s, err2 := readShape(in, countChars(in))
	require.NoError(t, err2)
	nameCounts(s)
	size := trim(s, 0)
	shortest := render(s, size)
	require.Equal(t, utf8.RuneCount(shortest), size, "counted length of %q", shortest)
	require.True(t, json.Valid(shortest), "%q", shortest)
	checkShape(t, in, shortest, true)

	if err != nil {
		require.ErrorIs(t, err, ErrTooLarge)
		require.Nil(t, out)
		require.Greater(t, size, maxChars, "Fit failed though %q fits in %d", shortest, maxChars)
	} else {
		require.True(t, json.Valid(out), "%q", out)
		require.LessOrEqual(t, utf8.RuneCount(out), maxChars, "%q", out)
		checkShape(t, in, out, false)
	}

	// The naive reading of the rules gives the same answer, byte for byte.
	var c bytes.Buffer
	require.NoError(t, json.Compact(&c, in))
	want, ok := refFit(c.Bytes(), maxChars)
	got, err := Fit(c.Bytes(), maxChars)
	require.Equal(t, ok, err == nil, "compact %q, budget %d: reference ok=%v, Fit error %v", c.Bytes(), maxChars, ok, err)
	require.Equal(t, string(want), string(got), "compact %q, budget %d", c.Bytes(), maxChars)
}

// checkShape checks that out is in trimmed by the rules: every member and
// byte kept, kept items a prefix of the original items, each shortened
// list counted once under the name rule 4 gives. With shortest, every list
// of two items or more must be down to one.
func checkShape(t *testing.T, in, out []byte, shortest bool) {
	t.Helper()
	a, err := refParse(in)
	require.NoError(t, err)
	b, err := refParse(out)
	require.NoError(t, err, "%q", out)
	switch {
	case a.kind == '[' && b.kind == '[':
		checkKept(t, a, b, shortest)
		require.Equal(t, len(a.items), len(b.items), "a top-level list not shortened stays a list")
	case a.kind == '[':
		require.Equal(t, byte('{'), b.kind, "%q", out)
		require.Len(t, b.members, 2, "%q", out)
		require.Equal(t, `"items"`, string(b.members[0].raw))
		require.Equal(t, `"omitted"`, string(b.members[1].raw))
		kept := b.members[0].value
		checkKept(t, a, kept, shortest)
		require.Less(t, len(kept.items), len(a.items), "wrapped only when shortened")
		require.Equal(t, strconv.Itoa(len(a.items)-len(kept.items)), string(b.members[1].value.raw))
	case a.kind == '{':
		checkObject(t, a, b, shortest)
	default:
		require.Equal(t, string(in), string(out))
	}
}

// checkObject compares an object with its trimmed form.
func checkObject(t *testing.T, a, b *refNode, shortest bool) {
	t.Helper()
	require.Equal(t, byte('{'), b.kind)
	require.GreaterOrEqual(t, len(b.members), len(a.members))
	dropped := map[*refNode]int{}
	for i, m := range a.members {
		bm := b.members[i]
		require.Equal(t, string(m.raw), string(bm.raw), "members keep their names and order")
		switch m.value.kind {
		case '{':
			checkObject(t, m.value, bm.value, shortest)
		case '[':
			checkKept(t, m.value, bm.value, shortest)
			if n := len(m.value.items) - len(bm.value.items); n > 0 {
				m.value.keep = len(bm.value.items)
				dropped[m.value] = n
			}
		default:
			require.Equal(t, string(m.value.raw), string(bm.value.raw))
		}
	}
	// The counts: one per shortened list, in order, named by rule 4.
	names := countNames(a)
	extra := b.members[len(a.members):]
	require.Len(t, extra, len(dropped), "one count per shortened list")
	i := 0
	for _, m := range a.members {
		n, ok := dropped[m.value]
		if !ok {
			continue
		}
		require.Equal(t, names[m.value], extra[i].name)
		require.Equal(t, strconv.Itoa(n), string(extra[i].value.raw), "count of %s", m.raw)
		i++
	}
}

// checkKept checks that kept holds a prefix of list's items, byte for byte,
// and at least the first.
func checkKept(t *testing.T, list, kept *refNode, shortest bool) {
	t.Helper()
	require.Equal(t, byte('['), kept.kind)
	require.LessOrEqual(t, len(kept.items), len(list.items))
	if len(list.items) > 0 {
		require.NotEmpty(t, kept.items, "every list keeps its first item")
	}
	if shortest && len(list.items) > 1 {
		require.Len(t, kept.items, 1)
	}
	for i, it := range kept.items {
		require.Equal(t, string(list.items[i]), string(it), "item %d kept byte for byte", i)
	}
}

// generate builds a JSON value from the bytes of b: objects, lists (some
// inside items), names that collide with counts, multi-byte characters, and
// white space when b asks for it.
func generate(b []byte) []byte {
	g := &gen{b: b}
	space := g.n(4) == 0
	v := g.value(3, true)
	if !space {
		return v
	}
	// Spread white space between tokens, keeping strings intact.
	var out []byte
	in := false
	for i, c := range v {
		out = append(out, c)
		if c == '"' && (i == 0 || v[i-1] != '\\' || (i > 1 && v[i-2] == '\\')) {
			in = !in
		}
		if !in && strings.IndexByte("{}[],:", c) >= 0 && g.n(2) == 0 {
			out = append(out, " \n\t"[g.n(3)])
		}
	}
	return append([]byte(" "), out...)
}

// gen reads choices from bytes; past the end every choice is 0. It stops
// adding members and items after about 2,000 bytes, which keeps the naive
// reference quick.
type gen struct {
	b    []byte
	i    int
	size int
}

func (g *gen) n(k int) int {
	if g.i >= len(g.b) {
		return 0
	}
	g.i++
	return int(g.b[g.i-1]) % k
}

var (
	genNames   = []string{`"a"`, `"b"`, `"omitted"`, `"omitted_a"`, `"omitted_a_2"`, `"items"`, `"omitt\u0065d"`, `"é"`, `"a/b~c"`, `"a\"b"`, `"omitted_b"`, `"c"`}
	genScalars = []string{`1`, `-2.5e3`, `true`, `null`, `"x"`, `"ééé"`, `"\u00e9"`, `"😀😀"`, `""`, `"long text long text long text"`, `12345678901234567890`, `"\\"`}
)

func (g *gen) value(depth int, top bool) []byte {
	kind := g.n(4)
	if depth == 0 || g.size > 2000 {
		kind = 3
	}
	switch kind {
	case 0, 1:
		if top || kind == 0 {
			var members [][]byte
			for range g.n(5) {
				name := genNames[g.n(len(genNames))]
				g.size += len(name)
				m := append([]byte(name+":"), g.value(depth-1, false)...)
				members = append(members, m)
			}
			return append(append([]byte("{"), bytes.Join(members, []byte(","))...), '}')
		}
		fallthrough
	case 2:
		var items [][]byte
		n := g.n(24)
		for range n {
			if g.n(3) == 0 {
				items = append(items, g.value(depth-1, false))
			} else {
				items = append(items, g.value(0, false))
			}
		}
		return append(append([]byte("["), bytes.Join(items, []byte(","))...), ']')
	}
	v := genScalars[g.n(len(genScalars))]
	g.size += len(v)
	return []byte(v)
}

// budgetFor picks a budget from a number, over the whole useful range.
func budgetFor(in []byte, n uint16) int { return 1 + int(n)%(utf8.RuneCount(in)+10) }

// FuzzFit holds Fit to its promises for any bytes and any budget.
func FuzzFit(f *testing.F) {
	for _, c := range fuzzSeeds {
		f.Add([]byte(c.in), c.max)
	}
	f.Fuzz(func(t *testing.T, in []byte, maxChars int) {
		checkFit(t, in, maxChars)
	})
}

// FuzzFitGenerated holds Fit to its promises for JSON built from the fuzz
// bytes, which reaches far more shortening than random bytes do.
func FuzzFitGenerated(f *testing.F) {
	for i := range 40 {
		r := rand.New(rand.NewPCG(uint64(i), 7))
		b := make([]byte, 64)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		f.Add(b, uint16(r.Uint32()))
	}
	f.Fuzz(func(t *testing.T, b []byte, n uint16) {
		in := generate(b)
		checkFit(t, in, budgetFor(in, n))
	})
}

// TestFitProperties runs the generated checks on fixed random inputs, so a
// plain go test covers them too.
func TestFitProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		b := make([]byte, 1+r.IntN(200))
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		in := generate(b)
		checkFit(t, in, budgetFor(in, uint16(r.Uint32())))
	}
}

func TestFitPropertiesOnSeeds(t *testing.T) {
	for _, c := range fuzzSeeds {
		checkFit(t, []byte(c.in), c.max)
	}
}

// TestGenerateIsJSON keeps the generator honest.
func TestGenerateIsJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	lists := 0
	for range 500 {
		b := make([]byte, 100)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		in := generate(b)
		require.True(t, json.Valid(in), "%q", in)
		if bytes.Contains(in, []byte("[")) {
			lists++
		}
	}
	require.Greater(t, lists, 200, "most generated values hold lists")
}

var fuzzSeeds = []struct {
	in  string
	max int
}{
	{`{"orders":[1,2,3,4,5,6,7,8,9,10]}`, 30},
	{`[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25]`, 40},
	{`{"omitted":1,"a":[1,2,3,4,5],"b":[6,7,8,9,10,11]}`, 45},
	{`{"a":[1,2,3],"a":[4,5,6],"omitted_a":0}`, 40},
	{`{"d":{"e":[[1,2],[3,4],[5,6]]},"f":["é","😀","x"]}`, 35},
	{" { \"a\" : [ 1 , 2 , 3 , 4 , 5 ] } ", 20},
	{`"` + strings.Repeat("x", 50) + `"`, 10},
	{`{"a":`, 3}, {`[1,2,]`, 3}, {``, 1}, {`1 2`, 10}, {`{"a":1}`, 0}, {`{"a":1}`, -1},
	{"\"\xff\xfe\"", 2}, {`["\ud800","\udc00x",1]`, 10}, {`{"\ud800":[1,2,3,4]}`, 12},
	{`[[[[[[1]]]]],2,3]`, 5}, {`[1,2]`, math.MaxInt}, {`[1,2]`, math.MinInt}, {`{"a":{"b":{"c":[1,2,3,4,5,6]}}}`, 25},
}
