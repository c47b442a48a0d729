// Package toxitest starts a toxiproxy server for the module's fault tests
// and drives it through its HTTP API: a proxy in front of a server the
// test runs (Redis), and toxics that break what passes through it (cut a
// connection after so many bytes, add latency). It uses the standard
// library only, so no user of the module downloads toxiproxy.
//
// The server is the toxiproxy-server binary, built from toxiproxy's Go
// module: .ci/run installs it when it is missing, with go install of
// github.com/Shopify/toxiproxy/v2/cmd/server at the version it pins, into
// $(go env GOPATH)/bin under the name toxiproxy-server. [Start] looks for
// it on PATH, then in $(go env GOBIN) and $(go env GOPATH)/bin;
// $MEDIAN_TEST_TOXIPROXY names it outright. When it is missing the test is
// skipped, or fails under CI=true.
package toxitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/median-go/median/internal/testonly/testsupport"
)

// BinaryEnv names the environment variable that points the tests at the
// toxiproxy-server binary.
const BinaryEnv = "MEDIAN_TEST_TOXIPROXY"

// installLine says how to install the server.
const installLine = "run .ci/run, which builds it (go install github.com/Shopify/toxiproxy/v2/cmd/server, " +
	"moved to $(go env GOPATH)/bin/toxiproxy-server), or set " + BinaryEnv + " to the binary"

// client talks to the API without keeping connections open, so no
// connection's goroutines outlive a test (the tests check with goleak).
var client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// Server is a toxiproxy-server process a test started on a free loopback
// port. It is killed when the test ends.
type Server struct {
	api string // http://host:port
	t   testing.TB
}

// Binary returns the path of toxiproxy-server, or "" when it is missing.
func Binary() string {
	if p := os.Getenv(BinaryEnv); p != "" {
		return p
	}
	if p, err := exec.LookPath("toxiproxy-server"); err == nil {
		return p
	}
	for _, v := range []string{"GOBIN", "GOPATH"} {
		out, err := exec.Command("go", "env", v).Output()
		dir := strings.TrimSpace(string(out))
		if err != nil || dir == "" {
			continue
		}
		if v == "GOPATH" {
			dir = filepath.Join(filepath.SplitList(dir)[0], "bin")
		}
		p := filepath.Join(dir, "toxiproxy-server")
		if info, err := os.Stat(p); err == nil && !info.IsDir() {
			return p
		}
	}
	return ""
}

// Start starts toxiproxy-server on a free port of 127.0.0.1 and waits
// until its API answers. It skips the test when the binary is missing, or
// fails it when CI=true.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		testsupport.Missing(t, "toxitest: toxiproxy-server is not installed: "+installLine)
	}
	port := freePort(t)
	logFile, err := os.Create(filepath.Join(t.TempDir(), "toxiproxy.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-host", "127.0.0.1", "-port", port)
	cmd.Stdout, cmd.Stderr = logFile, logFile // files: no copying goroutines
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		t.Fatalf("toxitest: could not start %s: %v", bin, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logFile.Close()
	})
	s := &Server{api: "http://127.0.0.1:" + port, t: t}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := client.Get(s.api + "/version")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logFile.Name())
			t.Fatalf("toxitest: toxiproxy-server did not answer on port %s within 10 s; its log:\n%s", port, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("toxitest: no free loopback port: %v", err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// Proxy is a proxy of a Server: connections to Addr reach its upstream.
type Proxy struct {
	Name string
	Addr string // host:port to connect to instead of the upstream
	s    *Server
}

// Proxy creates a proxy named name in front of upstream (host:port), on a
// free port of 127.0.0.1.
func (s *Server) Proxy(name, upstream string) *Proxy {
	s.t.Helper()
	var created struct {
		Listen string `json:"listen"`
	}
	s.call(http.MethodPost, "/proxies", map[string]any{"name": name, "listen": "127.0.0.1:0", "upstream": upstream, "enabled": true}, http.StatusCreated, &created)
	if created.Listen == "" {
		s.t.Fatalf("toxitest: proxy %q was created without an address", name)
	}
	return &Proxy{Name: name, Addr: created.Listen, s: s}
}

// Toxic is a fault a Proxy applies to one direction of its connections.
type Toxic struct {
	Name string
	// Type is toxiproxy's toxic type: "limit_data" (close the connection
	// once Attributes["bytes"] bytes have passed), "latency", "timeout",
	// "reset_peer", "slicer", "bandwidth"…
	Type string
	// Stream is "upstream" (client to server: commands) or "downstream"
	// (server to client: replies).
	Stream     string
	Attributes map[string]any
}

// Add puts toxic on the proxy's connections, open ones included.
func (p *Proxy) Add(toxic Toxic) {
	p.s.t.Helper()
	p.s.call(http.MethodPost, "/proxies/"+p.Name+"/toxics", map[string]any{
		"name": toxic.Name, "type": toxic.Type, "stream": toxic.Stream, "toxicity": 1.0, "attributes": toxic.Attributes,
	}, http.StatusOK, nil)
}

// Remove takes the toxic named name off the proxy.
func (p *Proxy) Remove(name string) {
	p.s.t.Helper()
	p.s.call(http.MethodDelete, "/proxies/"+p.Name+"/toxics/"+name, nil, http.StatusNoContent, nil)
}

// call sends one API request and decodes the answer into out (when not
// nil), failing the test on any other status than want.
func (s *Server) call(method, path string, in any, want int, out any) {
	s.t.Helper()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			s.t.Fatal(err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.api+path, body)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		s.t.Fatalf("toxitest: %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		s.t.Fatalf("toxitest: %s %s answered %d, want %d: %s", method, path, resp.StatusCode, want, got)
	}
	if out != nil {
		if err := json.Unmarshal(got, out); err != nil {
			s.t.Fatalf("toxitest: %s %s: %v in %s", method, path, fmt.Errorf("decoding the answer: %w", err), got)
		}
	}
}
