package protocol

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// genBody writes a random body shaped like a tool call: the known names at
// their places, sometimes escaped, in another case, repeated, missing or
// moved, their values of any kind, and unknown members around them.
type genBody struct {
	r *rand.Rand
}

func (g *genBody) name(n string) string {
	switch g.r.IntN(14) {
	case 0: // one character escaped
		i := g.r.IntN(len(n))
		return `"` + n[:i] + fmt.Sprintf(`\u%04x`, n[i]) + n[i+1:] + `"`
	case 1:
		return `"` + strings.ToUpper(n[:1]) + n[1:] + `"`
	case 2:
		return `"` + n + ` "`
	}
	return `"` + n + `"`
}

func (g *genBody) str() string {
	return []string{`"low"`, `"high"`, `"medium"`, `"reviewed"`, `"x"`, `""`, `"a\"b"`, `"\u00e9"`, `"\ud83d\ude00"`, `"\ud800"`, "\"\xff\"", `"diagnostics"`, `"` + strings.Repeat("y", 5000) + `"`}[g.r.IntN(13)]
}

func (g *genBody) any(depth int) string {
	switch k := g.r.IntN(10); {
	case k < 3:
		return g.str()
	case k == 3:
		return []string{"true", "false"}[g.r.IntN(2)]
	case k == 4:
		return "null"
	case k == 5:
		return []string{"0", "-1.5e3", "1e999", "01", "-"}[g.r.IntN(5)]
	case k == 6 && depth < 4:
		return "[" + g.any(depth+1) + "," + g.any(depth+1) + "]"
	case depth < 4:
		return g.object(depth+1, nil)
	}
	return "{}"
}

// object writes an object with the given known members (name → value
// maker), shuffled, some left out or repeated, and unknown members.
func (g *genBody) object(depth int, known map[string]func() string) string {
	var members []string
	for n, v := range known {
		if g.r.IntN(12) == 0 {
			continue
		}
		members = append(members, g.name(n)+":"+v())
		if g.r.IntN(25) == 0 {
			members = append(members, g.name(n)+":"+v())
		}
	}
	for range g.r.IntN(3) {
		n := []string{"x", "y", "", "op", "tool", "input", "\u00e9", "a\\u0062"}[g.r.IntN(8)]
		members = append(members, `"`+n+`":`+g.any(depth))
	}
	g.r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	sep := []string{",", " , ", ",\n\t"}[g.r.IntN(3)]
	return "{" + strings.Join(members, sep) + "}"
}

func (g *genBody) call() string {
	typed := func(usual func() string) func() string {
		return func() string {
			if g.r.IntN(10) == 0 {
				return g.any(3)
			}
			return usual()
		}
	}
	visitor := map[string]func() string{
		"verified":   typed(func() string { return []string{"true", "false"}[g.r.IntN(2)] }),
		"externalId": typed(g.str), "email": typed(g.str), "name": typed(g.str),
	}
	context := map[string]func() string{
		"conversationId": typed(g.str), "risk": typed(g.str), "approvedBy": typed(g.str),
		"visitor": typed(func() string { return g.object(3, visitor) }),
	}
	top := map[string]func() string{
		"tool": typed(g.str), "toolCallId": typed(g.str),
		"input":   typed(func() string { return g.object(2, map[string]func() string{"a": func() string { return g.any(2) }}) }),
		"context": typed(func() string { return g.object(2, context) }),
	}
	if g.r.IntN(20) == 0 {
		top["op"] = typed(g.str)
	}
	body := g.object(1, top)
	switch g.r.IntN(20) {
	case 0:
		body = " \n" + body + " \t"
	case 1:
		body += " {}"
	case 2:
		body = body[:g.r.IntN(len(body))]
	}
	return body
}

// TestGeneratedBodies holds decodeUsual to decodeAny, and decodeBody to
// decodeAny alone, for generated calls, of which decodeUsual takes a few
// in a hundred (most are refused by decodeAny too).
func TestGeneratedBodies(t *testing.T) {
	g := &genBody{r: rand.New(rand.NewPCG(7, 8))}
	n := 3000 // a few seconds under -race
	if testing.Short() {
		n = 500
	}
	took := 0
	for range n {
		body := []byte(g.call())
		if checkUsualAgrees(t, body) {
			took++
		}
		checkDecodeBodyIsDecodeAny(t, body)
	}
	t.Logf("decodeUsual took %d of %d", took, n)
	// Without calls the fast path takes, the agreement is checked on none.
	require.Greater(t, took, n/100, "the generator must make calls decodeUsual takes")
}
