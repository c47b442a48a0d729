package protocol

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSignatureMalformed(t *testing.T) {
	mac := strings.Repeat("ab", 32)
	ts := "t=1767225600000"
	tests := []struct {
		name, header string
		want         error
	}{
		{"empty", "", ErrMissingSignature},
		{"white space only", "  ", ErrMissingSignature},
		{"no t", "v1=" + mac, ErrMalformedSignature},
		{"two t", ts + "," + ts + ",v1=" + mac, ErrMalformedSignature},
		{"empty t", "t=,v1=" + mac, ErrMalformedSignature},
		{"t decimal", "t=1767225600000.0,v1=" + mac, ErrMalformedSignature},
		{"t hex", "t=0x1A,v1=" + mac, ErrMalformedSignature},
		{"t plus", "t=+1767225600000,v1=" + mac, ErrMalformedSignature},
		{"t with underscore", "t=1_767_225_600_000,v1=" + mac, ErrMalformedSignature},
		{"t overflow", "t=99999999999999999999,v1=" + mac, ErrMalformedSignature},
		{"t word", "t=now,v1=" + mac, ErrMalformedSignature},
		{"no v1", ts, ErrMalformedSignature},
		{"only v0", ts + ",v0=" + mac, ErrMalformedSignature},
		{"only v2", ts + ",v2=" + mac, ErrMalformedSignature},
		{"V1 upper-case name", ts + ",V1=" + mac, ErrMalformedSignature},
		{"empty v1", ts + ",v1=", ErrMalformedSignature},
		{"v1 63 hex", ts + ",v1=" + mac[:63], ErrMalformedSignature},
		{"v1 65 hex", ts + ",v1=" + mac + "a", ErrMalformedSignature},
		{"v1 not hex", ts + ",v1=" + strings.Repeat("gg", 32), ErrMalformedSignature},
		{"one bad v1 among good", ts + ",v1=" + mac + ",v1=xyz", ErrMalformedSignature},
		{"entry without =", ts + ",v1=" + mac + ",garbage", ErrMalformedSignature},
		{"empty entry", ts + ",,v1=" + mac, ErrMalformedSignature},
		{"trailing comma", ts + ",v1=" + mac + ",", ErrMalformedSignature},
		{"semicolons", ts + ";v1=" + mac, ErrMalformedSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSignature(tt.header)
			require.ErrorIs(t, err, tt.want)
			assert.NotEmpty(t, ErrorCode(err))
		})
	}
}

func TestParseSignatureAccepts(t *testing.T) {
	a, b := strings.Repeat("ab", 32), strings.Repeat("CD", 32)
	tests := []struct {
		name, header string
		ts           int64
		v1           int
	}{
		{"plain", "t=1767225600000,v1=" + a, 1767225600000, 1},
		{"several v1", "t=5,v1=" + a + ",v1=" + b, 5, 2},
		{"v1 before t", "v1=" + a + ",t=5", 5, 1},
		{"spaces after commas", "t=5, v1=" + a + ", v1=" + b, 5, 2},
		{"other schemes ignored", "t=5,v0=zz,v1=" + a + ",v2=" + b, 5, 1},
		{"uppercase hex", "t=5,v1=" + b, 5, 1},
		{"negative t", "t=-5,v1=" + a, -5, 1},
		{"surrounding spaces", "  t=5,v1=" + a + "  ", 5, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sig, err := ParseSignature(tt.header)
			require.NoError(t, err)
			assert.Equal(t, tt.ts, sig.Timestamp)
			assert.Equal(t, tt.v1, 1+len(sig.more), "number of v1 entries")
		})
	}
}

func TestCheckTimeBothDirections(t *testing.T) {
	now := testNow
	tol := DefaultTolerance.Milliseconds()
	tests := []struct {
		name  string
		t     int64
		stale bool
	}{
		{"now", now.UnixMilli(), false},
		{"1 s past", now.UnixMilli() - 1000, false},
		{"exactly 5 min past", now.UnixMilli() - tol, false},
		{"5 min 1 ms past", now.UnixMilli() - tol - 1, true},
		{"exactly 5 min future", now.UnixMilli() + tol, false},
		{"5 min 1 ms future", now.UnixMilli() + tol + 1, true},
		{"an hour future", now.UnixMilli() + 3_600_000, true},
		{"seconds instead of ms", now.Unix(), true},
		{"zero", 0, true},
		{"min int64", math.MinInt64, true},
		{"max int64", math.MaxInt64, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sig, err := ParseSignature("t=" + strconv.FormatInt(tt.t, 10) + ",v1=" + strings.Repeat("0", 64))
			require.NoError(t, err)
			err = sig.CheckTime(now, DefaultTolerance)
			if !tt.stale {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrStaleTimestamp)
			assert.Equal(t, CodeStaleTimestamp, ErrorCode(err))
		})
	}
	sig, _ := ParseSignature("t=" + strconv.FormatInt(now.Unix(), 10) + ",v1=" + strings.Repeat("0", 64))
	assert.Contains(t, sig.CheckTime(now, DefaultTolerance).Error(), "seconds", "the error points at the usual mistake")
}

// TestFreshnessThroughServe uses Config.Now and Config.Tolerance.
func TestFreshnessThroughServe(t *testing.T) {
	body := []byte(`{"op":"diagnostics"}`)
	for _, tt := range []struct {
		name      string
		tolerance time.Duration
		signedAt  time.Duration // relative to the server clock
		want      Code
	}{
		{"default, 5 min past", 0, -5 * time.Minute, CodeDiagnosticsUnsupported},
		{"default, 5 min 1 ms past", 0, -5*time.Minute - time.Millisecond, CodeStaleTimestamp},
		{"default, 5 min future", 0, 5 * time.Minute, CodeDiagnosticsUnsupported},
		{"default, 5 min 1 ms future", 0, 5*time.Minute + time.Millisecond, CodeStaleTimestamp},
		{"30 s tolerance, 31 s past", 30 * time.Second, -31 * time.Second, CodeStaleTimestamp},
		{"30 s tolerance, 31 s future", 30 * time.Second, 31 * time.Second, CodeStaleTimestamp},
		{"30 s tolerance, 29 s past", 30 * time.Second, -29 * time.Second, CodeDiagnosticsUnsupported},
	} {
		t.Run(tt.name, func(t *testing.T) {
			serverNow := testNow.Add(time.Hour)
			h, _ := newHandler(t, Config{Tolerance: tt.tolerance, Now: func() time.Time { return serverNow }})
			sig := MustParseKey(testKey).Sign(serverNow.Add(tt.signedAt), body)
			resp := h.Serve(context.Background(), Request{Method: http.MethodPost, Signature: sig, BodyBytes: body})
			requireError(t, resp, tt.want.Status(), tt.want)
		})
	}
}

func TestVerifyMAC(t *testing.T) {
	k := MustParseKey(testKey)
	body := []byte(`{"op":"diagnostics"}`)
	sig, err := ParseSignature(k.Sign(testNow, body))
	require.NoError(t, err)
	require.NoError(t, sig.Verify(body, k))
	require.NoError(t, sig.Verify(body, MustParseKey(otherKey), k), "any key may match")
	for name, err := range map[string]error{
		"tampered body": sig.Verify([]byte(`{"op":"diagnostics"} `), k),
		"wrong key":     sig.Verify(body, MustParseKey(otherKey)),
		"no key":        sig.Verify(body),
		"empty body":    sig.Verify(nil, k),
	} {
		require.ErrorIs(t, err, ErrInvalidSignature, name)
		assert.Equal(t, CodeInvalidSignature, ErrorCode(err), name)
	}
	// t is part of the signed string, exactly as sent.
	h := k.Sign(testNow, body)
	shifted, err := ParseSignature("t=0" + strings.TrimPrefix(h, "t="))
	require.NoError(t, err)
	require.ErrorIs(t, shifted.Verify(body, k), ErrInvalidSignature)
}

func TestErrorCodeMapping(t *testing.T) {
	for sentinel, code := range map[error]Code{
		ErrMissingSignature:   CodeMissingSignature,
		ErrMalformedSignature: CodeMalformedSignature,
		ErrStaleTimestamp:     CodeStaleTimestamp,
		ErrInvalidSignature:   CodeInvalidSignature,
		ErrMissingKey:         CodeMissingSecret,
		ErrInvalidKey:         CodeInvalidMedianKey,
	} {
		assert.Equal(t, code, ErrorCode(sentinel))
		assert.Equal(t, code, ErrorCode(errors.Join(errors.New("x"), sentinel)))
		assert.Equal(t, code.Status(), ErrorResponse(sentinel).Status)
		assert.Equal(t, code, ErrorResponse(sentinel).Code())
	}
	assert.Equal(t, Code(""), ErrorCode(nil))
	assert.Equal(t, Code(""), ErrorCode(errors.New("other")))
	assert.Equal(t, CodeExecutionFailed, ErrorResponse(errors.New("boom")).Code())
	assert.Len(t, Codes(), 13)
	statuses := map[Code]int{
		CodeExecutionFailed: 200, CodeDiagnosticsUnsupported: 200, CodeInvalidBody: 400, CodeUnknownOp: 400,
		CodeInvalidInput: 400, CodeMissingSignature: 401, CodeMalformedSignature: 401, CodeStaleTimestamp: 401,
		CodeInvalidSignature: 401, CodeUnknownTool: 404, CodeMethodNotAllowed: 405, CodeMissingSecret: 500,
		CodeInvalidMedianKey: 500,
	}
	for _, c := range Codes() {
		assert.Equal(t, statuses[c], c.Status(), c)
	}
}

func TestVerifySignatureIsTheWholeCheck(t *testing.T) {
	k := MustParseKey(testKey)
	body := []byte(`{"op":"diagnostics"}`)
	good := k.Sign(testNow, body)
	rotated := good + ",v1=" + strings.Repeat("0", 64)
	tests := []struct {
		name   string
		header string
		body   []byte
		now    time.Time
		want   error
	}{
		{"good", good, body, testNow, nil},
		{"good among several v1", "t=" + strconv.FormatInt(testNow.UnixMilli(), 10) + ",v1=" + strings.Repeat("0", 64) + "," + strings.TrimPrefix(good, "t="+strconv.FormatInt(testNow.UnixMilli(), 10)+","), body, testNow, nil},
		{"good, then a stale entry of an old key", rotated, body, testNow, nil},
		{"missing", "", body, testNow, ErrMissingSignature},
		{"malformed", "t=1,v1=zz", body, testNow, ErrMalformedSignature},
		{"stale", good, body, testNow.Add(DefaultTolerance + time.Millisecond), ErrStaleTimestamp},
		{"tampered body", good, []byte(`{"op":"diagnostic"}`), testNow, ErrInvalidSignature},
		{"wrong key", MustParseKey(otherKey).Sign(testNow, body), body, testNow, ErrInvalidSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifySignature(tt.header, tt.body, tt.now, DefaultTolerance, k)
			if tt.want == nil {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, tt.want)
		})
	}
	t.Run("no allocation when good", func(t *testing.T) {
		if raceEnabled {
			t.Skip("under -race sync.Pool drops items on purpose; run without -race to count allocations")
		}
		allocs := testing.AllocsPerRun(100, func() {
			if err := VerifySignature(good, body, testNow, DefaultTolerance, k); err != nil {
				t.Fatal(err)
			}
		})
		assert.Zero(t, allocs)
	})
}
