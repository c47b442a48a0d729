package protocol

// The cross-language test vectors in testdata/keys.json and
// testdata/signatures.json are written by this file. Regenerate them with
//
//	go test ./protocol -run '^TestVectors$' -update
//
// or `go generate ./protocol` (see gen.go). The output is deterministic:
// keys and times are fixed, secrets and signatures are computed here with an
// HKDF and HMAC written from RFC 5869 / RFC 2104 primitives (not with the
// package under test), and every expected outcome is written by hand in the
// tables below. TestVectors then checks the implementation against the file.

import (
	"bytes"
	"context"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/keys.json and testdata/signatures.json")

const (
	keysFile       = "testdata/keys.json"
	signaturesFile = "testdata/signatures.json"
	// vectorNow is the receiver's clock in every signature vector.
	vectorNow = int64(1_767_225_600_000) // 2026-01-01T00:00:00Z
	minute    = int64(60_000)
)

// refSecret derives the signing secret by hand, from RFC 5869 with
// HMAC-SHA256: PRK = HMAC(salt = 32 zero bytes, IKM); OKM = T(1) =
// HMAC(PRK, info || 0x01), whose 32 bytes are the secret.
func refSecret(key string) []byte {
	ikm := []byte(strings.TrimSpace(key))
	ext := hmac.New(sha256.New, make([]byte, sha256.Size))
	ext.Write(ikm)
	prk := ext.Sum(nil)
	exp := hmac.New(sha256.New, prk)
	exp.Write([]byte("median tool signing v1"))
	exp.Write([]byte{1})
	return exp.Sum(nil)
}

// refMAC is the hex HMAC-SHA256 of "<t>.<body>" under key's secret.
func refMAC(key, t, body string) string {
	m := hmac.New(sha256.New, refSecret(key))
	m.Write([]byte(t + "." + body))
	return hex.EncodeToString(m.Sum(nil))
}

// keyVector is one entry of keys.json.
type keyVector struct {
	ID      string `json:"id"`
	Comment string `json:"comment"`
	Key     string `json:"key"`
	Secret  string `json:"secret,omitempty"`
	Error   Code   `json:"error,omitempty"`
}

type keysDoc struct {
	Description []string    `json:"description"`
	Info        string      `json:"info"`
	Length      int         `json:"length"`
	MinLength   int         `json:"minLength"`
	Keys        []keyVector `json:"keys"`
}

// sigVector is one entry of signatures.json.
type sigVector struct {
	ID       string   `json:"id"`
	Comment  string   `json:"comment"`
	Key      string   `json:"key,omitempty"`
	Keys     []string `json:"keys,omitempty"`
	Now      int64    `json:"now"`
	Method   string   `json:"method"`
	Header   string   `json:"header"`
	Body     string   `json:"body"`
	Expected string   `json:"expected"`
}

type signaturesDoc struct {
	Description []string    `json:"description"`
	Header      string      `json:"header"`
	ToleranceMS int64       `json:"toleranceMs"`
	Cases       []sigVector `json:"cases"`
}

const (
	vecKey      = "mk_live_Vt4b9QpX2sLr7NcW1eYh6KzA3gFj8DmU"
	vecOtherKey = "mk_live_OLDKEY_5uPq0RkS9wXe2TyB7nMc4HvJ"
	diagBody    = `{"op":"diagnostics"}`
	callBody    = `{"tool":"lookup_order","toolCallId":"call_0123456789abcdef0123456789abcdef","input":{"orderId":"A-1001"},"context":{"conversationId":"conv_42","risk":"low","visitor":{"verified":true,"externalId":"user_7","email":"zoë@example.com","name":"Zoë"}}}`
)

func buildKeys() keysDoc {
	type k struct {
		id, comment, key string
		err              Code
	}
	table := []k{
		{"plain", "a typical key", vecKey, ""},
		{"second", "another key, used for rotation cases in signatures.json", vecOtherKey, ""},
		{"exactly_32", "the shortest usable key: 32 characters", "0123456789abcdefghijklmnopqrstuv", ""},
		{"all_punctuation", "every character may be any visible ASCII 0x21-0x7E, punctuation included", `!"#$%&'()*+,-./:;<=>?@[\]^_` + "`{|}~!!!", ""},
		{"surrounding_whitespace", "spaces, tabs and newlines around the key are trimmed before use: the secret equals that of 'plain'", " \t" + vecKey + "\r\n", ""},
		{"empty", "no key: the endpoint answers 500 missing_secret", "", CodeMissingSecret},
		{"whitespace_only", "only white space is no key after trimming: 500 missing_secret", " \t\n", CodeMissingSecret},
		{"too_short", "31 characters after trimming: 500 invalid_median_key", "0123456789abcdefghijklmnopqrstu", CodeInvalidMedianKey},
		{"inner_space", "a space inside the key is not visible ASCII: 500 invalid_median_key", "mk_live_Vt4b9QpX2sLr7 NcW1eYh6KzA3gFj8DmU", CodeInvalidMedianKey},
		{"non_ascii", "a non-ASCII character (é) is not usable: 500 invalid_median_key", "mk_live_Vt4b9QpX2sLr7éNcW1eYh6KzA3gFj8DmU", CodeInvalidMedianKey},
		{"control_character", "DEL (0x7F) is outside 0x21-0x7E: 500 invalid_median_key", "mk_live_Vt4b9QpX2sLr7\x7fNcW1eYh6KzA3gFj8DmU", CodeInvalidMedianKey},
	}
	doc := keysDoc{
		Description: []string{
			"Median tool signing: key -> signing secret test vectors (median-go, protocol/testdata/keys.json).",
			"A key is usable when, after trimming surrounding white space, it has at least 32 characters and every character is visible ASCII (0x21-0x7E).",
			"secret = HKDF-SHA256(ikm = the trimmed key's bytes, salt = empty (RFC 5869: 32 zero bytes), info = \"median tool signing v1\", length = 32 bytes), as lowercase hex.",
			"Each entry has either 'secret' (the key is usable) or 'error': the code the endpoint answers with status 500 at every request when that key is the configured one (missing_secret for no key, invalid_median_key for an unusable one).",
			"Generated by: go test ./protocol -run '^TestVectors$' -update (or go generate ./protocol).",
		},
		Info:      "median tool signing v1",
		Length:    32,
		MinLength: minKeyLength,
	}
	for _, e := range table {
		v := keyVector{ID: e.id, Comment: e.comment, Key: e.key, Error: e.err}
		if e.err == "" {
			v.Secret = hex.EncodeToString(refSecret(e.key))
		}
		doc.Keys = append(doc.Keys, v)
	}
	return doc
}

func buildSignatures() signaturesDoc {
	ts := func(ms int64) string { return strconv.FormatInt(ms, 10) }
	sign := func(key string, ms int64, body string) string {
		return "t=" + ts(ms) + ",v1=" + refMAC(key, ts(ms), body)
	}
	now := vectorNow
	okMAC := refMAC(vecKey, ts(now), diagBody)
	wrongMAC := refMAC(vecOtherKey, ts(now), diagBody)
	cases := []sigVector{
		{ID: "valid", Comment: "a diagnostics request signed one second ago", Key: vecKey, Now: now, Method: "POST", Header: sign(vecKey, now-1000, diagBody), Body: diagBody, Expected: "ok"},
		{ID: "valid_tool_call", Comment: "a ToolCall with non-ASCII characters: the raw UTF-8 bytes of the body are signed", Key: vecKey, Now: now, Method: "POST", Header: sign(vecKey, now, callBody), Body: callBody, Expected: "ok"},
		{ID: "several_v1_one_matching", Comment: "the sender rotates its secret and signs with the old and the new one; one v1 matching is enough", Key: vecKey, Now: now, Method: "POST", Header: "t=" + ts(now) + ",v1=" + wrongMAC + ",v1=" + okMAC, Body: diagBody, Expected: "ok"},
		{ID: "receiver_rotation", Comment: "the receiver holds two keys (keys); the request is signed under the second one", Keys: []string{vecOtherKey, vecKey}, Now: now, Method: "POST", Header: sign(vecKey, now, diagBody), Body: diagBody, Expected: "ok"},
		{ID: "wrong_key", Comment: "signed under another key", Key: vecKey, Now: now, Method: "POST", Header: sign(vecOtherKey, now, diagBody), Body: diagBody, Expected: string(CodeInvalidSignature)},
		{ID: "tampered_body", Comment: "the body differs from the signed one by one byte", Key: vecKey, Now: now, Method: "POST", Header: sign(vecKey, now, diagBody), Body: `{"op":"diagnostics" }`, Expected: string(CodeInvalidSignature)},
		{ID: "v1_signed_other_t", Comment: "the v1 was computed with another t: t is part of the signed string", Key: vecKey, Now: now, Method: "POST", Header: "t=" + ts(now-1) + ",v1=" + okMAC, Body: diagBody, Expected: string(CodeInvalidSignature)},
		{ID: "t_as_sent", Comment: "t with leading zeros: the signed string uses t exactly as sent (\"0<t>.<body>\"), not re-formatted", Key: vecKey, Now: now, Method: "POST", Header: "t=0" + ts(now) + ",v1=" + refMAC(vecKey, "0"+ts(now), diagBody), Body: diagBody, Expected: "ok"},
		{ID: "t_as_sent_long", Comment: "t with enough leading zeros to be longer than any int64 prints (24 characters): still signed and checked exactly as sent", Key: vecKey, Now: now, Method: "POST", Header: "t=00000000000" + ts(now) + ",v1=" + refMAC(vecKey, "00000000000"+ts(now), diagBody), Body: diagBody, Expected: "ok"},
		{ID: "stale_past", Comment: "signed 5 minutes and 1 second ago", Key: vecKey, Now: now, Method: "POST", Header: sign(vecKey, now-5*minute-1000, diagBody), Body: diagBody, Expected: string(CodeStaleTimestamp)},
		{ID: "stale_future", Comment: "t is 5 minutes and 1 second ahead of the receiver: the future is as stale as the past", Key: vecKey, Now: now, Method: "POST", Header: sign(vecKey, now+5*minute+1000, diagBody), Body: diagBody, Expected: string(CodeStaleTimestamp)},
		{ID: "edge_past_exact", Comment: "exactly 5 minutes (300000 ms) old: still accepted", Key: vecKey, Now: now, Method: "POST", Header: sign(vecKey, now-5*minute, diagBody), Body: diagBody, Expected: "ok"},
		{ID: "edge_future_exact", Comment: "exactly 5 minutes ahead: still accepted", Key: vecKey, Now: now, Method: "POST", Header: sign(vecKey, now+5*minute, diagBody), Body: diagBody, Expected: "ok"},
		{ID: "edge_past_plus_1ms", Comment: "5 minutes and 1 ms old: stale", Key: vecKey, Now: now, Method: "POST", Header: sign(vecKey, now-5*minute-1, diagBody), Body: diagBody, Expected: string(CodeStaleTimestamp)},
		{ID: "edge_future_plus_1ms", Comment: "5 minutes and 1 ms ahead: stale", Key: vecKey, Now: now, Method: "POST", Header: sign(vecKey, now+5*minute+1, diagBody), Body: diagBody, Expected: string(CodeStaleTimestamp)},
		{ID: "seconds_instead_of_ms", Comment: "t in seconds, correctly signed: read as milliseconds it is decades old", Key: vecKey, Now: now, Method: "POST", Header: sign(vecKey, now/1000, diagBody), Body: diagBody, Expected: string(CodeStaleTimestamp)},
		{ID: "duplicate_t", Comment: "two t entries", Key: vecKey, Now: now, Method: "POST", Header: "t=" + ts(now) + ",t=" + ts(now) + ",v1=" + okMAC, Body: diagBody, Expected: string(CodeMalformedSignature)},
		{ID: "missing_t", Comment: "no t entry", Key: vecKey, Now: now, Method: "POST", Header: "v1=" + okMAC, Body: diagBody, Expected: string(CodeMalformedSignature)},
		{ID: "t_not_integer", Comment: "t is not a base-10 integer", Key: vecKey, Now: now, Method: "POST", Header: "t=" + ts(now) + ".5,v1=" + okMAC, Body: diagBody, Expected: string(CodeMalformedSignature)},
		{ID: "t_plus_sign", Comment: "t with a plus sign is not a plain base-10 integer", Key: vecKey, Now: now, Method: "POST", Header: "t=+" + ts(now) + ",v1=" + refMAC(vecKey, "+"+ts(now), diagBody), Body: diagBody, Expected: string(CodeMalformedSignature)},
		{ID: "missing_v1", Comment: "no v1 entry", Key: vecKey, Now: now, Method: "POST", Header: "t=" + ts(now), Body: diagBody, Expected: string(CodeMalformedSignature)},
		{ID: "bad_hex", Comment: "v1 is 64 characters but not hex", Key: vecKey, Now: now, Method: "POST", Header: "t=" + ts(now) + ",v1=" + strings.Repeat("zz", 32), Body: diagBody, Expected: string(CodeMalformedSignature)},
		{ID: "short_hex", Comment: "v1 is 63 hex digits", Key: vecKey, Now: now, Method: "POST", Header: "t=" + ts(now) + ",v1=" + okMAC[:63], Body: diagBody, Expected: string(CodeMalformedSignature)},
		{ID: "long_hex", Comment: "v1 is 66 hex digits", Key: vecKey, Now: now, Method: "POST", Header: "t=" + ts(now) + ",v1=" + okMAC + "00", Body: diagBody, Expected: string(CodeMalformedSignature)},
		{ID: "uppercase_hex", Comment: "v1 in uppercase hex is accepted", Key: vecKey, Now: now, Method: "POST", Header: "t=" + ts(now) + ",v1=" + strings.ToUpper(okMAC), Body: diagBody, Expected: "ok"},
		{ID: "unknown_scheme_only", Comment: "only a v0 entry (other schemes are ignored), so there is no v1: malformed", Key: vecKey, Now: now, Method: "POST", Header: "t=" + ts(now) + ",v0=" + okMAC, Body: diagBody, Expected: string(CodeMalformedSignature)},
		{ID: "v0_v1_mix", Comment: "v0 and v2 entries are ignored, whatever they hold; the v1 decides", Key: vecKey, Now: now, Method: "POST", Header: "t=" + ts(now) + ",v0=not-hex,v1=" + okMAC + ",v2=" + wrongMAC, Body: diagBody, Expected: "ok"},
		{ID: "spaces_after_commas", Comment: "optional spaces after commas are tolerated", Key: vecKey, Now: now, Method: "POST", Header: "t=" + ts(now) + ", v1=" + wrongMAC + ", v1=" + okMAC, Body: diagBody, Expected: "ok"},
		{ID: "not_name_value", Comment: "an entry without '=' is malformed", Key: vecKey, Now: now, Method: "POST", Header: "t=" + ts(now) + ",v1=" + okMAC + ",junk", Body: diagBody, Expected: string(CodeMalformedSignature)},
		{ID: "empty_header", Comment: "the header is empty (or absent): missing_signature", Key: vecKey, Now: now, Method: "POST", Header: "", Body: diagBody, Expected: string(CodeMissingSignature)},
		{ID: "get_empty_body", Comment: "GET (the manifest) has an empty body: the signed string is \"<t>.\"", Key: vecKey, Now: now, Method: "GET", Header: sign(vecKey, now, ""), Body: "", Expected: "ok"},
		{ID: "get_signed_with_body", Comment: "a GET signature computed over a non-empty body does not verify an empty body", Key: vecKey, Now: now, Method: "GET", Header: sign(vecKey, now, "{}"), Body: "", Expected: string(CodeInvalidSignature)},
	}
	return signaturesDoc{
		Description: []string{
			"Median tool signing: signed-request test vectors (median-go, protocol/testdata/signatures.json). Use with keys.json.",
			"Header 'median-signature: t=<ms>,v1=<hex>[,v1=<hex>...]'. t is the sender's clock in milliseconds since the Unix epoch; v1 is the hex (lower or upper case) HMAC-SHA256 of the bytes '<t as sent>.<body>' under the signing secret.",
			"The signing secret is HKDF-SHA256(ikm = the Median key after trimming surrounding white space, salt = empty, info = \"median tool signing v1\", length = 32 bytes); see keys.json.",
			"Several v1 entries are allowed (one matching is enough); entries with other scheme names (v0=, v2=) are ignored; spaces after commas are tolerated. No t, two t, a t that is not a base-10 integer, no v1, or a v1 that is not 64 hex digits is malformed.",
			"A request is stale when |now - t| > toleranceMs (exactly toleranceMs is accepted), in either direction.",
			"Order of checks: empty header -> missing_signature; malformed -> malformed_signature; stale -> stale_timestamp; then the body's MAC under each key -> invalid_signature when none matches.",
			"Fields of each case: id (stable name), comment, key (the receiver's one Median key) or keys (the receiver holds several: valid under any), now (receiver's clock, ms), method, header (the median-signature value, exactly), body (the raw body: the UTF-8 bytes of this JSON string), expected ('ok' when the signature is accepted, otherwise the error code, answered with status 401).",
			"Generated by: go test ./protocol -run '^TestVectors$' -update (or go generate ./protocol).",
		},
		Header:      signatureHeader,
		ToleranceMS: defaultTolerance.Milliseconds(),
		Cases:       cases,
	}
}

// encodeVectors renders a vector document deterministically.
func encodeVectors(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	require.NoError(t, enc.Encode(v))
	return buf.Bytes()
}

// TestVectors checks the implementation against testdata/keys.json and
// testdata/signatures.json, and that the files are what this file generates.
// Run with -update to rewrite them.
func TestVectors(t *testing.T) {
	want := map[string][]byte{
		keysFile:       encodeVectors(t, buildKeys()),
		signaturesFile: encodeVectors(t, buildSignatures()),
	}
	for name, b := range want {
		if *update {
			require.NoError(t, os.MkdirAll(filepath.Dir(name), 0o755))
			require.NoError(t, os.WriteFile(name, b, 0o644))
		}
		got, err := os.ReadFile(name)
		require.NoError(t, err, "run: go test ./protocol -run '^TestVectors$' -update")
		require.Equal(t, string(b), string(got), "%s is stale; regenerate it with -update", name)
	}

	t.Run("keys", func(t *testing.T) {
		var doc keysDoc
		raw, err := os.ReadFile(keysFile)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &doc))
		require.GreaterOrEqual(t, len(doc.Keys), 8)
		for _, v := range doc.Keys {
			t.Run(v.ID, func(t *testing.T) {
				k, err := ParseKey(v.Key)
				if v.Error != "" {
					require.Error(t, err)
					assert.Equal(t, v.Error, errorCode(err))
					h, err := New(Config{Keys: []string{v.Key}, Logger: discardLogger(), Now: func() time.Time { return testNow }})
					require.Error(t, err)
					requireError(t, h.Serve(context.Background(), post(diagBody)), http.StatusInternalServerError, v.Error)
					return
				}
				require.NoError(t, err)
				assert.Equal(t, v.Secret, hex.EncodeToString(k.st.secret))
				// The library's own HKDF call agrees on the trimmed key.
				s, err := deriveSecret(strings.TrimSpace(v.Key))
				require.NoError(t, err)
				assert.Equal(t, v.Secret, hex.EncodeToString(s))
			})
		}
	})

	t.Run("signatures", func(t *testing.T) {
		var doc signaturesDoc
		raw, err := os.ReadFile(signaturesFile)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &doc))
		require.Equal(t, defaultTolerance.Milliseconds(), doc.ToleranceMS)
		seen := map[string]bool{}
		for _, v := range doc.Cases {
			require.False(t, seen[v.ID], "duplicate id %s", v.ID)
			seen[v.ID] = true
			t.Run(v.ID, func(t *testing.T) {
				keys := v.Keys
				if v.Key != "" {
					keys = []string{v.Key}
				}
				require.NotEmpty(t, keys)
				now := time.UnixMilli(v.Now)

				// The building blocks: ParseSignature, CheckTime, Verify.
				var parsed []Key
				for _, s := range keys {
					parsed = append(parsed, mustParseKey(s))
				}
				sig, err := parseSignature(v.Header)
				if err == nil {
					err = sig.checkTime(now, defaultTolerance)
				}
				if err == nil {
					err = sig.verify([]byte(v.Body), parsed...)
				}
				if v.Expected == "ok" {
					require.NoError(t, err)
				} else {
					require.Error(t, err)
					assert.Equal(t, Code(v.Expected), errorCode(err), "error %v", err)
				}

				// The whole endpoint: Serve and ServeHTTP.
				// Two Handlers, so that each answers its first request (the
				// diagnostics report counts what came before).
				cfg := Config{Keys: keys, Now: func() time.Time { return now }, Logger: discardLogger(), DisableReplayProtection: true}
				h, err := New(cfg)
				require.NoError(t, err)
				h2, err := New(cfg)
				require.NoError(t, err)
				req := Request{Method: v.Method, Signature: v.Header, BodyBytes: []byte(v.Body), ContentLength: int64(len(v.Body))}
				resp := h.Serve(context.Background(), req)
				httpResp := serveHTTP(h2, v.Method, v.Header, v.Body)
				assert.Equal(t, resp.Status, httpResp.Status)
				assert.Equal(t, string(resp.Body), string(httpResp.Body))
				if v.Expected == "ok" {
					// Past the signature, the body decides (diagnostics, unknown tool...).
					assert.NotEqual(t, http.StatusUnauthorized, resp.Status, "body %s", resp.Body)
					assert.NotContains(t, []Code{CodeMissingSignature, CodeMalformedSignature, CodeStaleTimestamp, CodeInvalidSignature}, resp.code)
				} else {
					requireError(t, resp, http.StatusUnauthorized, Code(v.Expected))
				}
			})
		}
		for _, id := range []string{"valid", "several_v1_one_matching", "wrong_key", "tampered_body", "stale_past", "stale_future", "edge_past_exact", "edge_past_plus_1ms", "seconds_instead_of_ms", "duplicate_t", "missing_t", "missing_v1", "bad_hex", "short_hex", "uppercase_hex", "unknown_scheme_only", "v0_v1_mix", "spaces_after_commas", "empty_header", "get_empty_body", "receiver_rotation"} {
			assert.True(t, seen[id], "vector %s is missing", id)
		}
	})
}

// TestReferenceHKDF checks the hand-written HKDF used by the generator, and
// crypto/hkdf, against RFC 5869 appendix A test cases 1 and 3.
func TestReferenceHKDF(t *testing.T) {
	ikm := bytes.Repeat([]byte{0x0b}, 22)
	okm3, err := hkdf.Key(sha256.New, ikm, nil, "", 42)
	require.NoError(t, err)
	assert.Equal(t, "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8", hex.EncodeToString(okm3))
	salt, _ := hex.DecodeString("000102030405060708090a0b0c")
	info, _ := hex.DecodeString("f0f1f2f3f4f5f6f7f8f9")
	okm1, err := hkdf.Key(sha256.New, ikm, salt, string(info), 42)
	require.NoError(t, err)
	assert.Equal(t, "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865", hex.EncodeToString(okm1))

	// The reference derivation equals crypto/hkdf with the contract's parameters.
	for _, k := range []string{testKey, otherKey, vecKey} {
		want, err := hkdf.Key(sha256.New, []byte(k), nil, "median tool signing v1", 32)
		require.NoError(t, err)
		assert.Equal(t, want, refSecret(k))
	}
}

// serveHTTP runs h as an http.Handler and returns the answer as a Response.
func serveHTTP(h http.Handler, method, sig, body string) Response {
	req, _ := http.NewRequest(method, "/median", strings.NewReader(body))
	if sig != "" {
		req.Header.Set(signatureHeader, sig)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := Response{Status: rec.Code, Body: rec.Body.Bytes(), Allow: rec.Header().Get("Allow")}
	var a answer
	if json.Unmarshal(resp.Body, &a) == nil && a.Error != nil {
		resp.code = a.Error.Code
	}
	return resp
}
