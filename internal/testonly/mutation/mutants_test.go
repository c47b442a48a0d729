package main

import (
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sample = `package p

import "errors"

const limit = 18

var table [32]byte

func f(a, b int, ok bool) (int, error) {
	if a < b && !ok {
		return 0, errors.New("x" + "y")
	}
	switch a {
	case 0x10:
		a++
	}
	err := g()
	if err != nil {
		return 0, err
	}
	g()
	return a * -b, nil
}

func g() error { return nil }
`

// TestGenerate: each kind of mutation is made where it applies, and only
// there; every mutant still parses.
func TestGenerate(t *testing.T) {
	ms, err := generate("p.go", []byte(sample))
	require.NoError(t, err)
	var got []string
	for _, m := range ms {
		got = append(got, m.Desc)
		_, err := parser.ParseFile(token.NewFileSet(), "p.go", m.apply([]byte(sample)), 0)
		assert.NoError(t, err, "mutant %q does not parse", m.Desc)
	}
	assert.ElementsMatch(t, []string{
		"`18` → `19`", "`18` → `17`", // a constant declaration
		"`<` → `<=`", "`<` → `>=`",
		"`&&` → `||`",
		"`!` removed from `!ok`",
		"early return dropped: body of `if a < b && !ok` emptied",
		"`0` → `1`", "`0` → `1`", // the returned zeros
		"`0x10` → `0x11`", "`0x10` → `0xf`", // a switch case
		"`++` → `--`",
		"`!=` → `==`",
		"returned `err` → `nil`",
		"early return dropped: body of `if err != nil` emptied",
		"call dropped: `g()`",
		"`*` → `/`",
	}, got, "the array length, the import and the string concatenation are left alone")
	for _, m := range ms {
		if m.Desc == "`*` → `/`" {
			assert.True(t, strings.Contains(string(m.apply([]byte(sample))), "return a / -b, nil"))
			assert.Equal(t, 22, m.Line)
		}
	}
}
