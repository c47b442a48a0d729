package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/protocol"
)

// editReport is a broken handler that passes the diagnostics report of
// next through edit before answering it.
func editReport(next http.Handler, edit func(report map[string]any)) http.Handler {
	return rewrite(next, func(r *http.Request, body []byte, rec *httptest.ResponseRecorder) {
		if string(body) != `{"op":"diagnostics"}` || rec.Code != http.StatusOK {
			return
		}
		var a struct{ Result map[string]any }
		if json.Unmarshal(rec.Body.Bytes(), &a) != nil || a.Result == nil {
			return
		}
		edit(a.Result)
		out, _ := json.Marshal(map[string]any{"result": a.Result})
		rec.Body.Reset()
		rec.Body.Write(out)
	})
}

// rememberVisitor is a broken handler that copies the last visitor email
// it saw into the report's app entry.
func rememberVisitor(next http.Handler) http.Handler {
	var mu sync.Mutex
	var email string
	seen := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var c struct {
			Context struct{ Visitor struct{ Email string } }
		}
		if json.Unmarshal(body, &c) == nil && c.Context.Visitor.Email != "" {
			mu.Lock()
			email = c.Context.Visitor.Email
			mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
	return editReport(seen, func(report map[string]any) {
		mu.Lock()
		defer mu.Unlock()
		report["app"] = map[string]any{"lastVisitor": email}
	})
}

func checkDiagnostics(t *testing.T, h http.Handler) conformance.Report {
	t.Helper()
	target := fixtureTarget(t, mux(h))
	rep, err := conformance.Check(t.Context(), target, conformance.Options{Run: "^diagnostics/"})
	require.NoError(t, err)
	require.Len(t, rep.Verdicts, 5)
	return rep
}

// TestDiagnosticsCasesPassTheCore: the report the core answers passes
// every §10 case.
func TestDiagnosticsCasesPassTheCore(t *testing.T) {
	rep := checkDiagnostics(t, newHandler(t, testKey, nil))
	for _, res := range rep.Verdicts {
		assert.Equal(t, "pass", res.Status, "%s", res)
	}
}

// TestDiagnosticsCasesFailBrokenReports: each §10 case fails a report
// broken the way it checks.
func TestDiagnosticsCasesFailBrokenReports(t *testing.T) {
	for _, tt := range []struct {
		name string
		h    func(next http.Handler) http.Handler
		id   string
		want string
	}{
		{"too long", func(next http.Handler) http.Handler {
			return editReport(next, func(r map[string]any) { r["app"] = map[string]string{"pad": strings.Repeat("x", 2000)} })
		}, "diagnostics/report", "characters; Median keeps 2000"},
		{"a section missing", func(next http.Handler) http.Handler {
			return editReport(next, func(r map[string]any) { delete(r, "store") })
		}, "diagnostics/report", "the report lacks store"},
		{"slow", func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				time.Sleep(1100 * time.Millisecond)
				next.ServeHTTP(w, r)
			})
		}, "diagnostics/report", "it must answer within a second"},
		{"skew of the server's start, not of the request", func(next http.Handler) http.Handler {
			return editReport(next, func(r map[string]any) { r["clock"] = map[string]any{"skewMs": 1200} })
		}, "diagnostics/clock-skew", "a difference of 0 ms"},
		{"skew with the wrong sign", func(next http.Handler) http.Handler {
			return editReport(next, func(r map[string]any) {
				c := r["clock"].(map[string]any)
				c["skewMs"] = -c["skewMs"].(float64)
			})
		}, "diagnostics/clock-skew", "differ"},
		{"keys by a wrong fingerprint", func(next http.Handler) http.Handler {
			return editReport(next, func(r map[string]any) {
				for _, k := range r["keys"].([]any) {
					k.(map[string]any)["fingerprint"] = "mk_000000000000"
				}
			})
		}, "diagnostics/key-fingerprint", "not the fingerprint of the key the suite signs with"},
		{"no checks section", func(next http.Handler) http.Handler {
			return editReport(next, func(r map[string]any) { delete(r, "checks") })
		}, "diagnostics/checks-apart", "the report's checks section is absent"},
		{"a check's refusal not counted apart", func(next http.Handler) http.Handler {
			return editReport(next, func(r map[string]any) {
				if c, ok := r["checks"].(map[string]any); ok {
					delete(c, "refused")
				}
			})
		}, "diagnostics/checks-apart", "checks.refused.stale_timestamp went from 0 to 0"},
		{"a check's refusal counted as the deployment's too", func(next http.Handler) http.Handler {
			n := 0.0
			return editReport(next, func(r map[string]any) {
				n++
				r["refused"] = map[string]any{"stale_timestamp": map[string]any{"count": n, "last": "2026-01-01T00:00:00Z"}}
			})
		}, "diagnostics/checks-apart", "was counted as the deployment's"},
		{"no check token", func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				next.ServeHTTP(dropHeader{w, "Median-Check-Token"}, r)
			})
		}, "diagnostics/checks-apart", "the endpoint gave no check token"},
		{"a visitor's email in the report", rememberVisitor, "diagnostics/private", "which the suite sent in a call's input, visitor or as the key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep := checkDiagnostics(t, tt.h(newHandler(t, testKey, nil)))
			res, ok := verdict(rep, tt.id)
			require.True(t, ok)
			require.Equal(t, "fail", res.Status, "%s", res)
			assert.Contains(t, res.String(), tt.want)
		})
	}
}

// TestDiagnosticsCasesNotApplicable: a report turned off or replaced
// whole gets the §10 cases as not applicable, saying why.
func TestDiagnosticsCasesNotApplicable(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*protocol.Config)
		why  string
	}{
		{"off", func(c *protocol.Config) { c.DiagnosticsOff = true }, "turned the diagnostics report off"},
		{"replaced", func(c *protocol.Config) {
			c.DiagnosticsReplace = func(context.Context) (any, error) { return map[string]string{"db": "ok"}, nil }
		}, "replaced the diagnostics report with an answer of their own"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep := checkDiagnostics(t, newHandler(t, testKey, tt.edit))
			for _, res := range rep.Verdicts {
				assert.Equal(t, "not_applicable", res.Status, "%s", res)
				assert.Contains(t, res.Message, tt.why)
			}
		})
	}
}

// TestDiagnosticsCasesServerClockBehind: a server whose clock is 20 s
// behind the suite's, run with a Target.ClockSkew that allows it, passes
// every §10 case: the stale request's maxSkewMs is read against the skew
// the report measured, not against the suite's clock.
func TestDiagnosticsCasesServerClockBehind(t *testing.T) {
	h := newHandler(t, testKey, func(cfg *protocol.Config) {
		cfg.Now = func() time.Time { return time.Now().Add(-20 * time.Second) }
	})
	target := fixtureTarget(t, mux(h))
	target.ClockSkew = 30 * time.Second
	rep, err := conformance.Check(t.Context(), target, conformance.Options{Run: "^diagnostics/"})
	require.NoError(t, err)
	require.Len(t, rep.Verdicts, 5)
	for _, res := range rep.Verdicts {
		assert.Equal(t, "pass", res.Status, "%s", res)
	}
}

// dropHeader is a ResponseWriter that drops one header from the answer.
type dropHeader struct {
	http.ResponseWriter
	name string
}

func (d dropHeader) WriteHeader(status int) {
	d.Header().Del(d.name)
	d.ResponseWriter.WriteHeader(status)
}
