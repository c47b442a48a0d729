package protocol

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"time"
)

// This file has two parsers of the median-signature header, for speed:
// parseUsualSignature reads the one form Median sends,
// "t=<ms>,v1=<64 hex>" with nothing around it, in one pass and without
// allocating, and answers only "parsed" or "not this form"; parseSignature
// reads every form the contract allows (several v1 entries, other schemes,
// spaces, any order) and explains what is wrong with a header it refuses.
// parseSignature tries the usual form first. FuzzParseSignature holds the
// two to one reading: for any header it checks what parseSignature returns,
// by either path, against a reference reading of the contract's rules.

// signatureHeader is the header that carries Median's signature.
const signatureHeader = "median-signature"

// defaultTolerance is how far the signature's timestamp may be from the
// server clock, in either direction (PROTOCOL.md §1.1).
const defaultTolerance = 5 * time.Minute

// signature is a parsed median-signature header. It holds no secret.
type signature struct {
	timestamp int64      // the sender's clock, in milliseconds since the Unix epoch
	ts        string     // t exactly as sent: it is what was signed
	hasV1     bool       // first holds a v1 entry
	first     [32]byte   // the first v1 entry, decoded (kept inline: no allocation)
	more      [][32]byte // any further v1 entries (the sender's key rotation)
}

// Messages of the signature errors; each is prefixed to the detail.
const (
	msgMissingSignature   = "missing median-signature header"
	msgMalformedSignature = "malformed median-signature header"
	msgStaleTimestamp     = "signature timestamp outside the tolerance window"
	msgInvalidSignature   = "signature does not match"
)

// parseSignature parses a header of the form "t=<ms>,v1=<hex>[,v1=<hex>…]".
// Several v1 entries are allowed (the sender's key rotation), entries with
// other scheme names are ignored and spaces around entries are tolerated.
// An empty header is missing_signature; a header with no t, two t, a t that
// is not a base-10 integer, no v1 or a v1 that is not 64 hex digits is
// malformed_signature. Like checkTime and verify, its errors are *Error.
func parseSignature(header string) (signature, error) {
	var sig signature
	err := sig.parse(header)
	return sig, err
}

// parse is parseSignature into s, which must be zero: a signature is
// large enough that returning it by value twice cost a third of the
// one-pass parse.
func (s *signature) parse(header string) error {
	if parseUsualSignature(s, header) {
		return nil
	}
	*s = signature{}
	header = strings.TrimSpace(header)
	if header == "" {
		return errorf(CodeMissingSignature, "%s: send t=<unix ms>,v1=<hex hmac> in the %s header", msgMissingSignature, signatureHeader)
	}
	malformed := func(format string, args ...any) error {
		*s = signature{}
		return errorf(CodeMalformedSignature, msgMalformedSignature+": "+format, args...)
	}
	seenT := false
	for part := range strings.SplitSeq(header, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return malformed("entry %q is not name=value", truncate(part, 16))
		}
		switch name {
		case "t":
			if seenT {
				return malformed("more than one t= entry")
			}
			seenT = true
			ms, err := strconv.ParseInt(value, 10, 64)
			if err != nil || value == "" || value[0] == '+' {
				return malformed("t=%q is not a base-10 integer of milliseconds", truncate(value, 24))
			}
			s.timestamp, s.ts = ms, value
		case "v1":
			var mac [32]byte
			if len(value) != 64 {
				return malformed("v1 must be 64 hex digits, got %d characters", len(value))
			}
			if _, err := hex.Decode(mac[:], []byte(value)); err != nil {
				return malformed("v1 must be 64 hex digits")
			}
			if !s.hasV1 {
				s.first, s.hasV1 = mac, true
			} else {
				s.more = append(s.more, mac)
			}
		}
	}
	if !seenT {
		return malformed("no t= entry")
	}
	if !s.hasV1 {
		return malformed("no v1= entry")
	}
	return nil
}

// parseUsualSignature parses the header Median sends, "t=<ms>,v1=<64 hex>"
// with nothing around it, in one pass; it reports false for any other form,
// which parseSignature then reads in full. FuzzParseSignature holds the two
// to the same reading.
func parseUsualSignature(sig *signature, h string) bool {
	const macHex = 64
	if len(h) < len("t=0,v1=")+macHex || h[0] != 't' || h[1] != '=' {
		return false
	}
	digits := len(h) - len("t=,v1=") - macHex
	if digits > 18 { // 18 digits always fit in an int64
		return false
	}
	ms, ok := parseMillis(h[2 : 2+digits])
	if !ok {
		return false
	}
	rest := h[2+digits:]
	if rest[:4] != ",v1=" {
		return false
	}
	if !decodeHex32(&sig.first, rest[4:4+macHex]) {
		return false
	}
	sig.timestamp, sig.ts, sig.hasV1 = ms, h[2:2+digits], true
	return true
}

// parseMillis reads at most 18 decimal digits, eight at a time while it
// can, and reports false when one is not a digit.
func parseMillis(s string) (int64, bool) {
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
	)
	var n int64
	for len(s) >= 8 {
		x := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		// Per byte, high bit set when it is below '0' (x-'0' borrows) or above
		// '9' (x+0x46 has it for bytes up to 0xb9, x-'0' from 0xb0 on). A
		// borrow or carry between bytes starts only at a byte that is itself
		// caught (TestParseMillisEveryByte).
		if ((x-0x30*ones)|(x+(0x80-0x3a)*ones))&high != 0 {
			return 0, false
		}
		x -= 0x30 * ones                                      // each byte 0-9, first digit lowest
		x = (x*10 + x>>8) & 0x00ff00ff00ff00ff                // pairs: 0-99 per 16 bits
		x = (x*100 + x>>16) & 0x0000ffff0000ffff              // fours: 0-9999 per 32 bits
		n = n*100_000_000 + int64((x*10000+x>>32)&0xffffffff) // eight
		s = s[8:]
	}
	for i := 0; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, false
		}
		n = n*10 + int64(c)
	}
	return n, true
}

// decodeHex32 decodes 64 hex digits (either case) into dst, eight at a
// time, and reports false when one is not a hex digit. It is the one-pass
// header's hex decoder: a byte-at-a-time table cost as much as the rest of
// the header's parse.
func decodeHex32(dst *[32]byte, hexs string) bool {
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
	)
	if len(hexs) != 64 {
		return false
	}
	for w := range 8 {
		c := hexs[8*w : 8*w+8]
		x := uint64(c[0]) | uint64(c[1])<<8 | uint64(c[2])<<16 | uint64(c[3])<<24 |
			uint64(c[4])<<32 | uint64(c[5])<<40 | uint64(c[6])<<48 | uint64(c[7])<<56
		if x&high != 0 {
			return false // not ASCII; below, every byte is under 0x80, so sums never carry
		}
		// Per byte, (b + 0x80-lo) has its high bit set when b >= lo.
		digit := (x + (0x80-0x30)*ones) &^ (x + (0x80-0x3a)*ones) & high
		f := x | 0x20*ones // 'A'-'F' to 'a'-'f'
		alpha := (f + (0x80-0x61)*ones) &^ (f + (0x80-0x67)*ones) & high
		if digit|alpha != high {
			return false
		}
		v := x&(0x0f*ones) + (alpha>>7)*9 // each byte's value, 0-15
		// Each 16-bit lane holds two digits, first in its low byte: join them.
		v = (v&0x00ff00ff00ff00ff)<<4 | (v>>8)&0x00ff00ff00ff00ff
		v = (v | v>>8) & 0x0000ffff0000ffff // the four bytes together
		binary.LittleEndian.PutUint32(dst[4*w:], uint32(v|v>>16))
	}
	return true
}

// checkTime refuses a timestamp more than tolerance away from now, in the
// past or in the future (stale_timestamp). Exactly tolerance away is still
// accepted.
func (s *signature) checkTime(now time.Time, tolerance time.Duration) error {
	skew := skewMs(now, s.timestamp) // saturates: a t near either end of int64 is as far as can be, the right way
	if diffAbs(skew) > tolerance.Milliseconds() {
		hint := ""
		if s.timestamp > 0 && s.timestamp < 1e11 {
			hint = "; t looks like seconds, it must be milliseconds"
		}
		return errorf(CodeStaleTimestamp, "%s: t is %s %s the server clock; at most %s either way is accepted%s", msgStaleTimestamp, msDuration(diffAbs(skew)), direction(skew), tolerance, hint)
	}
	return nil
}

// verify returns nil when one of the signature's v1 entries is the
// HMAC-SHA256 of "<t>.<body>" under one of keys, and invalid_signature
// otherwise. Comparison is constant-time; the error never contains a
// computed signature.
func (s *signature) verify(body []byte, keys ...Key) error {
	if s.match(body, keys) < 0 {
		return errInvalidSignature
	}
	return nil
}

// match returns the index of the first of keys under which one of the
// signature's v1 entries is the HMAC-SHA256 of "<t>.<body>", or -1.
func (s *signature) match(body []byte, keys []Key) int {
	for i, k := range keys {
		if k.st != nil && k.matches(s.ts, body, &s.first, s.more) {
			return i
		}
	}
	return -1
}

var errInvalidSignature = newError(CodeInvalidSignature, msgInvalidSignature+": no v1 matches under any configured key; check that MEDIAN_KEY is the key from Median's dashboard and that nothing re-encodes the body before it reaches this handler")

// VerifySignature is the whole signature check of PROTOCOL.md §1.1 in one
// call: it parses header (the median-signature header's value), checks its
// timestamp against now within tolerance either way (the contract's is 5
// minutes) and verifies the MAC of body under any of keys. Use it to check
// a signed request outside a [Handler]; a Handler does the same, but refuses
// a bad header before it reads the body.
//
// The error is an *[Error] whose code is one of [CodeMissingSignature],
// [CodeMalformedSignature], [CodeStaleTimestamp] or [CodeInvalidSignature]:
// test it with errors.Is(err, protocol.CodeStaleTimestamp). It allocates
// nothing when the signature is good.
func VerifySignature(header string, body []byte, now time.Time, tolerance time.Duration, keys ...Key) error {
	var sig signature
	err := sig.parse(header)
	if err == nil {
		err = sig.checkTime(now, tolerance)
	}
	if err == nil {
		err = sig.verify(body, keys...)
	}
	return err
}

// skewMs is the server clock minus the sender's t, in milliseconds,
// saturating instead of overflowing for an absurd t.
func skewMs(now time.Time, t int64) int64 {
	n := now.UnixMilli()
	d := n - t
	if (t < 0 && d < n) || (t > 0 && d > n) {
		if t < 0 {
			return math.MaxInt64
		}
		return math.MinInt64 + 1
	}
	return d
}

// direction says whether a timestamp diff (now - t) is behind or ahead.
func direction(diffMS int64) string {
	if diffMS < 0 {
		return "ahead of"
	}
	return "behind"
}

// diffAbs is |d|, saturating instead of overflowing.
func diffAbs(d int64) int64 {
	if d < 0 {
		d = -d
	}
	if d < 0 {
		return math.MaxInt64
	}
	return d
}

func msDuration(ms int64) string {
	if ms < 0 || ms > int64(1<<62)/int64(time.Millisecond) {
		return "more than 100 years"
	}
	return (time.Duration(ms) * time.Millisecond).String()
}
