// Package chars is the one rule for counting the characters of an answer,
// shared by every part of the module that counts them: protocol's result
// budget (FitResult, WithResultBudget), its warning for a result longer than
// the agent reads, and the agent's view that conformance computes. The
// agent reads the first 4,000 characters of a result and Median keeps the
// first 2,000 of a diagnostics answer (docs/PROTOCOL.md §3.3).
//
// A character is a Unicode code point of the encoded text, counted as
// utf8.RuneCount counts them: a byte that is not valid UTF-8 is one
// character. Bytes are never the unit.
//
// It is a leaf the core and the client share (internal/base), imported by
// protocol, conformance, conformance/agent and conformance/internal; it
// imports no package of the module, so the core and every package above it
// can import it (internal/testonly/surface holds it to protocol at most).
package chars

import (
	"encoding/binary"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Result is how many characters of a result the agent reads.
const Result = 4000

// Diagnostics is how many characters of a diagnostics answer Median keeps.
const Diagnostics = 2000

// Count returns the number of characters in b, as utf8.RuneCount counts
// them, eight ASCII bytes at a time and without the copy utf8.RuneCount
// makes of text that is not ASCII.
func Count(b []byte) int {
	n := 0
	for len(b) > 0 {
		for len(b) >= 8 && binary.LittleEndian.Uint64(b)&0x8080808080808080 == 0 {
			n += 8
			b = b[8:]
		}
		if len(b) == 0 {
			break
		}
		n++
		b = b[size(b):]
	}
	return n
}

// Prefix returns the first n characters of b (all of b when it has no
// more), cut by the same rule as Count: Count(Prefix(b, n)) is min(n,
// Count(b)) and a character is never split. n below 1 returns an empty
// prefix.
func Prefix(b []byte, n int) []byte {
	i := 0
	for left := n; left > 0 && i < len(b); left-- {
		i += size(b[i:])
	}
	return b[:i]
}

// size is the length in bytes of the character b starts with.
func size(b []byte) int {
	if b[0] < utf8.RuneSelf {
		return 1
	}
	_, s := utf8.DecodeRune(b)
	return s
}

// Snippet returns the first n characters of b, with "…" when it cut
// some: a piece of an answer fit for an error message.
func Snippet(b []byte, n int) string {
	if p := Prefix(b, n); len(p) < len(b) {
		return string(p) + "…"
	}
	return string(b)
}

// Line returns b on one line, each run of white space made one space, and
// shortened to n characters as Snippet shortens it: a piece of an answer
// fit for a one-line message. An empty b is "(empty body)".
func Line(b []byte, n int) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if s == "" {
		return "(empty body)"
	}
	return Snippet([]byte(s), n)
}

// Group writes n in decimal with a comma between groups of three digits
// (4000 as "4,000"), as the module's messages write character counts.
func Group(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
