package conformance_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/conformance"
)

// inFront is a fake stack: answer answers the requests it wants to (true)
// the way a framework or a proxy does, and the rest reach the core on a
// ServeMux, as the real endpoint behind it.
func inFront(t *testing.T, answer func(w http.ResponseWriter, r *http.Request) bool) http.Handler {
	core := mux(newHandler(t, testKey, nil))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !answer(w, r) {
			core.ServeHTTP(w, r)
		}
	})
}

// plain writes a text/plain answer as net/http's http.Error does.
func plain(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// TestFailuresNameTheFrameworkSetting checks that when a framework or a
// proxy answers in place of the endpoint, the failing case says which
// setting usually causes it and links its recipe in docs/MOUNTING.md; each
// fake endpoint answers as that stack does.
func TestFailuresNameTheFrameworkSetting(t *testing.T) {
	slash := mountPath + "/"
	tests := []struct {
		name  string
		front func(w http.ResponseWriter, r *http.Request) bool
		id    string   // a case that fails against it
		want  []string // in that case's message
	}{
		{
			name: "gorilla/mux StrictSlash(true): 301 to the path without the slash",
			front: func(w http.ResponseWriter, r *http.Request) bool {
				if r.URL.Path != slash {
					return false
				}
				http.Redirect(w, r, mountPath, http.StatusMovedPermanently)
				return true
			},
			id:   "routing/trailing-slash",
			want: []string{"a redirect to " + mountPath, "StrictSlash(true)", "docs/MOUNTING.md#gorillamux", "docs/MOUNTING.md#what-any-mount-must-do"},
		},
		{
			name: "Iris path correction: 307",
			front: func(w http.ResponseWriter, r *http.Request) bool {
				if r.URL.Path != slash {
					return false
				}
				w.Header().Set("Location", mountPath)
				w.WriteHeader(http.StatusTemporaryRedirect)
				return true
			},
			id:   "routing/trailing-slash",
			want: []string{"Iris's path correction", "docs/MOUNTING.md#iris"},
		},
		{
			name: `gorilla/mux .Methods("POST"): an empty 405 for every other method`,
			front: func(w http.ResponseWriter, r *http.Request) bool {
				if r.Method == http.MethodPost {
					return false
				}
				w.WriteHeader(http.StatusMethodNotAllowed)
				return true
			},
			id:   "methods/put",
			want: []string{`.Methods("POST")`, "register every method", "docs/MOUNTING.md#gorillamux"},
		},
		{
			name: "go-zero's MaxBytes: 413 with no body before the Handler",
			front: func(w http.ResponseWriter, r *http.Request) bool {
				if r.ContentLength <= 1<<20 && r.ContentLength >= 0 {
					return false
				}
				w.WriteHeader(http.StatusRequestEntityTooLarge)
				return true
			},
			id:   "body/oversized",
			want: []string{"go-zero's MaxBytes (default 1 MiB)", "docs/MOUNTING.md#go-zero"},
		},
		{
			name: "an auth middleware in front: text/plain 401",
			front: func(w http.ResponseWriter, _ *http.Request) bool {
				plain(w, http.StatusUnauthorized, "Unauthorized\n")
				return true
			},
			id:   "signature/valid",
			want: []string{"an auth middleware in front of the endpoint", "mount the endpoint outside that middleware", "docs/MOUNTING.md#what-any-mount-must-do"},
		},
		{
			name: "go-zero's Timeout: text/plain 503",
			front: func(w http.ResponseWriter, r *http.Request) bool {
				if r.Method != http.MethodPost {
					return false
				}
				plain(w, http.StatusServiceUnavailable, "Service Unavailable")
				return true
			},
			id:   "execution/result",
			want: []string{"go-zero's Timeout, 3 s by default", "docs/MOUNTING.md#go-zero"},
		},
		{
			name: "huma answers its own validation error",
			front: func(w http.ResponseWriter, r *http.Request) bool {
				if r.Method != http.MethodPost {
					return false
				}
				w.Header().Set("Content-Type", "application/problem+json")
				w.WriteHeader(http.StatusUnprocessableEntity)
				_, _ = io.WriteString(w, `{"title":"Unprocessable Entity","status":422,"detail":"validation failed"}`)
				return true
			},
			id:   "execution/result",
			want: []string{"huma's error model", "protocol.WithInputSchema", "docs/MOUNTING.md#huma"},
		},
		{
			name: "Kratos's error encoder",
			front: func(w http.ResponseWriter, r *http.Request) bool {
				if r.Method != http.MethodGet {
					return false
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, `{"code":404,"reason":"NOT_FOUND","message":"not found","metadata":{}}`)
				return true
			},
			id:   "manifest/signed-get",
			want: []string{"Kratos's error encoder", "srv.HandlePrefix", "docs/MOUNTING.md#kratos"},
		},
		{
			name: "API Gateway answers for a failing function",
			front: func(w http.ResponseWriter, _ *http.Request) bool {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Apigw-Requestid", "abc=")
				w.WriteHeader(http.StatusBadGateway)
				_, _ = io.WriteString(w, `{"message":"Internal Server Error"}`)
				return true
			},
			id:   "signature/valid",
			want: []string{"API Gateway's own answer", "docs/MOUNTING.md#lambda"},
		},
		{
			name: "Beego's 404 page",
			front: func(w http.ResponseWriter, r *http.Request) bool {
				if r.Method != http.MethodGet {
					return false
				}
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, `<html><body><h1>Page Not Found</h1><p>Powered by beego 2.3.0</p></body></html>`)
				return true
			},
			id:   "manifest/signed-get",
			want: []string{"Beego's", "app.Handler", "docs/MOUNTING.md#beego"},
		},
		{
			name: "any other page in front: net/http's 404",
			front: func(w http.ResponseWriter, r *http.Request) bool {
				if r.Method != http.MethodGet {
					return false
				}
				plain(w, http.StatusNotFound, "404 page not found\n")
				return true
			},
			id:   "manifest/signed-get",
			want: []string{"answers JSON only", "docs/MOUNTING.md#what-any-mount-must-do", "docs/MOUNTING.md#any-other-stack"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := fixtureTarget(t, inFront(t, tt.front))
			rep, err := conformance.Check(t.Context(), target, conformance.Options{Run: "^" + tt.id + "$"})
			require.NoError(t, err)
			v, ok := verdict(rep, tt.id)
			require.True(t, ok, "case %s did not run", tt.id)
			require.Equal(t, "fail", v.Status, "case %s should fail: %s", tt.id, v)
			for _, want := range tt.want {
				assert.Contains(t, v.Message, want, "case %s", tt.id)
			}
			assert.Equal(t, 1, strings.Count(v.Message, "Likely cause:"), "one hint per failure: %s", v.Message)
		})
	}
}

// TestContractAnswersGetNoHint: a failure whose answer is in the
// contract's shape is the endpoint's own, and gets no framework hint; nor
// does the body-less 405 a HEAD request gets from a correct endpoint.
func TestContractAnswersGetNoHint(t *testing.T) {
	// The core's 404 unknown_tool answered as 401: wrong, but in the
	// contract's shape, where a text/plain 401 would get the auth hint.
	h := statusRewriter(mux(newHandler(t, testKey, nil)), http.StatusNotFound, http.StatusUnauthorized)
	rep, err := conformance.Check(t.Context(), fixtureTarget(t, h), conformance.Options{Run: "^routing/unknown-tool$"})
	require.NoError(t, err)
	v, ok := verdict(rep, "routing/unknown-tool")
	require.True(t, ok)
	require.Equal(t, "fail", v.Status, "%s", v)
	assert.NotContains(t, v.Message, "Likely cause")
	assert.NotContains(t, v.Message, "MOUNTING.md")
}

// TestRepeatedHeaderLostNamesTheLayer: when a layer in front passes on
// only one line of a median-signature header sent as several (an ALB
// target group without multi-value headers keeps the last), both
// repeated-header cases fail saying so and link the Lambda recipe.
func TestRepeatedHeaderLostNamesTheLayer(t *testing.T) {
	lastLine := func(w http.ResponseWriter, r *http.Request) bool {
		if v := r.Header.Values("Median-Signature"); len(v) > 1 {
			r.Header.Set("Median-Signature", v[len(v)-1])
		}
		return false // the core answers, with what is left
	}
	rep, err := conformance.Check(t.Context(), fixtureTarget(t, inFront(t, lastLine)), conformance.Options{Run: "^signature/repeated-header"})
	require.NoError(t, err)
	for _, id := range []string{"signature/repeated-header", "signature/repeated-header-two-t"} {
		v, ok := verdict(rep, id)
		require.True(t, ok, "case %s did not run", id)
		require.Equal(t, "fail", v.Status, "%s", v)
		assert.Contains(t, v.Message, "passed on only one line of the repeated median-signature header")
		assert.Contains(t, v.Message, "docs/MOUNTING.md#lambda")
	}
}
