package conformance_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/internal/testonly/fixture"
	"github.com/median-go/median/protocol"
)

// router is an app built the usual way: nil and an error when the key is
// not usable.
type router struct{ http.Handler }

// keyCases runs the key cases against target and returns their results by id.
func keyCases(t *testing.T, target conformance.Target) map[string]conformance.Verdict {
	t.Helper()
	rep, err := conformance.Check(t.Context(), target, conformance.Options{Run: "^key/"})
	require.NoError(t, err)
	require.Len(t, rep.Verdicts, 3)
	out := map[string]conformance.Verdict{}
	for _, r := range rep.Verdicts {
		out[r.ID] = r
	}
	return out
}

func TestKeyCasesAcceptAnOrdinaryConstructor(t *testing.T) {
	tests := []struct {
		name string
		// newRouter is the app's constructor.
		newRouter func(key string) (*router, error)
		// fails maps the cases that must fail to a word of their message;
		// the others must pass.
		fails map[string]string
	}{
		{
			name: "nil and an error naming the code",
			newRouter: func(key string) (*router, error) {
				h, err := protocol.New(protocol.Config{Keys: []string{key}, Logger: quiet})
				if err != nil {
					return nil, err
				}
				return &router{h}, nil
			},
		},
		{
			name: "the endpoint and the error, as protocol.New returns them",
			newRouter: func(key string) (*router, error) {
				h, err := protocol.New(protocol.Config{Keys: []string{key}, Logger: quiet})
				return &router{mux(h)}, err
			},
		},
		{
			name: "nil and an error that names no key problem",
			newRouter: func(string) (*router, error) {
				return nil, errors.New("router: something went wrong")
			},
			fails: map[string]string{
				"key/missing":           `does not name the key problem (its text has no "missing_secret"): router: something went wrong`,
				"key/too-short":         `its text has no "invalid_median_key"`,
				"key/not-visible-ascii": `its text has no "invalid_median_key"`,
			},
		},
		{
			name: "nil and the wrong code",
			newRouter: func(string) (*router, error) {
				return nil, errors.New("invalid_median_key: the key is not usable")
			},
			fails: map[string]string{"key/missing": "reported invalid_median_key, but this key is missing_secret"},
		},
		{
			name: "a typed nil and no error",
			newRouter: func(string) (*router, error) {
				return nil, nil
			},
			fails: map[string]string{
				"key/missing":           "the constructor returned a nil handler and no error",
				"key/too-short":         "nil handler",
				"key/not-visible-ascii": "nil handler",
			},
		},
		{
			name: "an endpoint that ignores the key, with the right error",
			newRouter: func(key string) (*router, error) {
				h := newHandler(t, testKey, nil) // runs with a good key whatever it was given
				_, err := protocol.ParseKey(key)
				return &router{mux(h)}, err
			},
			fails: map[string]string{
				"key/missing":           "the constructor reported missing_secret, but the endpoint it returned anyway does not refuse",
				"key/too-short":         "does not refuse",
				"key/not-visible-ascii": "does not refuse",
			},
		},
		{
			name:      "a constructor that panics",
			newRouter: func(key string) (*router, error) { panic("no key: " + key) },
			fails: map[string]string{
				"key/missing":           "Target.BuildWithKey panicked (return an error instead): no key",
				"key/too-short":         "panicked",
				"key/not-visible-ascii": "panicked",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := fixtureTarget(t, mux(newHandler(t, testKey, nil)))
			target.BuildWithKey = conformance.HandlerBuilder(tt.newRouter)
			got := keyCases(t, target)
			for id, r := range got {
				want, fails := tt.fails[id]
				if !fails {
					assert.Equal(t, "pass", r.Status, "%s", r)
					continue
				}
				assert.Equal(t, "fail", r.Status, "%s", r)
				assert.Contains(t, r.Message, want, id)
			}
		})
	}
}

func TestKeyCasesWithoutABuilder(t *testing.T) {
	target := conformance.HandlerTarget(mux(newHandler(t, testKey, nil)), mountPath, testKey)
	for id, r := range keyCases(t, target) {
		assert.Equal(t, "skip", r.Status, id)
		assert.Contains(t, r.Message, "Target.BuildWithKey", id)
	}
	target.Deployed = true
	for id, r := range keyCases(t, target) {
		assert.Equal(t, "not_applicable", r.Status, id)
		assert.Contains(t, r.Message, "deployed", id)
		assert.Contains(t, r.String(), "N/A "+id)
	}
}

// app stands for an app that is not an http.Handler (a fiber app).
type app struct{ h http.Handler }

func doApp(a *app) func(*http.Request) (*http.Response, error) { return inProcess(a.h) }

// TestBuildWithKeyForAnAppThatIsNotAHandler: the key cases build an app
// reached through a request function (a fiber app through fibermedian.Do)
// with the ordinary constructor written around it.
func TestBuildWithKeyForAnAppThatIsNotAHandler(t *testing.T) {
	newApp := func(key string) (*app, error) {
		h, err := protocol.New(protocol.Config{Keys: []string{key}, Tools: fixture.Tools(), Logger: quiet})
		if err != nil {
			return nil, err // the usual constructor: nil and the key error
		}
		return &app{mux(h)}, nil
	}
	target := fixtureTarget(t, mux(newHandler(t, testKey, nil)))
	target.BuildWithKey = func(key string) (func(*http.Request) (*http.Response, error), error) {
		a, err := newApp(key)
		if a == nil {
			return nil, err
		}
		return doApp(a), err
	}
	report, err := conformance.Check(context.Background(), target, conformance.Options{Run: "^key/"})
	require.NoError(t, err)
	require.NotEmpty(t, report.Verdicts)
	for _, res := range report.Verdicts {
		assert.Equal(t, "pass", res.Status, "%s: %s", res.ID, res.Message)
	}
}

// TestKeyCasesStandApartFromTheShell: with MEDIAN_KEY and MEDIAN_KEY_FILE
// exported in the shell that runs the tests, the key cases still pass
// against a constructor that falls back to the environment when given no
// key, as production code does; the variables are set back afterwards.
func TestKeyCasesStandApartFromTheShell(t *testing.T) {
	const otherKey = "mk_shell_0123456789abcdefghijklmnopqrstuv" // the shell's, not the suite's
	file := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(file, []byte(otherKey), 0o600))
	t.Setenv("MEDIAN_KEY", otherKey)
	t.Setenv("MEDIAN_KEY_FILE", file)
	newRouter := func(key string) (*protocol.Handler, error) {
		cfg := protocol.Config{Tools: fixture.Tools(), Logger: quiet}
		if key != "" {
			cfg.Keys = []string{key}
		} // else: the environment's, as in production
		return protocol.New(cfg)
	}
	target := fixtureTarget(t, mux(newHandler(t, testKey, nil)))
	target.BuildWithKey = conformance.HandlerBuilder(func(key string) (http.Handler, error) {
		h, err := newRouter(key)
		if h != nil {
			t.Cleanup(func() { _ = h.Close() })
			return mux(h), err
		}
		return nil, err
	})
	for id, r := range keyCases(t, target) {
		assert.Equal(t, "pass", r.Status, "%s: %s", id, r)
	}
	assert.Equal(t, otherKey, os.Getenv("MEDIAN_KEY"), "set back")
	assert.Equal(t, file, os.Getenv("MEDIAN_KEY_FILE"), "set back")
}

// TestKeyCaseSaysWhereItsRequestWent: a BuildWithKey app mounted where
// Target.URL does not point fails the case with the URL in the message.
func TestKeyCaseSaysWhereItsRequestWent(t *testing.T) {
	target := fixtureTarget(t, mux(newHandler(t, testKey, nil)))
	target.BuildWithKey = func(key string) (func(*http.Request) (*http.Response, error), error) {
		h, err := protocol.New(protocol.Config{Keys: []string{key}, Tools: fixture.Tools(), Logger: quiet})
		m := http.NewServeMux()
		m.Handle("/elsewhere/median", h)
		return inProcess(m), err
	}
	r := keyCases(t, target)["key/missing"]
	require.Equal(t, "fail", r.Status, "%s", r)
	assert.Contains(t, r.Message, "the request went to Target.URL, "+target.URL+", through the request function BuildWithKey returned")
}
