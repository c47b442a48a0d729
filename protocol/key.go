package protocol

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"hash"
	"os"
	"strconv"
	"strings"
	"sync"
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
	// macs holds crypto/hmac states keyed with secret (*macState), so that
	// the key is set up once, not for every check: crypto/hmac keeps
	// SHA-256's states after the key's two pad blocks and starts each MAC
	// from them (FIPS 198-1 §6). A check takes one and puts it back, so
	// it allocates nothing once the pool holds one per running check.
	macs sync.Pool

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

// keyOf returns the Key that signs with secret, with its fingerprint.
func keyOf(secret []byte) Key {
	sum := sha256.Sum256(secret)
	st := &keyState{secret: secret, fingerprint: "mk_" + hex.EncodeToString(sum[:6])}
	st.macs.New = func() any { return newMACState(secret) }
	return Key{st: st}
}

// macState is one crypto/hmac state of a key's pool, with the buffers a
// check writes through it: held in the pooled value, they are not
// allocated for each check.
type macState struct {
	h   hash.Hash
	buf [24]byte // "<t>." in pieces: a string is written to h through it
	sum [sha256.Size]byte
}

// newMACState returns crypto/hmac's HMAC-SHA256 under secret, reset once:
// crypto/hmac keeps its pad states marshaled from the first Reset on, and
// each later Reset restores them instead of hashing the pad blocks again.
func newMACState(secret []byte) *macState {
	m := &macState{h: hmac.New(sha256.New, secret)}
	m.h.Reset()
	return m
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
	k.mac(ts, body, &sum)
	return "t=" + ts + ",v1=" + hex.EncodeToString(sum[:])
}

// matches reports whether first or one of more is the HMAC-SHA256 of
// "<ts>.<body>" under k. It computes the MAC once and compares it with
// every entry in constant time (crypto/subtle), without stopping at a
// match, so the time taken does not say which entry matched.
func (k Key) matches(ts string, body []byte, first *[32]byte, more [][32]byte) bool {
	m := k.st.macs.Get().(*macState)
	sum := m.of(ts, body)
	ok := subtle.ConstantTimeCompare(sum, first[:])
	for i := range more {
		ok |= subtle.ConstantTimeCompare(sum, more[i][:])
	}
	k.st.macs.Put(m)
	return ok == 1
}

// mac puts the HMAC-SHA256 of "<ts>.<body>" under k in sum.
func (k Key) mac(ts string, body []byte, sum *[sha256.Size]byte) {
	m := k.st.macs.Get().(*macState)
	*sum = [sha256.Size]byte(m.of(ts, body))
	k.st.macs.Put(m)
}

// of returns the HMAC-SHA256 of "<ts>.<body>", in m.sum: crypto/hmac's,
// from a state of the key's pool (so in FIPS 140-3 mode,
// GODEBUG=fips140=on, the validated module's). "<ts>." is written through
// m.buf, in pieces when ts is longer (parseSignature accepts leading
// zeros, so t has no bound): a string converted for Write would be
// allocated.
func (m *macState) of(ts string, body []byte) []byte {
	m.h.Reset()
	for len(ts) >= len(m.buf) {
		n := copy(m.buf[:], ts)
		m.h.Write(m.buf[:n])
		ts = ts[n:]
	}
	n := copy(m.buf[:], ts)
	m.buf[n] = '.'
	m.h.Write(m.buf[:n+1])
	m.h.Write(body)
	return m.h.Sum(m.sum[:0])
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
