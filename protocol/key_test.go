package protocol

import (
	"context"
	"crypto/fips140"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseKeyUsability(t *testing.T) {
	tests := []struct {
		name string
		key  string
		want error // nil: usable
	}{
		{"32 visible characters", strings.Repeat("a", 32), nil},
		{"long key", strings.Repeat("Z9~!", 40), nil},
		{"all of 0x21-0x7E", func() string {
			var b strings.Builder
			for c := byte(0x21); c <= 0x7e; c++ {
				b.WriteByte(c)
			}
			return b.String()
		}(), nil},
		{"surrounding white space trimmed", " \t\r\n" + testKey + "\n ", nil},
		{"empty", "", CodeMissingSecret},
		{"white space only", " \t\n", CodeMissingSecret},
		{"31 characters", strings.Repeat("a", 31), CodeInvalidMedianKey},
		{"31 characters padded to 33 with spaces", " " + strings.Repeat("a", 31) + " ", CodeInvalidMedianKey},
		{"inner space", strings.Repeat("a", 20) + " " + strings.Repeat("b", 20), CodeInvalidMedianKey},
		{"inner tab", strings.Repeat("a", 20) + "\t" + strings.Repeat("b", 20), CodeInvalidMedianKey},
		{"DEL 0x7F", strings.Repeat("a", 20) + "\x7f" + strings.Repeat("b", 20), CodeInvalidMedianKey},
		{"NUL", strings.Repeat("a", 20) + "\x00" + strings.Repeat("b", 20), CodeInvalidMedianKey},
		{"non-ASCII letter", strings.Repeat("a", 20) + "é" + strings.Repeat("b", 20), CodeInvalidMedianKey},
		{"non-ASCII only, 32 runes", strings.Repeat("é", 32), CodeInvalidMedianKey},
		{"quoted key", `"` + testKey + ` "`, CodeInvalidMedianKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := ParseKey(tt.key)
			if tt.want == nil {
				require.NoError(t, err)
				assert.False(t, (k.st == nil))
				return
			}
			require.ErrorIs(t, err, tt.want)
			assert.True(t, (k.st == nil))
			// The error tells what to fix but never repeats the key.
			if strings.TrimSpace(tt.key) != "" {
				assert.NotContains(t, err.Error(), strings.TrimSpace(tt.key))
			}
			code := CodeInvalidMedianKey
			if tt.want == CodeMissingSecret {
				code = CodeMissingSecret
			}
			assert.Equal(t, code, errorCode(err))
		})
	}
}

func TestParseKeyDerivesWithHKDF(t *testing.T) {
	k, err := ParseKey("  " + testKey + "\n")
	require.NoError(t, err)
	want, err := hkdf.Key(sha256.New, []byte(testKey), nil, "median tool signing v1", 32)
	require.NoError(t, err)
	assert.Equal(t, want, k.st.secret, "the secret is HKDF of the trimmed key")
	assert.Len(t, k.st.secret, 32)

	got, err := deriveSecret(testKey)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	// Different keys, different secrets; salt and info matter.
	other, _ := deriveSecret(otherKey)
	assert.NotEqual(t, want, other)
	withSalt, _ := hkdf.Key(sha256.New, []byte(testKey), []byte("x"), "median tool signing v1", 32)
	assert.NotEqual(t, withSalt, got)
}

// TestKeyNeverPrintsSecret: a key shows as its fingerprint, which follows
// §1.2: mk_ and 12 hex digits of SHA-256 over the derived secret.
func TestKeyNeverPrintsSecret(t *testing.T) {
	k := mustParseKey(testKey)
	secret, err := deriveSecret(testKey)
	require.NoError(t, err)
	sum := sha256.Sum256(secret)
	assert.Regexp(t, `^mk_[0-9a-f]{12}$`, k.st.fingerprint)
	assert.Equal(t, "mk_"+hex.EncodeToString(sum[:])[:12], k.Fingerprint())
	assert.Equal(t, k.st.fingerprint, k.Fingerprint())
	assert.Equal(t, "median key "+k.Fingerprint(), k.String())
	assert.NotContains(t, k.String(), testKey)
	assert.NotEqual(t, k.Fingerprint(), mustParseKey(otherKey).Fingerprint())
	assert.Empty(t, Key{}.Fingerprint())
	assert.Panics(t, func() { mustParseKey("short") })
}

func TestKeySign(t *testing.T) {
	body := []byte(`{"op":"diagnostics"}`)
	h := mustParseKey(testKey).Sign(testNow, body)
	assert.True(t, strings.HasPrefix(h, "t=1767225600000,v1="), h)
	sig, err := parseSignature(h)
	require.NoError(t, err)
	require.NoError(t, sig.verify(body, mustParseKey(testKey)))
	assert.Empty(t, Key{}.Sign(testNow, body), "the zero Key signs nothing")
	assert.Equal(t, "median key (none)", Key{}.String())

	_, err = ParseKey("short")
	require.ErrorIs(t, err, CodeInvalidMedianKey)
}

// TestMatchesEveryTimestampLength: a t of any length an int64 has (up to
// 20 characters with its sign) is signed as sent, and so is a longer one
// (leading zeros), written through the fixed prefix in pieces.
func TestMatchesEveryTimestampLength(t *testing.T) {
	k := mustParseKey(fuzzKey)
	body := []byte(`{"op":"diagnostics"}`)
	for _, ts := range []string{"0", "1767225600000", "-9223372036854775808", "9223372036854775807"} {
		mac := [32]byte(fuzzMAC(ts, body))
		assert.True(t, k.matches(ts, body, &mac, nil), "t=%s", ts)
		wrong := mac
		wrong[31] ^= 1
		assert.False(t, k.matches(ts, body, &wrong, nil), "t=%s with a changed MAC", ts)
		assert.True(t, k.matches(ts, body, &wrong, [][32]byte{mac}), "t=%s: a later v1 matches", ts)
	}
	for _, long := range []string{"000000001767225600000", "0000000001767225600000", strings.Repeat("0", 42), strings.Repeat("0", 43) + "1"} {
		mac := [32]byte(fuzzMAC(long, body))
		assert.True(t, k.matches(long, body, &mac, nil), "t=%s (%d characters)", long, len(long))
		mac[0] ^= 1
		assert.False(t, k.matches(long, body, &mac, nil), "t=%s with a changed MAC", long)
	}
}

// TestMatchesIsCryptoHMAC: the MAC matches computes through a pooled
// crypto/hmac state, "<t>." written in pieces, is crypto/hmac's of
// "<t>.<body>" made afresh, for secrets shorter than, as long as and longer
// than a SHA-256 block and for bodies on either side of every block
// boundary; states reused in any order give the same MACs.
func TestMatchesIsCryptoHMAC(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, secretLen := range []int{0, 1, 32, 63, 64, 65, 200} {
		secret := make([]byte, secretLen)
		for i := range secret {
			secret[i] = byte(rng.Uint32())
		}
		k := keyOf(secret)
		for bodyLen := range 300 {
			body := make([]byte, bodyLen)
			for i := range body {
				body[i] = byte(rng.Uint32())
			}
			ts := strconv.FormatInt(rng.Int64(), 10)
			want := hmac.New(sha256.New, secret)
			want.Write([]byte(ts + "."))
			want.Write(body)
			var got [sha256.Size]byte
			k.mac(ts, body, &got)
			require.Equal(t, want.Sum(nil), got[:], "secret of %d bytes, body of %d", secretLen, bodyLen)
			mac := [32]byte(want.Sum(nil))
			require.True(t, k.matches(ts, body, &mac, nil))
		}
	}
}

// TestMACStatesShared: checks running at once under one key, each with a
// state of the key's pool, get every MAC right, matching and not (run it
// with -race).
func TestMACStatesShared(t *testing.T) {
	k := mustParseKey(testKey)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				body := []byte(fmt.Sprintf(`{"g":%d,"i":%d}`, g, i))
				header := k.Sign(testNow, body)
				if err := VerifySignature(header, body, testNow, defaultTolerance, k); err != nil {
					t.Errorf("goroutine %d, check %d: %v", g, i, err)
					return
				}
				if VerifySignature(header, append(body, ' '), testNow, defaultTolerance, k) == nil {
					t.Errorf("goroutine %d, check %d: a changed body verified", g, i)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestNewReportsKeyProblems: a bad or missing key is an error from New and a
// 500 on every request (GET and POST, signed or not), never fail-open.
func TestNewReportsKeyProblems(t *testing.T) {
	tests := []struct {
		name string
		keys []string
		env  string
		code Code
		is   error
	}{
		{"no key, env unset", nil, "", CodeMissingSecret, CodeMissingSecret},
		{"explicit empty key", []string{""}, testKey, CodeMissingSecret, CodeMissingSecret},
		{"short key from env", nil, "short", CodeInvalidMedianKey, CodeInvalidMedianKey},
		{"non-ASCII key in code", []string{strings.Repeat("é", 40)}, "", CodeInvalidMedianKey, CodeInvalidMedianKey},
		{"one good, one bad", []string{testKey, "bad key"}, "", CodeInvalidMedianKey, CodeInvalidMedianKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(keyEnv, tt.env)
			log, logs := newLogger()
			runs := &int64Counter{}
			h, err := New(Config{Keys: tt.keys, Logger: log, Now: func() time.Time { return testNow }, Tools: []*Tool{echoTool(runs)}})
			require.ErrorIs(t, err, tt.is)
			require.NotNil(t, h)
			assert.Len(t, logs.find(t, "answer 500"), 1, "logged once at build time")

			// Signed with the very key that is configured, when there is one.
			for _, req := range []Request{post(toolCall("echo", "call_1", `{"orderId":1}`)), get(), {Method: http.MethodPost}} {
				requireError(t, h.Serve(context.Background(), req), http.StatusInternalServerError, tt.code)
			}
			if len(tt.keys) == 1 && tt.keys[0] != "" {
				requireError(t, h.Serve(context.Background(), diagnosticsAt(testKey, testNow)), http.StatusInternalServerError, tt.code)
			}
			rec := serveHTTP(h, http.MethodPost, "", "{}")
			requireError(t, rec, http.StatusInternalServerError, tt.code)
			assert.Zero(t, runs.get(), "no tool runs without a usable key")
			assert.Len(t, logs.find(t, "answer 500"), 1, "not logged again per request")
		})
	}
}

func TestKeyFromEnvironment(t *testing.T) {
	t.Setenv(keyEnv, "  "+testKey+"\n")
	h, _ := newHandler(t, Config{Keys: []string{}})
	assert.Equal(t, []string{mustParseKey(testKey).st.fingerprint}, fingerprints(h))
	requireReport(t, h.Serve(context.Background(), post(`{"op":"diagnostics"}`)))

	// Keys in code win over the environment.
	h2, _ := newHandler(t, Config{Keys: []string{otherKey}})
	requireError(t, h2.Serve(context.Background(), post(`{"op":"diagnostics"}`)), http.StatusUnauthorized, CodeInvalidSignature)
}

func TestSeveralKeys(t *testing.T) {
	h, _ := newHandler(t, Config{Keys: []string{otherKey, testKey}})
	assert.Equal(t, []string{mustParseKey(otherKey).st.fingerprint, mustParseKey(testKey).st.fingerprint}, fingerprints(h))
	for _, key := range []string{testKey, otherKey} {
		requireReport(t, h.Serve(context.Background(), diagnosticsAt(key, testNow)))
	}
	third := "mk_third_key_000000000000000000000000000"
	requireError(t, h.Serve(context.Background(), diagnosticsAt(third, testNow)), http.StatusUnauthorized, CodeInvalidSignature)
}

// TestZeroHandlerNeverFailsOpen: a Handler not built by New has no key and
// accepts nothing.
func TestZeroHandlerNeverFailsOpen(t *testing.T) {
	var h Handler
	h.cfg.Now, h.cfg.Logger = func() time.Time { return testNow }, discardLogger()
	requireError(t, h.Serve(context.Background(), get()), http.StatusUnauthorized, CodeInvalidSignature)
	resp := h.Serve(context.Background(), post(`{"op":"diagnostics"}`))
	assert.GreaterOrEqual(t, resp.Status, 400, "body %s", resp.Body)
	assert.ErrorIs(t, (&signature{}).verify(nil, Key{}), CodeInvalidSignature, "the zero Key matches nothing")
	assert.False(t, errors.Is(nil, CodeInvalidSignature))
}

// fingerprints lists the fingerprints of a Handler's keys.
func fingerprints(h *Handler) []string {
	var out []string
	for _, k := range h.keyring().keys {
		out = append(out, k.st.fingerprint)
	}
	return out
}

// TestKeyRotationFromEnvironment: PROTOCOL.md §1.2, MEDIAN_KEY and
// MEDIAN_KEY_PREVIOUS when no keys are given in code.
func TestKeyRotationFromEnvironment(t *testing.T) {
	t.Run("both keys verify", func(t *testing.T) {
		t.Setenv(keyEnv, testKey)
		t.Setenv(previousKeyEnv, otherKey)
		h, err := New(Config{Now: func() time.Time { return testNow }, Logger: discardLogger()})
		require.NoError(t, err)
		assert.Equal(t, []string{mustParseKey(testKey).st.fingerprint, mustParseKey(otherKey).st.fingerprint}, fingerprints(h))
		for _, key := range []string{testKey, otherKey} {
			requireReport(t, h.Serve(context.Background(), diagnosticsAt(key, testNow)))
		}
		requireError(t, h.Serve(context.Background(), diagnosticsAt(strings.Repeat("z", 40), testNow)), http.StatusUnauthorized, CodeInvalidSignature)
	})
	t.Run("unusable previous key is reported", func(t *testing.T) {
		t.Setenv(keyEnv, testKey)
		t.Setenv(previousKeyEnv, "too-short")
		h, err := New(Config{Now: func() time.Time { return testNow }, Logger: discardLogger()})
		require.ErrorIs(t, err, CodeInvalidMedianKey)
		assert.Contains(t, err.Error(), previousKeyEnv, "the error names the variable to fix")
		requireError(t, h.Serve(context.Background(), diagnosticsAt(testKey, testNow)), http.StatusInternalServerError, CodeInvalidMedianKey)
	})
	t.Run("previous key alone is missing_secret", func(t *testing.T) {
		t.Setenv(keyEnv, "")
		t.Setenv(previousKeyEnv, otherKey)
		h, err := New(Config{Now: func() time.Time { return testNow }, Logger: discardLogger()})
		require.ErrorIs(t, err, CodeMissingSecret)
		requireError(t, h.Serve(context.Background(), diagnosticsAt(otherKey, testNow)), http.StatusInternalServerError, CodeMissingSecret)
	})
	t.Run("empty previous key counts as unset", func(t *testing.T) {
		t.Setenv(keyEnv, testKey)
		t.Setenv(previousKeyEnv, "  ")
		h, err := New(Config{Now: func() time.Time { return testNow }, Logger: discardLogger()})
		require.NoError(t, err)
		assert.Len(t, fingerprints(h), 1)
	})
	t.Run("keys in code ignore the environment", func(t *testing.T) {
		t.Setenv(keyEnv, "")
		t.Setenv(previousKeyEnv, "too-short")
		h, err := New(Config{Keys: []string{testKey}, Now: func() time.Time { return testNow }, Logger: discardLogger()})
		require.NoError(t, err)
		requireReport(t, h.Serve(context.Background(), diagnosticsAt(testKey, testNow)))
	})
}

// TestVerifyLongZeroPaddedTimestamp: t is signed exactly as sent and may
// have leading zeros (vector t_as_sent), so its length is not bounded by an
// int64's: a zero-padded, in-tolerance, correctly signed t of any length
// verifies.
func TestVerifyLongZeroPaddedTimestamp(t *testing.T) {
	k := mustParseKey(fuzzKey)
	body := []byte(`{"op":"diagnostics"}`)
	now := time.UnixMilli(1767225600000)
	for _, pad := range []int{0, 7, 8, 9, 30, 100} {
		ts := strings.Repeat("0", pad) + "1767225600000"
		neg := "-" + strings.Repeat("0", pad) + "0"
		for _, ts := range []string{ts, neg} {
			header := "t=" + ts + ",v1=" + hex.EncodeToString(fuzzMAC(ts, body))
			at := now
			if ts[0] == '-' {
				at = time.UnixMilli(0)
			}
			assert.NoError(t, VerifySignature(header, body, at, 5*time.Minute, k), "t=%s (%d characters)", ts, len(ts))
		}
	}
}

// TestMACInFIPSMode: with GODEBUG=fips140=on the check runs as in the
// usual mode, through crypto/hmac, which is then the validated module's:
// the test runs itself again in that mode, where signatures verify as
// before, a changed body does not, the MAC is crypto/hmac's, and a check
// still allocates nothing.
func TestMACInFIPSMode(t *testing.T) {
	if boringCrypto {
		t.Skip("FIPS 140-3 mode cannot be turned on in a GOEXPERIMENT=boringcrypto build")
	}
	if os.Getenv("MEDIAN_TEST_FIPS_CHILD") == "1" {
		require.True(t, fips140.Enabled(), "the child runs in FIPS 140-3 mode")
		k := mustParseKey(testKey)
		body := []byte(`{"op":"diagnostics"}`)
		header := k.Sign(testNow, body)
		require.NoError(t, VerifySignature(header, body, testNow, defaultTolerance, k))
		require.Error(t, VerifySignature(header, []byte(`{"op":"other"}`), testNow, defaultTolerance, k))
		want := hmac.New(sha256.New, k.st.secret)
		want.Write([]byte(strconv.FormatInt(testNow.UnixMilli(), 10) + "."))
		want.Write(body)
		assert.Equal(t, "t="+strconv.FormatInt(testNow.UnixMilli(), 10)+",v1="+hex.EncodeToString(want.Sum(nil)), header)
		requireNoAllocation(t, k, func() { _ = VerifySignature(header, body, testNow, defaultTolerance, k) }) // the states are pooled in FIPS mode too
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestMACInFIPSMode$", "-test.count", "1", "-test.v")
	cmd.Env = append(os.Environ(), "GODEBUG=fips140=on", "MEDIAN_TEST_FIPS_CHILD=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "--- PASS: TestMACInFIPSMode")
}

// TestParseKeyErrorsSayWhere: an unusable key's error names its length
// or the place of the first bad character, counted from 1 after the
// surrounding white space is trimmed.
func TestParseKeyErrorsSayWhere(t *testing.T) {
	_, err := ParseKey("  " + strings.Repeat("a", 20) + " " + strings.Repeat("b", 20))
	require.ErrorIs(t, err, CodeInvalidMedianKey)
	assert.Contains(t, err.Error(), "character 21 is not visible ASCII")
	_, err = ParseKey("\x01" + strings.Repeat("a", 40))
	assert.Contains(t, err.Error(), "character 1 is not visible ASCII")
	_, err = ParseKey(strings.Repeat("a", 31))
	assert.Contains(t, err.Error(), "it has 31 characters, at least 32 are needed")
}
