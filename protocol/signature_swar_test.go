package protocol

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// parseMillisRef is the byte-at-a-time reading parseMillis replaced.
func parseMillisRef(s string) (int64, bool) {
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// TestParseMillisEveryByte puts every byte value at every place of
// every length 1 to 18, among digits all 0, all 9 or random (a borrow or
// carry between bytes must not hide a non-digit), and every pair of byte
// values at every two places of one eight-byte word.
func TestParseMillisEveryByte(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	check := func(s []byte) {
		t.Helper()
		got, ok := parseMillis(string(s))
		want, wantOK := parseMillisRef(string(s))
		if ok != wantOK || got != want {
			t.Fatalf("parseMillis(%q) = %d, %v; want %d, %v", s, got, ok, want, wantOK)
		}
		if ok {
			if v, err := strconv.ParseInt(string(s), 10, 64); err != nil || v != got {
				t.Fatalf("parseMillis(%q) = %d, strconv %d %v", s, got, v, err)
			}
		}
	}
	for n := 1; n <= 18; n++ {
		for _, bg := range []byte{'0', '9', 'r'} {
			s := make([]byte, n)
			for i := range s {
				s[i] = bg
				if bg == 'r' {
					s[i] = byte('0' + rng.IntN(10))
				}
			}
			check(s)
			for pos := range n {
				keep := s[pos]
				for b := range 256 {
					s[pos] = byte(b)
					check(s)
				}
				s[pos] = keep
			}
		}
	}
	s := []byte("55555555")
	for _, bg := range []byte{'0', '9'} {
		for i := range s {
			s[i] = bg
		}
		for p := range 8 {
			for q := p + 1; q < 8; q++ {
				for a := range 256 {
					for b := range 256 {
						s[p], s[q] = byte(a), byte(b)
						if got, ok := parseMillis(string(s)); ok {
							want, wantOK := parseMillisRef(string(s))
							if !wantOK || got != want {
								t.Fatalf("parseMillis(%q) = %d, true", s, got)
							}
						} else if _, wantOK := parseMillisRef(string(s)); wantOK {
							t.Fatalf("parseMillis(%q) refused digits", s)
						}
					}
				}
				s[p], s[q] = bg, bg
			}
		}
	}
	if v, ok := parseMillis("999999999999999999"); !ok || v != 999999999999999999 {
		t.Fatalf("18 nines: %d %v", v, ok)
	}
	if v, ok := parseMillis(""); !ok || v != 0 {
		t.Fatalf("empty: %d %v", v, ok)
	}
}
