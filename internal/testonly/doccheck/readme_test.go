package doccheck

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/protocol"
)

// fence opens and closes a Markdown code block; written in two parts so
// that this file's strings are not read as one.
const fence = "``" + "`"

// firstCodeBlock returns the language and body of the first fenced code
// block of text.
func firstCodeBlock(text string) (lang, body string, ok bool) {
	_, rest, ok := strings.Cut(text, "\n"+fence)
	if !ok {
		return "", "", false
	}
	lang, rest, ok = strings.Cut(rest, "\n")
	if !ok {
		return "", "", false
	}
	body, _, ok = strings.Cut(rest, "\n"+fence)
	return strings.TrimSpace(lang), body + "\n", ok
}

func TestFirstCodeBlock(t *testing.T) {
	text := "# T\n\nSome text.\n\n" + fence + "go\npackage main\n\nfunc main() {}\n" + fence + "\n\n" + fence + "sh\nls\n" + fence + "\n"
	lang, body, ok := firstCodeBlock(text)
	if !ok || lang != "go" || body != "package main\n\nfunc main() {}\n" {
		t.Errorf("firstCodeBlock = %q, %q, %v", lang, body, ok)
	}
	if _, _, ok := firstCodeBlock("no code here\n"); ok {
		t.Error("firstCodeBlock found a block in text without one")
	}
}

// TestReadmeOpensWithAProgramThatRuns: the README's first code block is a
// whole Go program; built inside the module (so the module's own packages
// and dependencies resolve, as after go get) and run with a fresh key on a
// loopback port given as HOST and PORT, it answers the manifest and a
// signed call of its tool.
func TestReadmeOpensWithAProgramThatRuns(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lang, src, ok := firstCodeBlock(string(readme))
	if !ok || lang != "go" || !strings.HasPrefix(src, "package main\n") {
		t.Fatalf("README.md must open with a whole Go program (a %sgo block starting with package main); its first block is %q:\n%s", fence, lang, src)
	}

	// A directory inside the module, under testdata so go ./... skips it.
	parent := filepath.Join(root, "internal", "testonly", "doccheck", "testdata")
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(parent, "readme-main-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "readme-main")
	build := exec.Command("go", "build", "-o", bin, filepath.Join(dir, "main.go"))
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the README's first block does not build: %v\n%s", err, out)
	}

	b := make([]byte, 24)
	_, _ = rand.Read(b)
	keyText := "mk_test_" + hex.EncodeToString(b)
	key, err := protocol.ParseKey(keyText)
	if err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	cmd := exec.Command(bin)
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	// HOST and PORT, as the examples read them (examples/catalog.Addr).
	cmd.Env = append(os.Environ(), "MEDIAN_KEY="+keyText, "HOST="+host, "PORT="+port)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})

	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	url := "http://" + addr + "/api/median"
	send := func(method string, body []byte) (int, string, error) {
		req, err := http.NewRequest(method, url, bytes.NewReader(body))
		if err != nil {
			return 0, "", err
		}
		req.Header.Set("Median-Signature", key.Sign(time.Now(), body))
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(got), err
	}

	// The program may take a moment to listen.
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, manifest, err := send(http.MethodGet, nil)
		if err == nil {
			if status != http.StatusOK || !strings.Contains(manifest, `"name":"lookup_order"`) {
				t.Fatalf("GET %s: %d %s, want 200 and the manifest listing lookup_order\n%s", url, status, manifest, logs.String())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the README's program did not answer on %s within 30 s: %v\n%s", addr, err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	call := []byte(`{"tool":"lookup_order","toolCallId":"call_readme","input":{"orderId":"A-1001"},` +
		`"context":{"conversationId":"conv_readme","risk":"low","visitor":{"verified":true,"externalId":"user_7"}}}`)
	status, answer, err := send(http.MethodPost, call)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"result":{"orderId":"A-1001","status":"shipped"}}`; status != http.StatusOK || strings.TrimSpace(answer) != want {
		t.Errorf("a signed call: %d %s, want 200 %s\n%s", status, answer, want, logs.String())
	}
}

// freeLoopbackAddr returns a loopback address with a port free a moment
// ago.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestReadmeRunsTheTestsAsCIDoes: the test command the README gives is the
// one .ci/run runs.
func TestReadmeRunsTheTestsAsCIDoes(t *testing.T) {
	root := repoRoot(t)
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var command string
	for line := range strings.SplitSeq(string(ci), "\n") {
		if strings.HasPrefix(line, "go test ") {
			command = strings.TrimSpace(line)
		}
	}
	if command == "" {
		t.Fatal(".ci/run runs no go test line")
	}
	if !strings.Contains(string(readme), "\n"+command+" ") && !strings.Contains(string(readme), "\n"+command+"\n") {
		t.Errorf("README.md does not give the test command .ci/run runs: %s", command)
	}
	if !strings.Contains(string(readme), "\ngo run ./examples/gin ") {
		t.Error("README.md does not give the command that runs the main example: go run ./examples/gin")
	}
}

// TestReadmeTally: the tally the README shows for mediancheck against the
// gin example with its samples is the one it prints: every case but the 4
// that cannot apply to a deployed example (the 3 key cases, which rebuild
// the endpoint, and execution/panic, which needs a tool that panics).
func TestReadmeTally(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^# (\d+) passed, 0 failed$`).FindSubmatch(readme)
	if m == nil {
		t.Fatal(`README.md: no "# N passed, 0 failed" line under the mediancheck command`)
	}
	if want := strconv.Itoa(len(conformance.Cases()) - 4); string(m[1]) != want {
		t.Errorf("README.md says %s passed; mediancheck against the example passes %s: update the line", m[1], want)
	}
}
