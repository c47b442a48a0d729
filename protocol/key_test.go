package protocol

import (
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"net/http"
	"strings"
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
		{"empty", "", ErrMissingKey},
		{"white space only", " \t\n", ErrMissingKey},
		{"31 characters", strings.Repeat("a", 31), ErrInvalidKey},
		{"31 characters padded to 33 with spaces", " " + strings.Repeat("a", 31) + " ", ErrInvalidKey},
		{"inner space", strings.Repeat("a", 20) + " " + strings.Repeat("b", 20), ErrInvalidKey},
		{"inner tab", strings.Repeat("a", 20) + "\t" + strings.Repeat("b", 20), ErrInvalidKey},
		{"DEL 0x7F", strings.Repeat("a", 20) + "\x7f" + strings.Repeat("b", 20), ErrInvalidKey},
		{"NUL", strings.Repeat("a", 20) + "\x00" + strings.Repeat("b", 20), ErrInvalidKey},
		{"non-ASCII letter", strings.Repeat("a", 20) + "é" + strings.Repeat("b", 20), ErrInvalidKey},
		{"non-ASCII only, 32 runes", strings.Repeat("é", 32), ErrInvalidKey},
		{"quoted key", `"` + testKey + ` "`, ErrInvalidKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := ParseKey(tt.key)
			if tt.want == nil {
				require.NoError(t, err)
				assert.False(t, k.IsZero())
				return
			}
			require.ErrorIs(t, err, tt.want)
			assert.True(t, k.IsZero())
			// The error tells what to fix but never repeats the key.
			if strings.TrimSpace(tt.key) != "" {
				assert.NotContains(t, err.Error(), strings.TrimSpace(tt.key))
			}
			code := CodeInvalidMedianKey
			if tt.want == ErrMissingKey {
				code = CodeMissingSecret
			}
			assert.Equal(t, code, ErrorCode(err))
		})
	}
}

func TestParseKeyDerivesWithHKDF(t *testing.T) {
	k, err := ParseKey("  " + testKey + "\n")
	require.NoError(t, err)
	want, err := hkdf.Key(sha256.New, []byte(testKey), nil, "median tool signing v1", 32)
	require.NoError(t, err)
	assert.Equal(t, want, k.secret, "the secret is HKDF of the trimmed key")
	assert.Len(t, k.secret, 32)

	got, err := DeriveSecret(testKey)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	// Different keys, different secrets; salt and info matter.
	other, _ := DeriveSecret(otherKey)
	assert.NotEqual(t, want, other)
	withSalt, _ := hkdf.Key(sha256.New, []byte(testKey), []byte("x"), "median tool signing v1", 32)
	assert.NotEqual(t, withSalt, got)
}

func TestKeyNeverPrintsSecret(t *testing.T) {
	k := MustParseKey(testKey)
	assert.Regexp(t, `^mk_[0-9a-f]{12}$`, k.Fingerprint())
	assert.Equal(t, "median key "+k.Fingerprint(), k.String())
	assert.NotContains(t, k.String(), testKey)
	assert.NotEqual(t, k.Fingerprint(), MustParseKey(otherKey).Fingerprint())
	assert.Panics(t, func() { MustParseKey("short") })
}

func TestSignHelper(t *testing.T) {
	body := []byte(`{"op":"diagnostics"}`)
	h, err := Sign(testKey, testNow, body)
	require.NoError(t, err)
	assert.Equal(t, MustParseKey(testKey).Sign(testNow, body), h)
	assert.True(t, strings.HasPrefix(h, "t=1767225600000,v1="), h)
	sig, err := ParseSignature(h)
	require.NoError(t, err)
	require.NoError(t, sig.Verify(body, MustParseKey(testKey)))

	_, err = Sign("short", testNow, body)
	require.ErrorIs(t, err, ErrInvalidKey)
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
		{"no key, env unset", nil, "", CodeMissingSecret, ErrMissingKey},
		{"explicit empty key", []string{""}, testKey, CodeMissingSecret, ErrMissingKey},
		{"short key from env", nil, "short", CodeInvalidMedianKey, ErrInvalidKey},
		{"non-ASCII key in code", []string{strings.Repeat("é", 40)}, "", CodeInvalidMedianKey, ErrInvalidKey},
		{"one good, one bad", []string{testKey, "bad key"}, "", CodeInvalidMedianKey, ErrInvalidKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(KeyEnv, tt.env)
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
				sig := MustParseKey(testKey).Sign(testNow, []byte(`{"op":"diagnostics"}`))
				requireError(t, h.Serve(context.Background(), Request{Method: http.MethodPost, Signature: sig, BodyBytes: []byte(`{"op":"diagnostics"}`)}), http.StatusInternalServerError, tt.code)
			}
			rec := serveHTTP(h, http.MethodPost, "", "{}")
			requireError(t, rec, http.StatusInternalServerError, tt.code)
			assert.Zero(t, runs.get(), "no tool runs without a usable key")
			assert.Len(t, logs.find(t, "answer 500"), 1, "not logged again per request")
		})
	}
}

func TestKeyFromEnvironment(t *testing.T) {
	t.Setenv(KeyEnv, "  "+testKey+"\n")
	h, _ := newHandler(t, Config{Keys: []string{}})
	require.Len(t, h.Keys(), 1)
	assert.Equal(t, MustParseKey(testKey).Fingerprint(), h.Keys()[0])
	requireError(t, h.Serve(context.Background(), post(`{"op":"diagnostics"}`)), http.StatusOK, CodeDiagnosticsUnsupported)

	// Keys in code win over the environment.
	h2, _ := newHandler(t, Config{Keys: []string{otherKey}})
	requireError(t, h2.Serve(context.Background(), post(`{"op":"diagnostics"}`)), http.StatusUnauthorized, CodeInvalidSignature)
}

func TestSeveralKeys(t *testing.T) {
	h, _ := newHandler(t, Config{Keys: []string{otherKey, testKey}})
	assert.Equal(t, []string{MustParseKey(otherKey).Fingerprint(), MustParseKey(testKey).Fingerprint()}, h.Keys())
	body := []byte(`{"op":"diagnostics"}`)
	for _, key := range []string{testKey, otherKey} {
		sig := MustParseKey(key).Sign(testNow, body)
		requireError(t, h.Serve(context.Background(), Request{Method: http.MethodPost, Signature: sig, BodyBytes: body}), http.StatusOK, CodeDiagnosticsUnsupported)
	}
	third := "mk_third_key_000000000000000000000000000"
	sig := MustParseKey(third).Sign(testNow, body)
	requireError(t, h.Serve(context.Background(), Request{Method: http.MethodPost, Signature: sig, BodyBytes: body}), http.StatusUnauthorized, CodeInvalidSignature)
}

// TestZeroHandlerNeverFailsOpen: a Handler not built by New has no key and
// accepts nothing.
func TestZeroHandlerNeverFailsOpen(t *testing.T) {
	var h Handler
	h.now, h.log = func() time.Time { return testNow }, discardLogger()
	requireError(t, h.Serve(context.Background(), get()), http.StatusUnauthorized, CodeInvalidSignature)
	resp := h.Serve(context.Background(), post(`{"op":"diagnostics"}`))
	assert.GreaterOrEqual(t, resp.Status, 400, "body %s", resp.Body)
	assert.ErrorIs(t, Signature{}.Verify(nil, Key{}), ErrInvalidSignature, "the zero Key matches nothing")
	assert.False(t, errors.Is(nil, ErrInvalidSignature))
}
