package conformance_test

import (
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/median-go/median/conformance"
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
	cfg := protocol.Config{Keys: []string{key}, Tools: conformance.FixtureTools(), Logger: quiet}
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

// fixtureTarget is the full target over a ServeMux, key cases included.
func fixtureTarget(t testing.TB, h http.Handler) conformance.Target {
	target := conformance.HandlerTarget(h, mountPath, testKey)
	target.Tools = conformance.FixtureSamples()
	target.BuildWithKey = func(key string) (conformance.DoFunc, error) {
		return conformance.HandlerDo(mux(newHandler(t, key, nil))), nil
	}
	return target
}
