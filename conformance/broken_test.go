package conformance_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

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
		key, _ := protocol.ParseKey(testKey)
		r.Header.Set("median-signature", key.Sign(time.Now(), body))
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
func plainNotFound(next http.Handler, known []string) http.Handler {
	names := map[string]bool{}
	for _, n := range known {
		names[n] = true
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

// rewrite is a broken handler that passes each answer of next through edit
// (which may change its status, headers and body) before writing it.
func rewrite(next http.Handler, edit func(r *http.Request, body []byte, rec *httptest.ResponseRecorder)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		edit(r, body, rec)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// serverMAC is the MAC a server with testKey computes for r and body.
func serverMAC(r *http.Request, body []byte) string {
	ts, ok := timestampOf(r.Header.Get("median-signature"))
	if !ok {
		return ""
	}
	k, err := protocol.ParseKey(testKey)
	if err != nil {
		panic(err)
	}
	_, mac, _ := strings.Cut(k.Sign(time.UnixMilli(ts), body), ",v1=")
	return mac
}

// leakMAC is a broken handler that puts the MAC it computed into the
// message of its answers with code, through show.
func leakMAC(next http.Handler, code protocol.Code, show func(mac string) string) http.Handler {
	return rewrite(next, func(r *http.Request, body []byte, rec *httptest.ResponseRecorder) {
		if !strings.Contains(rec.Body.String(), `"code":"`+string(code)+`"`) {
			return
		}
		msg, _ := json.Marshal("signature check: " + show(serverMAC(r, body)))
		rec.Body.Reset()
		fmt.Fprintf(rec.Body, `{"error":{"code":%q,"message":%s}}`, code, msg)
	})
}

// exactMount is a broken app that mounts the endpoint at mountPath only:
// a request to mountPath + "/" gets the router's 404 page.
func exactMount(h http.Handler) http.Handler {
	m := http.NewServeMux()
	m.Handle(mountPath, h)
	return m
}

// callOf decodes a POST body that is a ToolCall, or returns nil.
func callOf(r *http.Request, body []byte) map[string]any {
	var c map[string]any
	if r.Method != http.MethodPost || json.Unmarshal(body, &c) != nil {
		return nil
	}
	if _, ok := c["context"].(map[string]any); !ok {
		return nil
	}
	return c
}

// runAnyway is a broken server with no risk floor (docs/PROTOCOL.md §9): it
// runs every well-signed call, whatever its risk and approval, by raising
// the call to high, approved, and signing it again before the core sees it.
func runAnyway(next http.Handler) http.Handler {
	key, _ := protocol.ParseKey(testKey)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if c := callOf(r, body); c != nil && serverMAC(r, body) != "" && strings.HasSuffix(r.Header.Get("median-signature"), serverMAC(r, body)) {
			ctx := c["context"].(map[string]any)
			ctx["risk"] = "high"
			if _, ok := ctx["approvedBy"]; !ok {
				ctx["approvedBy"] = "A teammate"
			}
			body, _ = json.Marshal(c)
			r.Header.Set("median-signature", key.Sign(time.Now(), body))
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// floorRefusal is the answer of the risk floor (§9).
const floorRefusal = `{"result":{"ok":false,"allowed":false,"outcome":"blocked","reason":"approval_required","detail":"A teammate must approve this first."}}`

// refuseIf is a broken risk floor: it answers floorRefusal to every call
// for which refuse, given the tool's declared risk and the call's context,
// holds.
func refuseIf(next http.Handler, refuse func(declared protocol.Risk, ctx map[string]any) bool) http.Handler {
	declared := fixtureRisks
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if c := callOf(r, body); c != nil {
			name, _ := c["tool"].(string)
			if risk, ok := declared[name]; ok && refuse(risk, c["context"].(map[string]any)) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, floorRefusal)
				return
			}
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
				"manifest/unsigned-get":   "got status 200 and no error, where the contract answers 401 missing_signature",
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
				return mux(plainNotFound(newHandler(t, testKey, nil), fixtureNames))
			},
			fails: map[string]string{
				"routing/unknown-tool": "the answer is not a JSON object: 404 page not found",
				"format/content-type":  "text/plain",
				"format/envelope":      "not a JSON object",
				"signature/valid":      "should have passed the signature checks and reached the tool lookup",
			},
			passes: []string{"methods/put", "execution/result", "input/invalid"},
		},
		{
			// One wrong Content-Type fails format/content-type alone: the
			// envelope is right, and the status it hid is still checked.
			name: "answers unknown_tool 400 as text/plain",
			build: func(t *testing.T) http.Handler {
				return mux(rewrite(newHandler(t, testKey, nil), func(_ *http.Request, _ []byte, rec *httptest.ResponseRecorder) {
					if rec.Code == http.StatusNotFound {
						rec.Code = http.StatusBadRequest
						rec.Header().Set("Content-Type", "text/plain; charset=utf-8")
					}
				}))
			},
			fails: map[string]string{
				"format/content-type":        `answered 400 with Content-Type "text/plain; charset=utf-8"`,
				"format/status-matches-code": "code unknown_tool came with status 400",
			},
			passes: []string{"format/envelope", "methods/put", "execution/result"},
		},
		{
			name: "runs a replay twice",
			build: func(t *testing.T) http.Handler {
				return mux(newHandler(t, testKey, func(c *protocol.Config) { c.DisableReplayProtection = true }))
			},
			fails: map[string]string{
				"replay/identical-answer": "the tool ran again",
				"replay/conflict":         "got status 200 and no error, where the contract answers 409 invalid_body",
			},
			passes: []string{"execution/result", "concurrency/parallel", "signature/valid"},
		},
		{
			name:  "404s on the mount path with a trailing slash",
			build: func(t *testing.T) http.Handler { return exactMount(newHandler(t, testKey, nil)) },
			fails: map[string]string{
				"routing/trailing-slash": "at http://example.test/api/median/, the mount path with the slash toggled",
			},
			passes: []string{"routing/unknown-tool", "signature/valid", "execution/result"},
		},
		{
			name: "shows the MAC it computed in invalid_signature answers",
			build: func(t *testing.T) http.Handler {
				return mux(leakMAC(newHandler(t, testKey, nil), protocol.CodeInvalidSignature, func(mac string) string { return "expected v1=" + strings.ToUpper(mac) }))
			},
			fails: map[string]string{
				"signature/no-mac-in-answer": "the answer carries the MAC the server computed for this request",
				// Every case's answers are checked, not only the one case's.
				"signature/wrong-key":         "carries the MAC",
				"signature/timestamp-changed": "carries the MAC",
				"manifest/wrong-key-get":      "carries the MAC",
				"signature/reencoded-body":    "carries the MAC",
				"signature/tampered-body":     "carries the MAC",
			},
			passes: []string{"signature/valid", "signature/missing", "execution/result"},
		},
		{
			name: "shows the MAC it computed in a header of unknown_tool answers",
			build: func(t *testing.T) http.Handler {
				return mux(rewrite(newHandler(t, testKey, nil), func(r *http.Request, body []byte, rec *httptest.ResponseRecorder) {
					if rec.Code == http.StatusNotFound {
						raw, _ := hex.DecodeString(serverMAC(r, body))
						rec.Header().Set("X-Debug-Mac", base64.StdEncoding.EncodeToString(raw))
					}
				}))
			},
			fails: map[string]string{
				"routing/unknown-tool": "the answer carries the MAC the server computed for this request",
				"signature/valid":      "carries the MAC",
			},
			passes: []string{"signature/no-mac-in-answer", "signature/wrong-key", "execution/result"},
		},
		{
			name:  "runs a tool below its declared risk or without approval (no risk floor)",
			build: func(t *testing.T) http.Handler { return mux(runAnyway(newHandler(t, testKey, nil))) },
			fails: map[string]string{
				"risk/below-declared": "tool refund (declared high) called at low: the tool ran; docs/PROTOCOL.md §9: such a call is not run",
				"risk/unapproved":     "tool refund (declared high) called at high without approvedBy: the tool ran",
			},
			passes: []string{"risk/approved-runs", "risk/higher-runs", "execution/result", "replay/identical-answer"},
		},
		{
			name: "refuses approved calls at the declared risk (a floor that never lets through)",
			build: func(t *testing.T) http.Handler {
				return mux(refuseIf(newHandler(t, testKey, nil), func(declared protocol.Risk, _ map[string]any) bool { return declared != protocol.RiskLow }))
			},
			fails: map[string]string{
				"risk/approved-runs": "tool refund called at its declared risk high with approvedBy: refused approval_required",
				"execution/result":   "risk floor",
			},
			passes: []string{"risk/below-declared", "risk/unapproved"},
		},
		{
			name: "refuses calls above the declared risk (a floor that is an exact match)",
			build: func(t *testing.T) http.Handler {
				return mux(refuseIf(newHandler(t, testKey, nil), func(declared protocol.Risk, ctx map[string]any) bool { return ctx["risk"] != string(declared) }))
			},
			fails: map[string]string{
				"risk/higher-runs": "tool counter (declared low) called at medium with approvedBy: refused approval_required",
			},
			passes: []string{"risk/below-declared", "risk/approved-runs"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := fixtureTarget(t, tt.build(t))
			target.Skip = nil // every case runs against a broken handler
			rep, err := conformance.Check(t.Context(), target, conformance.Options{})
			require.NoError(t, err)
			require.False(t, (rep.Err() == nil), "the suite passed a broken handler")
			for id, want := range tt.fails {
				res, ok := verdict(rep, id)
				require.True(t, ok, "case %s did not run", id)
				require.Equal(t, "fail", res.Status, "case %s should fail: %s", id, res)
				assert.Contains(t, res.String(), want, "case %s", id)
				assert.NotEmpty(t, res.Expected, "case %s", id)
				assert.Contains(t, rep.Err().Error(), id)
			}
			for _, id := range tt.passes {
				res, ok := verdict(rep, id)
				require.True(t, ok, "case %s did not run", id)
				assert.Equal(t, "pass", res.Status, "case %s should still pass: %s", id, res)
			}
		})
	}
}

// TestRefusalCaseChecksTheContractAndNoMore: execution/refusal accepts every
// refusal docs/PROTOCOL.md §3.1 allows, the product page's own example
// (no outcome) first, and fails each that breaks it.
func TestRefusalCaseChecksTheContractAndNoMore(t *testing.T) {
	tests := []struct {
		refusal string
		fails   string // "" when the case must pass
	}{
		{`{"ok":false,"reason":"not_signed_in","detail":"Sign in to see orders."}`, ""},
		{`{"ok":false,"known":false,"allowed":false,"outcome":"blocked","reason":"not_signed_in","detail":"Sign in."}`, ""},
		{`{"known":false,"outcome":"unknown"}`, ""},
		{`{"allowed":false}`, ""},
		{`{"outcome":"blocked","reason":"closed"}`, ""},
		{`{"ok":true,"reason":"not_signed_in"}`, `"ok" in a refusal is only ever false, got true`},
		{`{"ok":false,"allowed":null}`, `"allowed" in a refusal is only ever false, got null`},
		{`{"ok":false,"outcome":"denied"}`, `a refusal's outcome is "blocked" or "unknown", got "denied"`},
		{`{"reason":"not_signed_in","detail":"Sign in."}`, "a refusal carries ok, known or allowed set to false, or an outcome"},
		{`{"ok":false,"reason":""}`, "a refusal's reason must be a short non-empty string code"},
		{`{"ok":false,"detail":5}`, "a refusal's detail must be a string"},
		{`"no"`, "a refusal must be a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.refusal, func(t *testing.T) {
			h := rewrite(newHandler(t, testKey, nil), func(_ *http.Request, _ []byte, rec *httptest.ResponseRecorder) {
				if strings.Contains(rec.Body.String(), `"reason":"not_signed_in"`) {
					rec.Body.Reset()
					rec.Body.WriteString(`{"result":` + tt.refusal + `}`)
				}
			})
			target := conformance.HandlerTarget(mux(h), mountPath, testKey)
			target.Tools = []conformance.ToolSample{{Tool: "refuse", Expect: "refusal"}}
			rep, err := conformance.Check(t.Context(), target, conformance.Options{Run: "^execution/refusal$"})
			require.NoError(t, err)
			res := rep.Verdicts[0]
			if tt.fails == "" {
				assert.Equal(t, "pass", res.Status, "%s", res)
				return
			}
			assert.Equal(t, "fail", res.Status)
			assert.Contains(t, res.Message, tt.fails)
		})
	}
}

// TestActualCutsWholeCharacters: a long answer is shown in a failure cut
// to whole characters, never half of one.
func TestActualCutsWholeCharacters(t *testing.T) {
	h := rewrite(newHandler(t, testKey, nil), func(_ *http.Request, _ []byte, rec *httptest.ResponseRecorder) {
		if strings.Contains(rec.Body.String(), `"reason":"not_signed_in"`) {
			rec.Body.Reset()
			rec.Body.WriteString("x" + strings.Repeat("é", 400)) // one byte, then two-byte characters: byte 300 falls inside one
		}
	})
	target := conformance.HandlerTarget(mux(h), mountPath, testKey)
	target.Tools = []conformance.ToolSample{{Tool: "refuse", Expect: "refusal"}}
	rep, err := conformance.Check(t.Context(), target, conformance.Options{Run: "^execution/refusal$"})
	require.NoError(t, err)
	v := rep.Verdicts[0]
	require.Equal(t, "fail", v.Status)
	assert.True(t, utf8.ValidString(v.Actual), "%q", v.Actual)
	assert.True(t, strings.HasSuffix(v.Actual, " x"+strings.Repeat("é", 299)+"…"), "cut to 300 characters: %q", v.Actual)
}
