package protocol

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader is the header that carries Median's signature.
const SignatureHeader = "median-signature"

// DefaultTolerance is how far the signature's timestamp may be from the
// server clock, in either direction (PROTOCOL.md §1.1).
const DefaultTolerance = 5 * time.Minute

// Signature is a parsed median-signature header. Build it with
// [ParseSignature]; it holds no secret.
type Signature struct {
	// Timestamp is the sender's clock, in milliseconds since the Unix epoch.
	Timestamp int64
	ts        string     // t exactly as sent: it is what was signed
	hasV1     bool       // first holds a v1 entry
	first     [32]byte   // the first v1 entry, decoded (kept inline: no allocation)
	more      [][32]byte // any further v1 entries (the sender's key rotation)
}

// ParseSignature parses a header of the form "t=<ms>,v1=<hex>[,v1=<hex>…]".
// Several v1 entries are allowed (the sender's key rotation), entries with
// other scheme names are ignored and spaces around entries are tolerated.
// An empty header is [ErrMissingSignature]; a header with no t, two t, a t
// that is not a base-10 integer, no v1 or a v1 that is not 64 hex digits is
// [ErrMalformedSignature].
func ParseSignature(header string) (Signature, error) {
	header = strings.TrimSpace(header)
	if header == "" {
		return Signature{}, fmt.Errorf("%w: send t=<unix ms>,v1=<hex hmac> in the %s header", ErrMissingSignature, SignatureHeader)
	}
	var sig Signature
	seenT := false
	for part := range strings.SplitSeq(header, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return Signature{}, fmt.Errorf("%w: entry %q is not name=value", ErrMalformedSignature, truncate(part, 16))
		}
		switch name {
		case "t":
			if seenT {
				return Signature{}, fmt.Errorf("%w: more than one t= entry", ErrMalformedSignature)
			}
			seenT = true
			ms, err := strconv.ParseInt(value, 10, 64)
			if err != nil || value == "" || value[0] == '+' {
				return Signature{}, fmt.Errorf("%w: t=%q is not a base-10 integer of milliseconds", ErrMalformedSignature, truncate(value, 24))
			}
			sig.Timestamp, sig.ts = ms, value
		case "v1":
			var mac [32]byte
			if len(value) != 64 {
				return Signature{}, fmt.Errorf("%w: v1 must be 64 hex digits, got %d characters", ErrMalformedSignature, len(value))
			}
			if _, err := hex.Decode(mac[:], []byte(value)); err != nil {
				return Signature{}, fmt.Errorf("%w: v1 must be 64 hex digits", ErrMalformedSignature)
			}
			if !sig.hasV1 {
				sig.first, sig.hasV1 = mac, true
			} else {
				sig.more = append(sig.more, mac)
			}
		}
	}
	if !seenT {
		return Signature{}, fmt.Errorf("%w: no t= entry", ErrMalformedSignature)
	}
	if !sig.hasV1 {
		return Signature{}, fmt.Errorf("%w: no v1= entry", ErrMalformedSignature)
	}
	return sig, nil
}

// CheckTime returns [ErrStaleTimestamp] when the signature's timestamp is more
// than tolerance away from now, in the past or in the future. Exactly
// tolerance away is still accepted.
func (s Signature) CheckTime(now time.Time, tolerance time.Duration) error {
	diff := now.UnixMilli() - s.Timestamp
	if diff < 0 {
		diff = -diff
	}
	// diff < 0 after negation means overflow: as far from now as can be.
	if diff < 0 || diff > tolerance.Milliseconds() {
		hint := ""
		if s.Timestamp > 0 && s.Timestamp < 1e11 {
			hint = "; t looks like seconds, it must be milliseconds"
		}
		return fmt.Errorf("%w: t is %s %s the server clock; at most %s either way is accepted%s", ErrStaleTimestamp, msDuration(diffAbs(now.UnixMilli()-s.Timestamp)), direction(now.UnixMilli()-s.Timestamp), tolerance, hint)
	}
	return nil
}

// Verify returns nil when one of the signature's v1 entries is the
// HMAC-SHA256 of "<t>.<body>" under one of keys, and an error wrapping
// [ErrInvalidSignature] otherwise. Comparison is constant-time; the error
// never contains a computed signature.
func (s Signature) Verify(body []byte, keys ...Key) error {
	for _, k := range keys {
		if k.IsZero() {
			continue
		}
		if k.matches(s.ts, body, &s.first, s.more) {
			return nil
		}
	}
	return fmt.Errorf("%w: no v1 matches under any configured key; check that MEDIAN_KEY is the key from Median's dashboard and that nothing re-encodes the body before it reaches this handler", ErrInvalidSignature)
}

// VerifySignature is the whole signature check of PROTOCOL.md §1.1 in one
// call: it parses header ([ParseSignature]), checks its timestamp against
// now within tolerance either way ([Signature.CheckTime]) and verifies the
// MAC of body under keys ([Signature.Verify]). Use it to check a signed
// request outside a [Handler]; a Handler does the same, but refuses a bad
// header before it reads the body. The error wraps one of
// [ErrMissingSignature], [ErrMalformedSignature], [ErrStaleTimestamp] or
// [ErrInvalidSignature]. It allocates nothing when the signature is good.
func VerifySignature(header string, body []byte, now time.Time, tolerance time.Duration, keys ...Key) error {
	sig, err := ParseSignature(header)
	if err != nil {
		return err
	}
	if err := sig.CheckTime(now, tolerance); err != nil {
		return err
	}
	return sig.Verify(body, keys...)
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

// truncate shortens s to at most n bytes for error messages.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
