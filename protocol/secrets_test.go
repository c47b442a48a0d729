package protocol

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoSecretLeaks runs many valid and invalid requests with a Debug
// logger and checks that no answer and no log line contains a key, a
// derived secret or any MAC the server computed.
func TestNoSecretLeaks(t *testing.T) {
	log, logs := newLogger()
	h, err := New(Config{
		Keys:   []string{" " + testKey + " ", otherKey},
		Now:    func() time.Time { return testNow },
		Logger: log,
		Tools: []*Tool{
			echoTool(nil),
			fnTool("fail", func(context.Context) (any, error) { return nil, errors.New("backend failed") }),
			fnTool("boom", func(context.Context) (any, error) { panic("boom") }),
		},
		Diagnostics:  func(ctx context.Context) (any, error) { return map[string]any{"ok": true}, nil },
		MaxBodyBytes: 4096,
	})
	require.NoError(t, err)
	keys := []Key{MustParseKey(testKey), MustParseKey(otherKey)}
	wrong := MustParseKey("mk_wrong_key_000000000000000000000000000")

	forbidden := []string{testKey, otherKey}
	for _, k := range keys {
		forbidden = append(forbidden, hex.EncodeToString(k.secret), strings.ToUpper(hex.EncodeToString(k.secret)))
	}

	bodies := []string{
		toolCall("echo", "s1", `{"orderId":1}`), toolCall("echo", "s1", `{"orderId":1}`), toolCall("echo", "s1", `{"orderId":2}`),
		toolCall("echo", "s2", `{}`), toolCall("fail", "s3", `{}`), toolCall("boom", "s4", `{}`), toolCall("nope", "s5", `{}`),
		`{"op":"diagnostics"}`, `{"op":"x"}`, `not json`, ``, strings.Repeat("x", 5000),
	}
	var answers bytes.Buffer
	serve := func(req Request) {
		resp := h.Serve(context.Background(), req)
		answers.Write(resp.Body)
		answers.WriteByte('\n')
	}
	for i, body := range bodies {
		b := []byte(body)
		at := testNow.Add(time.Duration(i) * time.Second)
		ts := strconv.FormatInt(at.UnixMilli(), 10)
		// The MACs the server computes for this body and t, under each key.
		for _, k := range keys {
			mac := hex.EncodeToString(k.mac(ts, b))
			forbidden = append(forbidden, mac)
		}
		for _, sig := range []string{
			keys[0].Sign(at, b),                          // valid
			keys[1].Sign(at, b),                          // valid under the second key
			wrong.Sign(at, b),                            // invalid signature
			keys[0].Sign(at.Add(-time.Hour), b),          // stale
			"t=" + ts + ",v1=" + strings.Repeat("0", 63), // malformed
			"", // missing
		} {
			serve(Request{Method: http.MethodPost, Signature: sig, BodyBytes: b, ContentLength: int64(len(b))})
			serve(Request{Method: http.MethodPost, Signature: sig, Body: bytes.NewReader(b), ContentLength: -1})
		}
	}
	serve(get())
	serve(Request{Method: http.MethodGet, Signature: wrong.Sign(testNow, nil)})
	serve(Request{Method: http.MethodPut})
	forbidden = append(forbidden, hex.EncodeToString(keys[0].mac(strconv.FormatInt(testNow.UnixMilli(), 10), nil)))

	out := logs.String()
	require.NotEmpty(t, out)
	assert.Contains(t, out, `"level":"DEBUG"`, "debug lines were captured")
	require.Contains(t, answers.String(), `"result"`, "some requests succeeded")
	for _, s := range forbidden {
		assert.NotContains(t, answers.String(), s)
		assert.NotContains(t, out, s)
	}
	// The Handler's own accessors show fingerprints only.
	for _, fp := range h.Keys() {
		assert.Regexp(t, `^mk_[0-9a-f]{12}$`, fp)
	}
}
