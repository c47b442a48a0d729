package protocol

import (
	"encoding/hex"
	"math/rand/v2"
	"strconv"
	"strings"
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

// TestDecodeHex32EveryByte puts every byte value at every place of 64
// hex digits (all '0', all 'f', all 'F' and random) and checks
// decodeHex32 against encoding/hex: a byte the one-pass parser read as a
// digit when it is not one would let a header through unchecked by the
// full parser.
func TestDecodeHex32EveryByte(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const digits = "0123456789abcdefABCDEF"
	for _, bg := range []byte{'0', 'f', 'F', 'r'} {
		s := make([]byte, 64)
		for i := range s {
			s[i] = bg
			if bg == 'r' {
				s[i] = digits[rng.IntN(len(digits))]
			}
		}
		for pos := range 64 {
			keep := s[pos]
			for b := range 256 {
				s[pos] = byte(b)
				var got [32]byte
				ok := decodeHex32(&got, string(s))
				want, err := hex.DecodeString(string(s))
				if ok != (err == nil) || ok && string(got[:]) != string(want) {
					t.Fatalf("decodeHex32(%q) = %x, %v; encoding/hex: %x, %v", s, got, ok, want, err)
				}
			}
			s[pos] = keep
		}
	}
	// Every pair of byte values at every two places of one eight-byte
	// word: a carry between bytes must not make two non-digits read as
	// digits.
	isHex := func(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
	for _, bg := range []byte{'0', 'f'} {
		s := []byte(strings.Repeat(string(bg), 64))
		for p := range 8 {
			for q := p + 1; q < 8; q++ {
				for a := range 256 {
					for b := range 256 {
						s[p], s[q] = byte(a), byte(b)
						var got [32]byte
						if decodeHex32(&got, string(s)) != (isHex(byte(a)) && isHex(byte(b))) {
							t.Fatalf("decodeHex32(%q) read a non-digit as a digit, or a digit as none", s[:8])
						}
					}
				}
				s[p], s[q] = bg, bg
			}
		}
	}
	var dst [32]byte
	if decodeHex32(&dst, strings.Repeat("a", 63)) || decodeHex32(&dst, strings.Repeat("a", 65)) {
		t.Fatal("decodeHex32 took a length other than 64")
	}
}

// TestUsualSignatureTakesTheOnePass: the header Median sends is read by
// the one-pass parser itself, from the shortest (a one-digit t) to the
// longest t it reads (18 digits), in either hex case; any other form is
// left to the full parser. (The full parser reads the same values, so
// only this test sees the one-pass parser decline a header it must take.)
func TestUsualSignatureTakesTheOnePass(t *testing.T) {
	lower, upper := strings.Repeat("0123456789abcdef", 4), strings.Repeat("0123456789ABCDEF", 4)
	want, err := hex.DecodeString(lower)
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range []string{"0", "7", "1767225600000", "99999999", "123456789", "999999999999999999"} {
		for _, mac := range []string{lower, upper} {
			var sig signature
			h := "t=" + ts + ",v1=" + mac
			if !parseUsualSignature(&sig, h) {
				t.Fatalf("the one-pass parser declined %q", h)
			}
			n, _ := strconv.ParseInt(ts, 10, 64)
			if sig.timestamp != n || sig.ts != ts || !sig.hasV1 || string(sig.first[:]) != string(want) || sig.more != nil {
				t.Fatalf("%q read as t=%d (%q), v1=%x, hasV1 %v", h, sig.timestamp, sig.ts, sig.first, sig.hasV1)
			}
		}
	}
	for _, h := range []string{
		"",
		"t=,v1=" + lower,                     // no digit
		"t=1234567890123456789,v1=" + lower,  // 19 digits: past what it reads
		"t=-5,v1=" + lower,                   // a sign
		"t=1,v1=" + lower + ",v1=" + lower,   // two MACs
		"t=1,v2=" + lower,                    // another scheme
		"t=1,v1=" + lower[:63] + "g",         // not hex
		"t=1,v1=" + lower[:63],               // short
		"v1=" + lower + ",t=1",               // another order
		" t=1,v1=" + lower,                   // a space
		"T=1,v1=" + lower, "tt1,v1=" + lower, // not "t="
		"t=1;v1=" + lower, "t=1,v1:" + lower, // not ",v1="
	} {
		var sig signature
		if parseUsualSignature(&sig, h) {
			t.Fatalf("the one-pass parser took %q", h)
		}
	}
}
