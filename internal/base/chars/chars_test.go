package chars

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// pieces are what the random texts are made of: ASCII, multi-byte
// characters, and bytes that are not valid UTF-8.
var pieces = []string{"a", "{\"k\":", "é", "€", "😀", "\xff", "\xe2\x82", "\xf0\x9f", " ", "12345678"}

func randomText(r *rand.Rand) []byte {
	var b []byte
	for n := r.IntN(40); n > 0; n-- {
		b = append(b, pieces[r.IntN(len(pieces))]...)
	}
	return b
}

func TestCountIsRuneCount(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		b := randomText(r)
		if got, want := Count(b), utf8.RuneCount(b); got != want {
			t.Fatalf("Count(%q) = %d, utf8.RuneCount = %d", b, got, want)
		}
	}
}

func TestPrefixCutsWholeCharacters(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		b := randomText(r)
		n := r.IntN(Count(b) + 3)
		p := Prefix(b, n)
		if got, want := Count(p), min(n, Count(b)); got != want {
			t.Fatalf("Count(Prefix(%q, %d)) = %d, want %d", b, n, got, want)
		}
		if string(b[:len(p)]) != string(p) {
			t.Fatalf("Prefix(%q, %d) = %q is not a prefix", b, n, p)
		}
		// The next character is not split: what follows starts where
		// Count's walk starts a character.
		if rest := b[len(p):]; Count(p)+Count(rest) != Count(b) {
			t.Fatalf("Prefix(%q, %d) = %q splits a character", b, n, p)
		}
	}
}

func TestPrefixEdges(t *testing.T) {
	if got := Prefix([]byte("abc"), 0); len(got) != 0 {
		t.Errorf("Prefix(abc, 0) = %q", got)
	}
	if got := Prefix([]byte("abc"), -1); len(got) != 0 {
		t.Errorf("Prefix(abc, -1) = %q", got)
	}
	if got := string(Prefix([]byte("€€€"), 2)); got != "€€" {
		t.Errorf("Prefix(€€€, 2) = %q", got)
	}
	if got := string(Prefix(nil, 5)); got != "" {
		t.Errorf("Prefix(nil, 5) = %q", got)
	}
}

func TestGroup(t *testing.T) {
	for n, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 9120: "9,120", 1048576: "1,048,576", -4000: "-4,000", -400: "-400"} {
		if got := Group(n); got != want {
			t.Errorf("Group(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestSnippet(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{{"", 3, ""}, {"abc", 3, "abc"}, {"abcd", 3, "abc…"}, {"ééé€", 3, "ééé…"}, {"é\xff", 2, "é\xff"}} {
		if got := Snippet([]byte(c.in), c.n); got != c.want {
			t.Errorf("Snippet(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

func TestLine(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{{"", 3, "(empty body)"}, {" \n\t", 3, "(empty body)"}, {"404 page not found\n", 40, "404 page not found"}, {"<a>\n  <b>", 40, "<a> <b>"}, {"a  b  c", 3, "a b…"}, {"é\n\né", 3, "é é"}} {
		if got := Line([]byte(c.in), c.n); got != c.want {
			t.Errorf("Line(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
