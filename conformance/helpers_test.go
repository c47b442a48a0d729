package conformance_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/internal/testonly/fixture"
	"github.com/median-go/median/protocol"
)

// testKey is the Median key the tests' endpoints run with.
const testKey = "mk_test_0123456789abcdef0123456789abcdef"

// mountPath is where the tests mount the endpoint: not the root.
const mountPath = "/api/median"

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newHandler builds a core handler with the fixture tools; edit changes
// its config first.
func newHandler(t testing.TB, key string, edit func(*protocol.Config)) *protocol.Handler {
	t.Helper()
	cfg := protocol.Config{Keys: []string{key}, Tools: fixture.Tools(), Logger: quiet}
	if edit != nil {
		edit(&cfg)
	}
	h, err := protocol.New(cfg)
	if key == testKey {
		require.NoError(t, err)
	}
	require.NotNil(t, h)
	return h
}

// mux mounts h at mountPath, with and without a trailing slash, on a
// ServeMux beside another route.
func mux(h http.Handler) *http.ServeMux {
	m := http.NewServeMux()
	m.Handle(mountPath, h)
	m.Handle(mountPath+"/{$}", h)
	m.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	return m
}

// fixtureTarget is the full target over a ServeMux, key cases included:
// their endpoints log the key's problem into a log fixture.Handler keeps
// and checks, not into the test's output.
func fixtureTarget(t testing.TB, h http.Handler) conformance.Target {
	target := conformance.HandlerTarget(h, mountPath, testKey)
	target.Tools = fixture.Samples()
	target.BuildWithKey = func(key string) (func(*http.Request) (*http.Response, error), error) {
		return inProcess(mux(fixture.Handler(t, key))), nil
	}
	return target
}

// fixtureNames and fixtureRisks are the fixture tools' names, in the order
// fixture.Tools returns them, and their declared risks, as the manifest lists
// them.
var fixtureNames, fixtureRisks = fixtureDeclared()

func fixtureDeclared() ([]string, map[string]protocol.Risk) {
	key, err := protocol.ParseKey(testKey)
	if err != nil {
		panic(err)
	}
	tools := fixture.Tools()
	names := make([]string, 0, len(tools))
	risks := map[string]protocol.Risk{}
	for _, tool := range tools {
		h, err := protocol.New(protocol.Config{Keys: []string{testKey}, Tools: []*protocol.Tool{tool}, Logger: quiet})
		if err != nil {
			panic(err)
		}
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("median-signature", key.Sign(time.Now(), nil))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var m struct {
			Tools []struct {
				Name string        `json:"name"`
				Risk protocol.Risk `json:"risk"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || len(m.Tools) != 1 {
			panic(fmt.Sprintf("fixture manifest %s: %v", rec.Body, err))
		}
		names = append(names, m.Tools[0].Name)
		risks[m.Tools[0].Name] = m.Tools[0].Risk
	}
	return names, risks
}

// inProcess returns a request function that serves h in process, as
// HandlerTarget's Do does.
func inProcess(h http.Handler) func(*http.Request) (*http.Response, error) {
	return conformance.HandlerTarget(h, mountPath, testKey).Do
}

// verdict returns the verdict of the case with id, and false when that case
// was not run.
func verdict(rep conformance.Report, id string) (conformance.Verdict, bool) {
	for _, v := range rep.Verdicts {
		if v.ID == id {
			return v, true
		}
	}
	return conformance.Verdict{}, false
}
