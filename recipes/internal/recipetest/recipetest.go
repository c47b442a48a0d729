// Package recipetest runs the whole conformance suite against a recipe's
// app served on a real listener, so that each recipe's test only says how
// to build and serve its app.
package recipetest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/examples/catalog"
	"github.com/median-go/median/examples/catalog/catalogtest"
	"github.com/median-go/median/protocol"
)

// Key is the Median key the recipes' tests run with.
const Key = catalogtest.Key

// MountPath is where every recipe mounts the endpoint.
const MountPath = "/api/median"

// Start serves a fresh copy of a recipe's app, its endpoint built with key,
// on a listener on 127.0.0.1, and returns the app's base URL
// ("http://127.0.0.1:port"); the server stops when t ends. With a key that
// is not usable it returns the key error, and the base URL too when the app
// was built (its endpoint then answers 500 with that error's code).
type Start func(t testing.TB, key string) (base string, err error)

// Run runs every case of the conformance suite against the app start
// serves with Key, over the network, with samples as the tools' samples;
// the key cases start a copy of the app with their key. The suite's
// requests never follow a redirect: Median does not either. A case the
// suite skips fails the test.
func Run(t *testing.T, start Start, samples []conformance.ToolSample) {
	t.Helper()
	base, err := start(t, Key)
	if err != nil {
		t.Fatalf("the app did not start with the test key: %v", err)
	}
	target := Target(base)
	target.Tools = samples
	target.BuildWithKey = func(key string) (func(*http.Request) (*http.Response, error), error) {
		base, err := start(t, key)
		if base == "" {
			return nil, err
		}
		return Do(base), err
	}
	conformance.Run(t, target)

	// Run reports a case that lacks something (a sample, a builder) as a
	// skipped subtest, which go test passes: run the cases again through
	// Check and fail on any skip, so a recipe's test keeps covering them all.
	t.Run("nothing-skipped", func(t *testing.T) {
		report, err := conformance.Check(context.Background(), target, conformance.Options{})
		if err != nil {
			t.Fatal(err)
		}
		passed := 0
		for _, v := range report.Verdicts {
			switch v.Status {
			case "skip":
				t.Errorf("%s was skipped: %s", v.ID, v.Message)
			case "pass":
				passed++
			}
		}
		if passed == 0 {
			t.Error("no case passed")
		}
	})
}

// Target returns the Target of the endpoint of the app served at base,
// mounted at MountPath with Key, replay protection declared.
func Target(base string) conformance.Target {
	return conformance.Target{Do: Do(base), URL: base + MountPath, Key: Key, Replay: true}
}

// Do returns a request function that sends each request to base (whatever
// host its URL names) through a client that follows no redirect.
func Do(base string) func(*http.Request) (*http.Response, error) {
	u, err := url.Parse(base)
	if err != nil {
		panic("recipetest: bad base URL " + base)
	}
	client := &http.Client{
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return func(r *http.Request) (*http.Response, error) {
		r.URL.Scheme, r.URL.Host, r.Host = u.Scheme, u.Host, ""
		return client.Do(r)
	}
}

// ServeHTTP serves app on an httptest.Server until t ends and returns its
// base URL. Use it for a stack whose app is an http.Handler.
func ServeHTTP(t testing.TB, app http.Handler) string {
	srv := httptest.NewServer(app)
	t.Cleanup(srv.Close)
	return srv.URL
}

// CatalogHandler builds the examples' demo endpoint (examples/catalog) with
// key and no development key, its logs discarded, closed when t ends. With
// a key that is not usable the endpoint answers every request 500 with the
// key error's code, as the contract says.
func CatalogHandler(t testing.TB, key string) (*protocol.Handler, error) {
	demo, err := catalog.New(catalog.Options{Key: key, NoDevKey: true, Logger: slog.New(slog.DiscardHandler), Warnings: io.Discard})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = demo.Close() })
	return demo.Handler, nil
}

// CatalogSamples are the catalog's samples (catalogtest.Samples).
func CatalogSamples() []conformance.ToolSample { return catalogtest.Samples() }

// Get sends GET url, signed with Key as Median signs its manifest
// requests, follows no redirect, and returns the status, the headers and
// the body.
func Get(t testing.TB, rawURL string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Median-Signature", catalogtest.MustKey(Key).Sign(time.Now(), nil))
	resp, err := Do(rawURL)(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, body
}
