package protocol

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
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
		{"empty", "", CodeMissingSignature},
		{"white space only", "  ", CodeMissingSignature},
		{"no t", "v1=" + mac, CodeMalformedSignature},
		{"two t", ts + "," + ts + ",v1=" + mac, CodeMalformedSignature},
		{"empty t", "t=,v1=" + mac, CodeMalformedSignature},
		{"t decimal", "t=1767225600000.0,v1=" + mac, CodeMalformedSignature},
		{"t hex", "t=0x1A,v1=" + mac, CodeMalformedSignature},
		{"t plus", "t=+1767225600000,v1=" + mac, CodeMalformedSignature},
		{"t with underscore", "t=1_767_225_600_000,v1=" + mac, CodeMalformedSignature},
		{"t overflow", "t=99999999999999999999,v1=" + mac, CodeMalformedSignature},
		{"t overflow in 19 digits", "t=9999999999999999999,v1=" + mac, CodeMalformedSignature}, // the one-pass parser reads 18 at most: 19 would wrap
		{"t word", "t=now,v1=" + mac, CodeMalformedSignature},
		{"no v1", ts, CodeMalformedSignature},
		{"only v0", ts + ",v0=" + mac, CodeMalformedSignature},
		{"only v2", ts + ",v2=" + mac, CodeMalformedSignature},
		{"V1 upper-case name", ts + ",V1=" + mac, CodeMalformedSignature},
		{"empty v1", ts + ",v1=", CodeMalformedSignature},
		{"v1 63 hex", ts + ",v1=" + mac[:63], CodeMalformedSignature},
		{"v1 65 hex", ts + ",v1=" + mac + "a", CodeMalformedSignature},
		{"v1 not hex", ts + ",v1=" + strings.Repeat("gg", 32), CodeMalformedSignature},
		{"one bad v1 among good", ts + ",v1=" + mac + ",v1=xyz", CodeMalformedSignature},
		{"entry without =", ts + ",v1=" + mac + ",garbage", CodeMalformedSignature},
		{"empty entry", ts + ",,v1=" + mac, CodeMalformedSignature},
		{"trailing comma", ts + ",v1=" + mac + ",", CodeMalformedSignature},
		{"semicolons", ts + ";v1=" + mac, CodeMalformedSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseSignature(tt.header)
			require.ErrorIs(t, err, tt.want)
			assert.NotEmpty(t, errorCode(err))
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
		{"19-digit t", "t=9223372036854775807,v1=" + a, math.MaxInt64, 1},
		{"18-digit t", "t=999999999999999999,v1=" + a, 999999999999999999, 1},
		{"surrounding spaces", "  t=5,v1=" + a + "  ", 5, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sig, err := parseSignature(tt.header)
			require.NoError(t, err)
			assert.Equal(t, tt.ts, sig.timestamp)
			assert.Equal(t, tt.v1, 1+len(sig.more), "number of v1 entries")
		})
	}
}

func TestCheckTimeBothDirections(t *testing.T) {
	now := testNow
	tol := defaultTolerance.Milliseconds()
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
			sig, err := parseSignature("t=" + strconv.FormatInt(tt.t, 10) + ",v1=" + strings.Repeat("0", 64))
			require.NoError(t, err)
			err = sig.checkTime(now, defaultTolerance)
			if !tt.stale {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, CodeStaleTimestamp)
			assert.Equal(t, CodeStaleTimestamp, errorCode(err))
		})
	}
	sig, _ := parseSignature("t=" + strconv.FormatInt(now.Unix(), 10) + ",v1=" + strings.Repeat("0", 64))
	assert.Contains(t, sig.checkTime(now, defaultTolerance).Error(), "seconds", "the error points at the usual mistake")
}

// TestFreshnessThroughServe uses Config.Now and Config.Tolerance.
func TestFreshnessThroughServe(t *testing.T) {
	for _, tt := range []struct {
		name      string
		tolerance time.Duration
		signedAt  time.Duration // relative to the server clock
		want      Code          // "" for the report: accepted
	}{
		{"default, 5 min past", 0, -5 * time.Minute, ""},
		{"default, 5 min 1 ms past", 0, -5*time.Minute - time.Millisecond, CodeStaleTimestamp},
		{"default, 5 min future", 0, 5 * time.Minute, ""},
		{"default, 5 min 1 ms future", 0, 5*time.Minute + time.Millisecond, CodeStaleTimestamp},
		{"30 s tolerance, 31 s past", 30 * time.Second, -31 * time.Second, CodeStaleTimestamp},
		{"30 s tolerance, 31 s future", 30 * time.Second, 31 * time.Second, CodeStaleTimestamp},
		{"30 s tolerance, 29 s past", 30 * time.Second, -29 * time.Second, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			serverNow := testNow.Add(time.Hour)
			h, _ := newHandler(t, Config{Tolerance: tt.tolerance, Now: func() time.Time { return serverNow }})
			resp := h.Serve(context.Background(), diagnosticsAt(testKey, serverNow.Add(tt.signedAt)))
			if tt.want == "" {
				requireReport(t, resp)
				return
			}
			requireError(t, resp, tt.want.status(), tt.want)
		})
	}
}

func TestVerifyMAC(t *testing.T) {
	k := mustParseKey(testKey)
	body := []byte(`{"op":"diagnostics"}`)
	sig, err := parseSignature(k.Sign(testNow, body))
	require.NoError(t, err)
	require.NoError(t, sig.verify(body, k))
	require.NoError(t, sig.verify(body, mustParseKey(otherKey), k), "any key may match")
	for name, err := range map[string]error{
		"tampered body": sig.verify([]byte(`{"op":"diagnostics"} `), k),
		"wrong key":     sig.verify(body, mustParseKey(otherKey)),
		"no key":        sig.verify(body),
		"empty body":    sig.verify(nil, k),
	} {
		require.ErrorIs(t, err, CodeInvalidSignature, name)
		assert.Equal(t, CodeInvalidSignature, errorCode(err), name)
	}
	// t is part of the signed string, exactly as sent.
	h := k.Sign(testNow, body)
	shifted, err := parseSignature("t=0" + strings.TrimPrefix(h, "t="))
	require.NoError(t, err)
	require.ErrorIs(t, shifted.verify(body, k), CodeInvalidSignature)
}

// allCodes are the codes of PROTOCOL.md §7.
var allCodes = []Code{
	CodeExecutionFailed, CodeDiagnosticsUnsupported, CodeInvalidBody, CodeUnknownOp,
	CodeInvalidInput, CodeMissingSignature, CodeMalformedSignature, CodeStaleTimestamp,
	CodeInvalidSignature, CodeUnknownTool, CodeMethodNotAllowed, CodeMissingSecret,
	CodeInvalidMedianKey,
}

func TestCodesAndErrors(t *testing.T) {
	statuses := map[Code]int{
		CodeExecutionFailed: 200, CodeDiagnosticsUnsupported: 200, CodeInvalidBody: 400, CodeUnknownOp: 400,
		CodeInvalidInput: 400, CodeMissingSignature: 401, CodeMalformedSignature: 401, CodeStaleTimestamp: 401,
		CodeInvalidSignature: 401, CodeUnknownTool: 404, CodeMethodNotAllowed: 405, CodeMissingSecret: 500,
		CodeInvalidMedianKey: 500,
	}
	require.Len(t, statuses, 13)
	for _, c := range allCodes {
		assert.Equal(t, statuses[c], c.status(), c)
		e := newError(c, "why")
		assert.Equal(t, statuses[c], e.Status)
		assert.ErrorIs(t, e, c, "errors.Is finds the code of an *Error")
		assert.ErrorIs(t, fmt.Errorf("wrapped: %w", e), c)
		assert.Equal(t, string(c)+": why", e.Error())
		assert.Equal(t, c, errorCode(errors.Join(errors.New("x"), e)))
		for _, other := range allCodes {
			if other != c {
				assert.NotErrorIs(t, e, other)
			}
		}
	}
	assert.Equal(t, Code(""), errorCode(nil))
	assert.Equal(t, Code(""), errorCode(errors.New("other")))
	assert.Equal(t, CodeExecutionFailed, asError(errors.New("boom")).Code)
}

func TestVerifySignatureIsTheWholeCheck(t *testing.T) {
	k := mustParseKey(testKey)
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
		{"missing", "", body, testNow, CodeMissingSignature},
		{"malformed", "t=1,v1=zz", body, testNow, CodeMalformedSignature},
		{"stale", good, body, testNow.Add(defaultTolerance + time.Millisecond), CodeStaleTimestamp},
		{"tampered body", good, []byte(`{"op":"diagnostic"}`), testNow, CodeInvalidSignature},
		{"wrong key", mustParseKey(otherKey).Sign(testNow, body), body, testNow, CodeInvalidSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifySignature(tt.header, tt.body, tt.now, defaultTolerance, k)
			if tt.want == nil {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, tt.want)
		})
	}
	t.Run("no allocation when good", func(t *testing.T) {
		if boringCrypto {
			t.Skip("BoringCrypto's HMAC allocates its state; the results above are checked all the same")
		}
		requireNoAllocation(t, k, func() {
			if err := VerifySignature(good, body, testNow, defaultTolerance, k); err != nil {
				t.Fatal(err)
			}
		})
	})
}

// requireNoAllocation fails unless check, which verifies under k,
// allocates nothing but the crypto/hmac states k's pool makes when it is
// empty. Without -race, once the pool holds a state, that is nothing at
// all; under -race, sync.Pool drops a quarter of what it is given, on
// purpose, so the pool makes states again, and their allocations are
// allowed. As testing.AllocsPerRun, it reads the allocations per check,
// rounded down, so that one made by the runtime or another goroutine
// during the run does not count, and one per check does. A garbage
// collection empties every pool, which then makes its per-processor array
// again: a run during which one happened is run again.
func requireNoAllocation(t *testing.T, k Key, check func()) {
	t.Helper()
	makeState := k.st.macs.New
	perState := int(testing.AllocsPerRun(10, func() { _ = makeState() }))
	require.Positive(t, perState, "a crypto/hmac state is allocated")
	made := 0
	k.st.macs.New = func() any { made++; return makeState() }
	defer func() { k.st.macs.New = makeState }()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // as testing.AllocsPerRun: no other goroutine's allocations
	const runs = 200
	for range 5 {
		check() // the pool holds a state
		made = 0
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			check()
		}
		runtime.ReadMemStats(&after)
		if after.NumGC != before.NumGC {
			continue
		}
		if !raceEnabled {
			require.Zero(t, made, "the pool kept its state")
		}
		mallocs, states := after.Mallocs-before.Mallocs, uint64(made*perState)
		require.GreaterOrEqual(t, mallocs, states, "the states the pool made are counted")
		require.Zero(t, (mallocs-states)/runs,
			"%d checks allocated %d times besides the %d states the pool made (%d allocations each)", runs, mallocs-states, made, perState)
		return
	}
	t.Fatal("a garbage collection ran during each of 5 runs of the checks")
}

// TestMalformedSignatureQuotesAShortPrefix: a refused entry or t is quoted
// in the error only up to its first 16 (entry) or 24 (t) characters, so a
// long header cannot fill the answer or the log.
func TestMalformedSignatureQuotesAShortPrefix(t *testing.T) {
	mac := strings.Repeat("ab", 32)
	_, err := parseSignature("t=5,v1=" + mac + ",abcdefghijklmnopqrstuvwxyz")
	require.ErrorIs(t, err, CodeMalformedSignature)
	assert.Contains(t, err.Error(), `entry "abcdefghijklmnop…" is not name=value`)
	_, err = parseSignature("t=abcdefghijklmnopqrstuvwxyz,v1=" + mac)
	require.ErrorIs(t, err, CodeMalformedSignature)
	assert.Contains(t, err.Error(), `t="abcdefghijklmnopqrstuvwx…" is not a base-10 integer`)
}

// TestStaleHintForSeconds: a stale t that would be a plausible time in
// seconds (above 0, below 10^11) gets the hint that t is milliseconds;
// t=0 and a t of 10^11 or more do not.
func TestStaleHintForSeconds(t *testing.T) {
	now := time.UnixMilli(1767225600000)
	for ts, hint := range map[string]bool{"0": false, "1": true, "1767225600": true, "99999999999": true, "100000000000": false, "-5": false} {
		sig, err := parseSignature("t=" + ts + ",v1=" + hex64)
		require.NoError(t, err)
		err = sig.checkTime(now, defaultTolerance)
		require.ErrorIs(t, err, CodeStaleTimestamp, ts)
		assert.Equal(t, hint, strings.Contains(err.Error(), "t looks like seconds"), "t=%s: %v", ts, err)
	}
}

// TestStaleMessageDurations: the stale answer's "how far" is a duration,
// or "more than 100 years" past what a time.Duration holds.
func TestStaleMessageDurations(t *testing.T) {
	const limit = int64(1<<62) / int64(time.Millisecond)
	assert.Equal(t, "0s", msDuration(0))
	assert.Equal(t, "1ms", msDuration(1))
	assert.Equal(t, (time.Duration(limit) * time.Millisecond).String(), msDuration(limit))
	assert.NotContains(t, msDuration(limit), "years")
	assert.Equal(t, "more than 100 years", msDuration(limit+1))
	assert.Equal(t, "more than 100 years", msDuration(math.MaxInt64))
	assert.Equal(t, "more than 100 years", msDuration(-1))
}
