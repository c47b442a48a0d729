package protocol

import (
	"crypto/fips140"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// The environment variables [New] reads when [Config.Keys] is empty
// (PROTOCOL.md §1.2): the key in use and, during a rotation, the one being
// retired.
const (
	keyEnv         = "MEDIAN_KEY"
	previousKeyEnv = "MEDIAN_KEY_PREVIOUS"
)

// minKeyLength is the shortest usable key, in characters, after trimming.
const minKeyLength = 32

// hkdfInfo is the HKDF info string of PROTOCOL.md §1.2.
const hkdfInfo = "median tool signing v1"

// Key is a usable Median key with its derived signing secret. Build one
// with [ParseKey]; the zero Key matches nothing. A Key never prints its
// secret: fmt and log/slog show only a short fingerprint.
type Key struct {
	st *keyState // behind a pointer, so %#v prints an address, never the secret
}

// keyState is what a Key holds.
type keyState struct {
	secret      []byte
	fingerprint string
	// inner and outer are SHA-256's states after the secret's inner and
	// outer pad blocks of HMAC (RFC 2104), marshaled: matches starts each
	// hash from them instead of from the secret.
	inner, outer []byte

	// Counted for the diagnostics report (§10): requests verified under
	// this key, on the request's stripe (see stripes), and the unix ms of
	// the last one. The padding keeps the counters off the cache lines of
	// the fields above, which every check reads.
	_            [64]byte
	verified     [maxStripes]stripedCount
	lastVerified atomic.Int64
}

// ParseKey checks that key is usable (after trimming surrounding white space:
// at least 32 characters, each visible ASCII 0x21–0x7E) and derives its
// signing secret with HKDF-SHA256 (PROTOCOL.md §1.2). The error is an
// *[Error] with code [CodeMissingSecret] for an empty key and
// [CodeInvalidMedianKey] for an unusable one; it never repeats the key.
func ParseKey(key string) (Key, error) {
	k, err := parseKey(key)
	if err != nil {
		return Key{}, err
	}
	return k, nil
}

// parseKey is ParseKey with a typed error.
func parseKey(key string) (Key, *Error) { return parseKeyFrom(key, keyEnv) }

// parseKeyFrom is parseKey for a key that came from source ("MEDIAN_KEY",
// "the key in MEDIAN_KEY_FILE", …), which its errors name.
func parseKeyFrom(key, source string) (Key, *Error) {
	key = strings.TrimSpace(key)
	if key == "" {
		if source != keyEnv {
			return Key{}, errorf(CodeMissingSecret, "%s is empty: give the key from Median's dashboard", source)
		}
		return Key{}, errorf(CodeMissingSecret, "no MEDIAN_KEY configured: set the %s environment variable (or Config.Keys) to the key from Median's dashboard", keyEnv)
	}
	if n := len(key); n < minKeyLength {
		return Key{}, errorf(CodeInvalidMedianKey, "%s is not usable: it has %d characters, at least %d are needed; copy the whole key from Median's dashboard", source, n, minKeyLength)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x21 || c > 0x7e {
			return Key{}, errorf(CodeInvalidMedianKey, "%s is not usable: character %d is not visible ASCII (0x21-0x7E); check for stray quotes, spaces or non-ASCII characters", source, i+1)
		}
	}
	secret, err := deriveSecret(key)
	if err != nil { // HKDF refuses only lengths it cannot produce: not 32 bytes
		return Key{}, errorf(CodeInvalidMedianKey, "%s is not usable: the signing secret could not be derived", source)
	}
	return keyOf(secret), nil
}

// keyOf returns the Key that signs with secret: its fingerprint and HMAC
// pad states made once.
func keyOf(secret []byte) Key {
	sum := sha256.Sum256(secret)
	st := &keyState{secret: secret, fingerprint: "mk_" + hex.EncodeToString(sum[:6])}
	st.inner, st.outer = padStates(secret)
	return Key{st: st}
}

// padStates returns SHA-256's marshaled states after the HMAC pad blocks
// of secret (RFC 2104: the secret, hashed first when longer than a block,
// zero-padded to a block and XORed with 0x36 for the inner hash and 0x5c
// for the outer one). crypto/hmac keeps the same two states.
func padStates(secret []byte) (inner, outer []byte) {
	if len(secret) > sha256.BlockSize {
		sum := sha256.Sum256(secret)
		secret = sum[:]
	}
	var in, out [sha256.BlockSize]byte
	copy(in[:], secret)
	copy(out[:], secret)
	for i := range in {
		in[i] ^= 0x36
		out[i] ^= 0x5c
	}
	return marshaledState(in[:]), marshaledState(out[:])
}

// marshaledState returns SHA-256's marshaled state after block.
func marshaledState(block []byte) []byte {
	h := sha256.New()
	h.Write(block)
	state, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		panic("median: SHA-256 cannot marshal its state: " + err.Error()) // crypto/sha256 always can
	}
	return state
}

// deriveSecret returns the 32-byte signing secret for key:
// HKDF-SHA256(ikm = key, salt = empty, info = "median tool signing v1").
// It does not check that key is usable; parseKey does. Other
// implementations check theirs against protocol/testdata/keys.json.
func deriveSecret(key string) ([]byte, error) {
	return hkdf.Key(sha256.New, []byte(key), nil, hkdfInfo, 32)
}

// Fingerprint returns the key's fingerprint (PROTOCOL.md §1.2): "mk_" and
// the first 12 hex digits of SHA-256 over the derived secret. It reveals
// nothing usable, so logs, diagnostics and admin pages show a key by it;
// "" for the zero Key.
func (k Key) Fingerprint() string {
	if k.st == nil {
		return ""
	}
	return k.st.fingerprint
}

// verifiedAt counts a request verified under the key at now, on stripe.
// The last time is written only when it moves on, at most once a
// millisecond, so the requests of the same millisecond only read it; it
// is the latest time seen, so a clock stepped back does not move it back.
func (k Key) verifiedAt(now time.Time, stripe int) {
	k.st.verified[stripe].Add(1)
	ms := now.UnixMilli()
	for last := k.st.lastVerified.Load(); ms > last; last = k.st.lastVerified.Load() {
		if k.st.lastVerified.CompareAndSwap(last, ms) {
			return
		}
	}
}

// verifiedCount is how many requests were verified under the key.
func (k Key) verifiedCount() int64 {
	var n int64
	for i := range k.st.verified {
		n += k.st.verified[i].Load()
	}
	return n
}

// String returns "median key " and the key's fingerprint ("mk_" and 12 hex
// digits of SHA-256 over the derived secret), never the key or its secret.
func (k Key) String() string {
	if k.st == nil {
		return "median key (none)"
	}
	return "median key " + k.st.fingerprint
}

// Sign returns the median-signature header value for body sent at time t:
// "t=<ms>,v1=<hex HMAC-SHA256(secret, "<ms>.<body>")>". Use it in tests and
// in clients that call a Median endpoint. The zero Key returns "".
func (k Key) Sign(t time.Time, body []byte) string {
	if k.st == nil {
		return ""
	}
	ts := strconv.FormatInt(t.UnixMilli(), 10)
	var sum [sha256.Size]byte
	k.hmacOf(ts, body, &sum)
	return "t=" + ts + ",v1=" + hex.EncodeToString(sum[:])
}

// matches reports whether first or one of more is the HMAC-SHA256 of
// "<ts>.<body>", comparing in constant time. It is HMAC as crypto/hmac
// computes it, from the same two pad states (padStates), with the two
// SHA-256 hashes on the stack: nothing is allocated or shared, where a
// pool of crypto/hmac states cost 12–25 ns a check (BenchmarkVerify).
// TestMatchesIsCryptoHMAC holds it to crypto/hmac. In FIPS 140-3 mode it
// is crypto/hmac's (hmacOf). "<ts>." is written from a fixed array, in
// pieces when ts is longer (parseSignature accepts leading zeros, so t has
// no bound).
func (k Key) matches(ts string, body []byte, first *[32]byte, more [][32]byte) bool {
	var sum [sha256.Size]byte
	k.mac(ts, body, &sum)
	ok := equalMAC(&sum, first)
	for i := range more {
		// Every entry is compared, so the time taken does not say which matched.
		ok = equalMAC(&sum, &more[i]) || ok
	}
	return ok
}

// mac puts the HMAC-SHA256 of "<ts>.<body>" under k in sum.
func (k Key) mac(ts string, body []byte, sum *[sha256.Size]byte) {
	if fips140.Enabled() {
		k.hmacOf(ts, body, sum)
		return
	}
	var prefix [21]byte // "<t>." for any t an int64 formats to
	// sha256.New's hashes stay on the stack here, as long as every call
	// on them is made in this function (TestVerifySignatureIsTheWholeCheck,
	// "no allocation when good").
	in := sha256.New()
	if in.(encoding.BinaryUnmarshaler).UnmarshalBinary(k.st.inner) != nil {
		panic(errRestore)
	}
	for len(ts) >= len(prefix) {
		n := copy(prefix[:], ts)
		in.Write(prefix[:n])
		ts = ts[n:]
	}
	n := copy(prefix[:], ts)
	prefix[n] = '.'
	in.Write(prefix[:n+1])
	in.Write(body)
	in.Sum(sum[:0])
	out := sha256.New()
	if out.(encoding.BinaryUnmarshaler).UnmarshalBinary(k.st.outer) != nil {
		panic(errRestore)
	}
	out.Write(sum[:])
	out.Sum(sum[:0])
}

// hmacOf is mac through crypto/hmac itself: what Sign uses, and what mac
// uses in FIPS 140-3 mode (GODEBUG=fips140=on), where the HMAC is then
// the validated module's own, not composed here from its SHA-256. It
// makes crypto/hmac's state for each call: 529 B in 8 allocations, and
// twice the time of mac's usual path at 1 KiB (BenchmarkVerify with
// GODEBUG=fips140=on; TestMACInFIPSMode).
func (k Key) hmacOf(ts string, body []byte, sum *[sha256.Size]byte) {
	m := hmac.New(sha256.New, k.st.secret)
	io.WriteString(m, ts)
	m.Write([]byte{'.'})
	m.Write(body)
	copy(sum[:], m.Sum(nil)) // not m.Sum(sum[:0]), through which sum would escape on every path
}

// errRestore is mac's panic should SHA-256 refuse a state it marshaled,
// which crypto/sha256 never does.
const errRestore = "median: SHA-256 could not restore its marshaled state"

// equalMAC reports whether a and b are equal in constant time: it reads
// every byte, eight at a time, and nothing it does depends on their values
// but the one answer. It is crypto/subtle.ConstantTimeCompare for the one
// length a MAC has, a word at a time where that compares a byte at a time
// (a fifth of VerifySignature's own cost at 1 KiB).
func equalMAC(a, b *[sha256.Size]byte) bool {
	var diff uint64
	for i := 0; i < len(a); i += 8 {
		diff |= binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:])
	}
	return diff == 0
}

// parseKeys parses each configured key. When none is given in code it reads
// MEDIAN_KEY and, when set, MEDIAN_KEY_PREVIOUS (PROTOCOL.md §1.2): an unset
// MEDIAN_KEY is missing_secret even when MEDIAN_KEY_PREVIOUS is set; a
// MEDIAN_KEY_PREVIOUS that is set but unusable is reported like an unusable
// MEDIAN_KEY (one that is empty or white space only counts as unset). It
// returns the usable keys with where each came from, or the first problem.
func parseKeys(keys []string) ([]Key, []string, *Error) {
	names := make([]string, len(keys))
	for i := range keys {
		names[i] = fmt.Sprintf("Config.Keys[%d]", i)
	}
	if len(keys) == 0 {
		keys, names = []string{os.Getenv(keyEnv)}, []string{keyEnv}
		if prev := os.Getenv(previousKeyEnv); strings.TrimSpace(prev) != "" {
			keys, names = append(keys, prev), append(names, previousKeyEnv)
		}
	}
	out, err := parseNamedKeys(keys, names)
	if err != nil {
		return nil, nil, err
	}
	return out, names, nil
}
