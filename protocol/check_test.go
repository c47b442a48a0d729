package protocol

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// marked returns req with the check mark of its signature's t under key.
func marked(req Request, key string) Request {
	ts, _, _ := strings.Cut(strings.TrimPrefix(req.Signature, "t="), ",")
	ms, _ := strconv.ParseInt(ts, 10, 64)
	req.Check = mustParseKey(key).CheckMark(time.UnixMilli(ms))
	return req
}

// checkToken asks h for a check token with a marked, signed GET.
func checkToken(t *testing.T, h *Handler) string {
	t.Helper()
	resp := h.Serve(context.Background(), marked(get(), testKey))
	require.Equal(t, http.StatusOK, resp.Status)
	require.NotEmpty(t, resp.CheckToken, "a marked, signed request gets a check token")
	return resp.CheckToken
}

// TestCheckMarkIsCryptoHMAC: the mark is the hex HMAC-SHA256 under the
// derived secret of "median-check.<t>", as docs/PROTOCOL.md §10 says, so
// another implementation can compute it; the zero Key gives none.
func TestCheckMarkIsCryptoHMAC(t *testing.T) {
	k := mustParseKey(testKey)
	m := hmac.New(sha256.New, k.st.secret)
	m.Write([]byte("median-check." + strconv.FormatInt(testNow.UnixMilli(), 10)))
	assert.Equal(t, hex.EncodeToString(m.Sum(nil)), k.CheckMark(testNow))
	assert.Empty(t, Key{}.CheckMark(testNow))
	assert.True(t, k.markMatches(strconv.FormatInt(testNow.UnixMilli(), 10), strings.ToUpper(k.CheckMark(testNow))), "either case, like v1")
}

// TestChecksAreCountedApart: a check's marked requests and its probes
// carrying the token it got are counted in the report's checks section
// only: the deployment's refusals, tools, keys, manifest and stale reading
// stay as Median left them (PROTOCOL.md §10, "Checks are not traffic").
func TestChecksAreCountedApart(t *testing.T) {
	var seen observed
	h, _ := newHandler(t, Config{Tools: reportTools(), Observer: seen.add})
	ctx := context.Background()
	token := checkToken(t, h)
	withToken := func(req Request) Request { req.Check = token; return req }

	call := marked(post(toolCall("echo", "callid_c1", `{"orderId":1}`)), testKey)
	resp := h.Serve(ctx, call)
	requireResult(t, resp)
	assert.NotEmpty(t, resp.CheckToken, "every answer to a marked request carries a fresh token")
	assert.True(t, seen.last(t).Check, "the observer is told")
	requireError(t, h.Serve(ctx, marked(post(toolCall("echo", "callid_c2", `{"orderId":0}`)), testKey)), http.StatusBadRequest, CodeInvalidInput)
	requireError(t, h.Serve(ctx, marked(post(toolCall("fail", "callid_c3", `{"orderId":3}`)), testKey)), http.StatusOK, CodeExecutionFailed)
	requireError(t, h.Serve(ctx, marked(post(toolCall("nope", "callid_c4", `{}`)), testKey)), http.StatusNotFound, CodeUnknownTool)

	// The probes: no signature, a malformed one, a stale one, one under a
	// key the server does not hold, a method it does not answer, a body
	// over the limit.
	body := []byte(`{"op":"diagnostics"}`)
	probes := []struct {
		req  Request
		code Code
	}{
		{Request{Method: http.MethodPost, BodyBytes: body}, CodeMissingSignature},
		{Request{Method: http.MethodPost, Signature: "t=1,v1=zz", BodyBytes: body}, CodeMalformedSignature},
		{diagnosticsAt(testKey, testNow.Add(-10*time.Minute)), CodeStaleTimestamp},
		{diagnosticsAt(otherKey, testNow), CodeInvalidSignature},
		{Request{Method: http.MethodDelete}, CodeMethodNotAllowed},
		{Request{Method: http.MethodPost, Signature: mustParseKey(testKey).Sign(testNow, nil), Body: strings.NewReader(""), ContentLength: defaultMaxBodyBytes + 1}, CodeInvalidBody},
	}
	for _, p := range probes {
		resp := h.Serve(ctx, withToken(p.req))
		assert.Equal(t, p.code, decode(t, resp).Error.Code)
		assert.Empty(t, resp.CheckToken, "a probe that did not verify gets no token")
		assert.True(t, seen.last(t).Check)
	}

	r := h.Report(ctx)
	assert.Empty(t, r.Refused, "no refusal of a check reads as the deployment's")
	for name, e := range r.Tools {
		assert.Zero(t, e.Calls, "tool %s counts no call of a check", name)
		assert.Zero(t, e.LastFailure.At, "tool %s", name)
	}
	assert.Zero(t, r.Keys[0].Verified, "the keys count what Median signs")
	assert.Zero(t, r.Manifest.LastServed, "nor when Median last synced")
	assert.Equal(t, int64(1+4+len(probes)), r.Checks.Requests)
	assert.Equal(t, int64(3), r.Checks.Calls, "the calls of registered tools")
	assert.Equal(t, testNow.UnixMilli(), r.Checks.Last.UnixMilli())
	assert.Equal(t, map[Code]int64{CodeInvalidInput: 1, CodeUnknownTool: 1, CodeMissingSignature: 1, CodeMalformedSignature: 1,
		CodeStaleTimestamp: 1, CodeInvalidSignature: 1, CodeMethodNotAllowed: 1, CodeInvalidBody: 1}, r.Checks.Refused)
	maxSkew, _ := h.stats.staleReading(testNow)
	assert.Zero(t, maxSkew, "a check's stale probe leaves no skew reading")

	// The wire form: its own section, whole.
	raw := requireReport(t, h.Serve(ctx, post(`{"op":"diagnostics"}`))).raw
	assert.Contains(t, raw, `"checks":{"requests":11,"last":"2026-01-01T00:00:00Z","calls":3,"refused":{`)
}

// TestNotAChecksRequest: a request that does not prove it is a check's is
// counted as the deployment's, whatever its Median-Check header says: a
// forged, expired, foreign or over-long token, a mark on an unsigned
// request, a mark of another t or under another key, a mark that is not
// hex. Nobody without the key can hide a request among the checks.
func TestNotAChecksRequest(t *testing.T) {
	clock := newSettableClock()
	h, _ := newHandler(t, Config{Keys: []string{testKey, otherKey}, Tools: reportTools(), Now: clock.Now})
	ctx := context.Background()
	good := checkToken(t, h)
	exp, mac, _ := strings.Cut(good, ".")
	flipped := []byte(mac)
	flipped[0] = map[bool]byte{true: '1', false: '0'}[mac[0] == '0'] // another hex digit
	// A token under a key the server does not hold, and one good for longer
	// than the library gives.
	foreign := mustParseKey("mk_foreign_0123456789abcdefghijklmnopqrst").checkToken(testNow)
	far := strconv.FormatInt(testNow.Add(time.Hour).UnixMilli(), 10)
	var sum [32]byte
	mustParseKey(testKey).checkMAC(checkTokenDomain, far, &sum)
	tooLong := far + "." + hex.EncodeToString(sum[:])

	unsigned := Request{Method: http.MethodPost, BodyBytes: []byte(`{"op":"diagnostics"}`)}
	for _, tc := range []struct {
		name  string
		check string
	}{
		{"forged MAC", exp + "." + string(flipped)},
		{"forged expiry", strconv.FormatInt(testNow.Add(time.Minute).UnixMilli(), 10) + "." + mac},
		{"foreign key", foreign},
		{"good for too long", tooLong},
		{"no dot", exp + mac},
		{"not digits", "12a4." + mac},
		{"a mark instead of a token", mustParseKey(testKey).CheckMark(testNow)},
		{"just a word", "conformance"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := unsigned
			req.Check = tc.check
			resp := h.Serve(ctx, req)
			assert.Equal(t, CodeMissingSignature, decode(t, resp).Error.Code)
			assert.Empty(t, resp.CheckToken)
		})
	}
	r := h.Report(ctx)
	assert.Equal(t, int64(8), r.Refused[CodeMissingSignature].Count, "each counts as the refusal it is")
	assert.Equal(t, int64(1), r.Checks.Requests, "only the request that asked for the token is a check's")

	// Signed requests whose mark proves nothing run as Median's.
	call := post(toolCall("echo", "callid_n1", `{"orderId":1}`))
	for _, tc := range []struct {
		name  string
		check string
	}{
		{"a mark of another t", mustParseKey(testKey).CheckMark(testNow.Add(-time.Second))},
		{"a mark under another key", mustParseKey(otherKey).CheckMark(testNow)},
		{"a mark that is not hex", strings.Repeat("g", 64)},
		{"a forged token", exp + "." + string(flipped)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := call
			req.Check = tc.check
			resp := h.Serve(ctx, req)
			requireResult(t, resp)
			assert.Empty(t, resp.CheckToken, "no token for a request that is not a check's")
		})
	}
	assert.Equal(t, int64(4), h.Report(ctx).Tools["echo"].Calls)

	// A good token expires checkTokenLifetime after it was given.
	probe := unsigned
	probe.Check = good
	clock.advance(checkTokenLifetime - time.Millisecond)
	h.Serve(ctx, probe)
	assert.Equal(t, int64(2), h.Report(ctx).Checks.Requests, "still good a millisecond before its expiry")
	clock.advance(time.Millisecond)
	h.Serve(ctx, probe)
	r = h.Report(ctx)
	assert.Equal(t, int64(2), r.Checks.Requests, "expired at its expiry")
	assert.Equal(t, int64(9), r.Refused[CodeMissingSignature].Count)
}

// TestCheckTokenUnderAnyKeyInForce: a token given under one key is good
// while that key is in force (a rotation), and under the key the marked
// request verified under; a Handler without the key takes it for nothing.
func TestCheckTokenUnderAnyKeyInForce(t *testing.T) {
	h, _ := newHandler(t, Config{Keys: []string{testKey, otherKey}})
	ctx := context.Background()
	resp := h.Serve(ctx, marked(Request{Method: http.MethodGet, Signature: mustParseKey(otherKey).Sign(testNow, nil)}, otherKey))
	require.NotEmpty(t, resp.CheckToken)
	probe := Request{Method: http.MethodPost, BodyBytes: []byte(`{}`), Check: resp.CheckToken}
	h.Serve(ctx, probe)
	assert.Equal(t, int64(2), h.Report(ctx).Checks.Requests)

	only, _ := newHandler(t, Config{Keys: []string{testKey}})
	only.Serve(ctx, probe)
	assert.Zero(t, only.Report(ctx).Checks.Requests)
	assert.Equal(t, int64(1), only.Report(ctx).Refused[CodeMissingSignature].Count)
}

// TestCheckTokenOnTheWire: ServeHTTP reads Median-Check and writes
// Median-Check-Token, so a check over net/http gets its token.
func TestCheckTokenOnTheWire(t *testing.T) {
	h, _ := newHandler(t, Config{})
	req := mustRequest(t, http.MethodGet, nil)
	req.Header.Set("Median-Signature", mustParseKey(testKey).Sign(testNow, nil))
	req.Header.Set("Median-Check", mustParseKey(testKey).CheckMark(testNow))
	rec := serveRecorded(h, req)
	require.Equal(t, http.StatusOK, rec.Code)
	token := rec.Header().Get("Median-Check-Token")
	require.NotEmpty(t, token)

	probe := mustRequest(t, http.MethodPost, []byte(`{}`))
	probe.Header.Set("Median-Check", token)
	rec = serveRecorded(h, probe)
	assert.Equal(t, http.StatusUnauthorized, rec.Code)
	assert.Empty(t, rec.Header().Get("Median-Check-Token"))
	assert.Equal(t, int64(2), h.Report(context.Background()).Checks.Requests)

	plain := mustRequest(t, http.MethodGet, nil)
	plain.Header.Set("Median-Signature", mustParseKey(testKey).Sign(testNow, nil))
	rec = serveRecorded(h, plain)
	assert.Empty(t, rec.Header().Get("Median-Check-Token"), "Median's own requests get no token")
}

// TestCheckVerificationAllocatesNothing: telling a check's request from
// Median's allocates nothing for a request without the header (all of
// Median's), and at most the copy checkMAC makes with it.
func TestCheckVerificationAllocatesNothing(t *testing.T) {
	if boringCrypto {
		t.Skip("BoringCrypto's SHA-256 allocates its state")
	}
	k := mustParseKey(testKey)
	keys := []Key{k}
	token := k.checkToken(testNow)
	mark := k.CheckMark(testNow)
	ts := strconv.FormatInt(testNow.UnixMilli(), 10)
	var st callState
	ring := &keyring{keys: keys}
	assert.Zero(t, testing.AllocsPerRun(50, func() { st.unsignedCheck("", testNow, ring) }), "no header")
	if raceEnabled {
		// Under -race sync.Pool drops a share of what it is given, so the
		// key's HMAC states are made again; the bound below is checked
		// without -race.
		return
	}
	assert.LessOrEqual(t, testing.AllocsPerRun(50, func() {
		if !validCheckToken(token, testNow, keys) {
			t.Fatal("the token does not verify")
		}
	}), 1.0, "a token")
	assert.LessOrEqual(t, testing.AllocsPerRun(50, func() {
		if !signedCheck(mark, ts, k, testNow, keys) {
			t.Fatal("the mark does not verify")
		}
	}), 1.0, "a mark")
}

// mustRequest returns a request to the endpoint with body (nil for none).
func mustRequest(t *testing.T, method string, body []byte) *http.Request {
	t.Helper()
	return httptest.NewRequest(method, "/api/median", strings.NewReader(string(body)))
}

// serveRecorded serves req with h and returns what it wrote.
func serveRecorded(h *Handler, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}
