package protocol

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// KeyEnv is the environment variable [New] reads the Median key from when
// [Config.Keys] is empty.
const KeyEnv = "MEDIAN_KEY"

// MinKeyLength is the shortest usable key, in characters, after trimming.
const MinKeyLength = 32

// hkdfInfo is the HKDF info string of PROTOCOL.md §1.2.
const hkdfInfo = "median tool signing v1"

// Key is a usable Median key with its derived signing secret. Its zero value
// is not usable; build one with [ParseKey]. A Key never prints its secret:
// String and the log value show only its fingerprint.
type Key struct {
	secret      []byte
	fingerprint string
	macs        *sync.Pool // of *macState keyed with secret, so Verify allocates nothing
}

// macState is a reusable HMAC-SHA256 under one key, with room for "<t>."
// and the sum.
type macState struct {
	h   hash.Hash
	buf []byte
}

// ParseKey checks that key is usable (after trimming surrounding white space:
// at least 32 characters, each visible ASCII 0x21–0x7E) and derives its
// signing secret with HKDF-SHA256 (PROTOCOL.md §1.2). The error wraps
// [ErrMissingKey] for an empty key and [ErrInvalidKey] for an unusable one;
// it never repeats the key.
func ParseKey(key string) (Key, error) {
	key = strings.TrimSpace(key)
	if key == "" {
		return Key{}, fmt.Errorf("%w: set the %s environment variable (or Config.Keys) to the key from Median's dashboard", ErrMissingKey, KeyEnv)
	}
	if n := len(key); n < MinKeyLength {
		return Key{}, fmt.Errorf("%w: it has %d characters, at least %d are needed; copy the whole key from Median's dashboard", ErrInvalidKey, n, MinKeyLength)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x21 || c > 0x7e {
			return Key{}, fmt.Errorf("%w: character %d is not visible ASCII (0x21-0x7E); check for stray quotes, spaces or non-ASCII characters", ErrInvalidKey, i+1)
		}
	}
	secret, err := DeriveSecret(key)
	if err != nil {
		return Key{}, err
	}
	sum := sha256.Sum256(secret)
	macs := &sync.Pool{New: func() any { return &macState{h: hmac.New(sha256.New, secret), buf: make([]byte, 0, 64)} }}
	return Key{secret: secret, fingerprint: "mk_" + hex.EncodeToString(sum[:6]), macs: macs}, nil
}

// MustParseKey is like [ParseKey] but panics on an unusable key. Use it in
// tests and examples only.
func MustParseKey(key string) Key {
	k, err := ParseKey(key)
	if err != nil {
		panic(err)
	}
	return k
}

// DeriveSecret returns the 32-byte signing secret for key:
// HKDF-SHA256(ikm = key, salt = empty, info = "median tool signing v1").
// It does not check that key is usable; [ParseKey] does. Other
// implementations can check theirs against protocol/testdata/keys.json.
func DeriveSecret(key string) ([]byte, error) {
	return hkdf.Key(sha256.New, []byte(key), nil, hkdfInfo, 32)
}

// Fingerprint returns a short, non-secret name for the key ("mk_" and 12 hex
// digits of SHA-256 over the derived secret), safe for logs and diagnostics.
func (k Key) Fingerprint() string { return k.fingerprint }

// String returns the fingerprint, never the key or its secret.
func (k Key) String() string { return "median key " + k.fingerprint }

// GoString returns the same as String, so %#v never prints the secret.
func (k Key) GoString() string { return k.String() }

// LogValue makes log/slog show the fingerprint, never the secret.
func (k Key) LogValue() slog.Value { return slog.StringValue(k.String()) }

// IsZero reports whether k is the zero Key (not built by ParseKey).
func (k Key) IsZero() bool { return k.secret == nil }

// Sign returns the median-signature header value for body sent at time t:
// "t=<ms>,v1=<hex HMAC-SHA256(secret, "<ms>.<body>")>". Use it in tests and
// in clients that call a Median endpoint.
func (k Key) Sign(t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.UnixMilli(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(k.mac(ts, body))
}

// mac computes HMAC-SHA256 over "<ts>.<body>" with the derived secret.
func (k Key) mac(ts string, body []byte) []byte {
	m := hmac.New(sha256.New, k.secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// matches reports whether one of want is the HMAC-SHA256 of "<ts>.<body>",
// comparing in constant time. It reuses pooled HMAC state: no allocation.
func (k Key) matches(ts string, body []byte, first *[32]byte, more [][32]byte) bool {
	var sum []byte
	if k.macs == nil {
		sum = k.mac(ts, body)
	} else {
		st := k.macs.Get().(*macState)
		defer k.macs.Put(st)
		st.h.Reset()
		st.buf = append(append(st.buf[:0], ts...), '.')
		st.h.Write(st.buf)
		st.h.Write(body)
		st.buf = st.h.Sum(st.buf[:0])
		sum = st.buf
	}
	ok := hmac.Equal(sum, first[:])
	for i := range more {
		// Every entry is compared, so the time taken does not say which matched.
		ok = hmac.Equal(sum, more[i][:]) || ok
	}
	return ok
}

// Sign parses key and returns the median-signature header for body sent at t.
// It is the one-call form of [ParseKey] and [Key.Sign] for tests and clients.
func Sign(key string, t time.Time, body []byte) (string, error) {
	k, err := ParseKey(key)
	if err != nil {
		return "", err
	}
	return k.Sign(t, body), nil
}

// parseKeys parses each configured key, falling back to the environment
// when none is given. It returns the usable keys and the first problem.
func parseKeys(keys []string) ([]Key, error) {
	if len(keys) == 0 {
		keys = []string{os.Getenv(KeyEnv)}
	}
	out := make([]Key, 0, len(keys))
	for i, s := range keys {
		k, err := ParseKey(s)
		if err != nil {
			if len(keys) > 1 {
				err = fmt.Errorf("key %d of %d: %w", i+1, len(keys), err)
			}
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}
