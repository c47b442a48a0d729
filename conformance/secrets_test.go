package conformance_test

import (
	"bytes"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/internal/testonly/testsupport"
	"github.com/median-go/median/protocol"
)

// TestNoSecretsAcrossTheConformanceRun runs the whole suite against the core
// with Debug logging and checks that no answer and no log line carries the
// key, its derived secret or any MAC the server computed for the requests
// it received (docs/PROTOCOL.md §7: answers never carry them).
func TestNoSecretsAcrossTheConformanceRun(t *testing.T) {
	logs := &testsupport.Buffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := newHandler(t, testKey, func(cfg *protocol.Config) { cfg.Logger = logger })

	var (
		mu      sync.Mutex
		answers []string
		macs    []string
	)
	key, err := protocol.ParseKey(testKey)
	require.NoError(t, err)
	inner := inProcess(mux(h))
	target := fixtureTarget(t, mux(h))
	target.Do = func(r *http.Request) (*http.Response, error) {
		var body []byte
		if r.Body != nil {
			body, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		// The MAC the server computes for this request: the sender's t over
		// the body as received, under the server's key.
		if ts, ok := timestampOf(r.Header.Get("median-signature")); ok {
			sig := key.Sign(time.UnixMilli(ts), body)
			mu.Lock()
			macs = append(macs, sig[strings.Index(sig, "v1=")+3:])
			mu.Unlock()
		}
		resp, err := inner(r)
		if err == nil {
			answer, _ := io.ReadAll(resp.Body)
			resp.Body = io.NopCloser(bytes.NewReader(answer))
			mu.Lock()
			answers = append(answers, string(answer))
			mu.Unlock()
		}
		return resp, err
	}

	rep, err := conformance.Check(t.Context(), target, conformance.Options{})
	require.NoError(t, err)
	require.NoError(t, rep.Err())
	require.NotEmpty(t, macs)

	// The secret, derived as docs/PROTOCOL.md §1.2 says.
	secret, err := hkdf.Key(sha256.New, []byte(testKey), nil, "median tool signing v1", 32)
	require.NoError(t, err)
	forbidden := []string{testKey, hex.EncodeToString(secret), strings.ToUpper(hex.EncodeToString(secret)), base64.StdEncoding.EncodeToString(secret)}
	for _, m := range macs {
		forbidden = append(forbidden, m, strings.ToUpper(m))
	}
	logText := logs.String()
	require.NotEmpty(t, logText, "the run logged nothing: the check would prove nothing")
	for _, f := range forbidden {
		assert.NotContains(t, logText, f)
		for _, a := range answers {
			assert.NotContains(t, a, f)
		}
	}
	assert.NotContains(t, logText, `"secret"`)
}

// timestampOf returns the t= entry of a median-signature header.
func timestampOf(header string) (int64, bool) {
	for part := range strings.SplitSeq(header, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "t="); ok {
			ts, err := strconv.ParseInt(v, 10, 64)
			return ts, err == nil
		}
	}
	return 0, false
}
