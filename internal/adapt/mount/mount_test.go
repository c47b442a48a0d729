package mount

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// TestPaths gives "" and "/" one meaning (the root, registered once) and
// every other spelling of a path the same two routes.
func TestPaths(t *testing.T) {
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"", []string{"/"}},
		{"/", []string{"/"}},
		{"//", []string{"/"}},
		{"/median", []string{"/median", "/median/"}},
		{"median", []string{"/median", "/median/"}},
		{"/median/", []string{"/median", "/median/"}},
		{"/api/median", []string{"/api/median", "/api/median/"}},
	} {
		if got := Paths(tc.path); !slices.Equal(got, tc.want) {
			t.Errorf("Paths(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

// TestChain stops at the first handler that writes, whether it writes a
// status alone or a body alone, and runs every handler while none does.
func TestChain(t *testing.T) {
	var ran []string
	step := func(name string, act func(http.ResponseWriter)) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			ran = append(ran, name)
			act(w)
		})
	}
	pass := func(http.ResponseWriter) {}
	for _, tc := range []struct {
		name     string
		handlers []http.Handler
		ran      []string
		status   int
		body     string
	}{
		{"status alone ends it", []http.Handler{step("a", func(w http.ResponseWriter) { w.WriteHeader(http.StatusForbidden) }), step("b", pass)}, []string{"a"}, http.StatusForbidden, ""},
		{"body alone ends it", []http.Handler{step("a", func(w http.ResponseWriter) { _, _ = io.WriteString(w, "no") }), step("b", pass)}, []string{"a"}, http.StatusOK, "no"},
		{"a flush ends it", []http.Handler{step("a", func(w http.ResponseWriter) { _ = http.NewResponseController(w).Flush() }), step("b", pass)}, []string{"a"}, http.StatusOK, ""},
		{"the third answers", []http.Handler{step("a", pass), step("b", pass), step("c", func(w http.ResponseWriter) { _, _ = io.WriteString(w, "c") })}, []string{"a", "b", "c"}, http.StatusOK, "c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran = nil
			w := httptest.NewRecorder()
			Chain(tc.handlers).ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", nil))
			if !slices.Equal(ran, tc.ran) || w.Code != tc.status || w.Body.String() != tc.body {
				t.Errorf("ran %q, answered %d %q; want ran %q, answered %d %q", ran, w.Code, w.Body, tc.ran, tc.status, tc.body)
			}
		})
	}
}

// TestChainUnwraps lets http.ResponseController reach the writer
// underneath the chain's tracker: a handler of the chain can flush (which
// ends the chain).
func TestChainUnwraps(t *testing.T) {
	flush := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("Flush through the chain: %v", err)
		}
	})
	w := httptest.NewRecorder()
	Chain([]http.Handler{flush, flush}).ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", nil))
	if !w.Flushed {
		t.Error("the writer underneath was not flushed")
	}
}

// TestChainEarlyHints: a 103 Early Hints goes ahead of the answer and is
// not one; the chain goes on.
func TestChainEarlyHints(t *testing.T) {
	var ran []string
	hints := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		ran = append(ran, "hints")
		w.WriteHeader(http.StatusEarlyHints)
	})
	answer := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		ran = append(ran, "answer")
		_, _ = io.WriteString(w, "b")
	})
	w := httptest.NewRecorder()
	Chain([]http.Handler{hints, answer}).ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", nil))
	if !slices.Equal(ran, []string{"hints", "answer"}) || w.Body.String() != "b" {
		t.Errorf("ran %q, answered %q; want both run and %q", ran, w.Body, "b")
	}
}
