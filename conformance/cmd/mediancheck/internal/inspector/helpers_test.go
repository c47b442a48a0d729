package inspector

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/median-go/median/examples/catalog"
)

const testKey = "mk_test_0123456789abcdef0123456789abcdef"

// upstream is an endpoint that counts the requests it receives.
type upstream struct {
	URL  string
	hits atomic.Int64
}

// startUpstream serves h at /api/median, counting requests.
func startUpstream(t *testing.T, h http.Handler) *upstream {
	t.Helper()
	u := &upstream{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	u.URL = srv.URL + "/api/median"
	return u
}

// startCatalog serves the example catalog with testKey.
func startCatalog(t *testing.T) *upstream {
	t.Helper()
	d, err := catalog.New(catalog.Options{Key: testKey, Logger: slog.New(slog.DiscardHandler), Warnings: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return startUpstream(t, d.Handler)
}

// page is a running inspector.
type page struct {
	s   *Server
	URL string // the base URL, without the token
}

// startInspector serves an inspector of endpoint, its requests bounded by
// timeout (0: the default).
func startInspector(t *testing.T, endpoint string, timeout time.Duration) *page {
	t.Helper()
	s, err := New(Config{URL: endpoint, Key: testKey, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return &page{s: s, URL: srv.URL}
}

// api calls the inspector's API as the page does and decodes the answer.
func (p *page) api(t *testing.T, path string, body any, out any) int {
	t.Helper()
	method, rd := http.MethodGet, io.Reader(nil)
	if body != nil {
		b, _ := json.Marshal(body)
		method, rd = http.MethodPost, bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, p.URL+path, rd)
	req.Header.Set(tokenHeader, p.s.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s: %v: %s", path, err, data)
		}
	}
	return resp.StatusCode
}

// jsonText is v as JSON text.
func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
