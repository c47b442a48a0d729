package conformance_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/protocol"
)

// resign is a broken handler that skips the signature check: it signs
// every request itself before passing it on.
func resign(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		sig, _ := protocol.Sign(testKey, time.Now(), body)
		r.Header.Set(protocol.SignatureHeader, sig)
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// statusRewriter is a broken handler that answers from one status with another.
func statusRewriter(next http.Handler, from, to int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		if rec.Code == from {
			rec.Code = to
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// plainNotFound is a broken handler that routes tools itself and leaks
// net/http's text 404 for unknown ones.
func plainNotFound(next http.Handler, known []*protocol.Tool) http.Handler {
	names := map[string]bool{}
	for _, t := range known {
		names[t.Name()] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var peek struct {
			Tool *string `json:"tool"`
		}
		if r.Method == http.MethodPost && json.Unmarshal(body, &peek) == nil && peek.Tool != nil && !names[*peek.Tool] {
			http.NotFound(w, r)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

func TestSuiteFailsOnBrokenHandlers(t *testing.T) {
	tests := []struct {
		name string
		// build returns the broken endpoint (mounted at mountPath).
		build func(t *testing.T) http.Handler
		// fails lists the cases that must fail, with a word their
		// message or actual answer must contain.
		fails map[string]string
		// passes lists cases that must still pass.
		passes []string
	}{
		{
			name: "accepts stale timestamps",
			build: func(t *testing.T) http.Handler {
				return mux(newHandler(t, testKey, func(c *protocol.Config) { c.Tolerance = 100 * time.Hour }))
			},
			fails: map[string]string{
				"timestamp/past":   "unknown_tool instead of 401 stale_timestamp",
				"timestamp/future": "unknown_tool instead of 401 stale_timestamp",
			},
			passes: []string{"timestamp/seconds", "timestamp/edge-past", "signature/missing", "execution/result"},
		},
		{
			name:  "skips the signature check",
			build: func(t *testing.T) http.Handler { return mux(resign(newHandler(t, testKey, nil))) },
			fails: map[string]string{
				"signature/missing":       "instead of 401 missing_signature",
				"signature/wrong-key":     "instead of 401 invalid_signature",
				"signature/tampered-body": "invalid_signature",
				"manifest/unsigned-get":   "the request was accepted (status 200) instead of refused with 401 missing_signature",
			},
			passes: []string{"signature/valid", "body/not-json", "execution/result", "replay/identical-answer"},
		},
		{
			name: "answers 401 refusals as 403",
			build: func(t *testing.T) http.Handler {
				return mux(statusRewriter(newHandler(t, testKey, nil), http.StatusUnauthorized, http.StatusForbidden))
			},
			fails: map[string]string{
				"signature/missing":          "code missing_signature came with status 403 instead of 401",
				"timestamp/past":             "status 403 instead of 401",
				"format/status-matches-code": "came with status 403",
			},
			passes: []string{"methods/put", "body/oversized", "execution/refusal"},
		},
		{
			name: "leaks a non-JSON 404 for unknown tools",
			build: func(t *testing.T) http.Handler {
				return mux(plainNotFound(newHandler(t, testKey, nil), conformance.FixtureTools()))
			},
			fails: map[string]string{
				"routing/unknown-tool": "the answer is not a JSON object: 404 page not found",
				"format/content-type":  "text/plain",
				"format/envelope":      "not a JSON object",
				"signature/valid":      "did not accept it",
			},
			passes: []string{"methods/put", "execution/result", "input/invalid"},
		},
		{
			name: "runs a replay twice",
			build: func(t *testing.T) http.Handler {
				return mux(newHandler(t, testKey, func(c *protocol.Config) { c.DisableReplayProtection = true }))
			},
			fails: map[string]string{
				"replay/identical-answer": "the tool ran again",
				"replay/conflict":         "the request was accepted (status 200) instead of refused with 409 invalid_body",
			},
			passes: []string{"execution/result", "concurrency/parallel", "signature/valid"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := fixtureTarget(t, tt.build(t))
			rep, err := conformance.Check(t.Context(), target, conformance.Options{})
			require.NoError(t, err)
			require.False(t, rep.Passed(), "the suite passed a broken handler")
			for id, want := range tt.fails {
				res, ok := rep.Result(id)
				require.True(t, ok, "case %s did not run", id)
				require.Equal(t, conformance.StatusFail, res.Status, "case %s should fail: %s", id, res)
				assert.Contains(t, res.String(), want, "case %s", id)
				assert.NotEmpty(t, res.Expected, "case %s", id)
				assert.Contains(t, rep.Err().Error(), id)
			}
			for _, id := range tt.passes {
				res, ok := rep.Result(id)
				require.True(t, ok, "case %s did not run", id)
				assert.Equal(t, conformance.StatusPass, res.Status, "case %s should still pass: %s", id, res)
			}
		})
	}
}
