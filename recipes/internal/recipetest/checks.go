package recipetest

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/examples/catalog/catalogtest"
	"github.com/median-go/median/protocol"
)

// The checks below look for a framework answering in the Handler's place
// in ways the suite's cases do not reach: a body limit or a request
// timeout the suite's requests stay under.

// DefaultMaxBodyBytes is the Handler's default body limit
// (protocol.Config.MaxBodyBytes), which CatalogHandler's endpoint keeps.
const DefaultMaxBodyBytes = 1 << 20

// CheckDiagnostics sends a signed diagnostics request to url and fails t
// unless the Handler answered it: 200 application/json with a result.
func CheckDiagnostics(t testing.TB, url string) {
	t.Helper()
	checkAnswer(t, url, []byte(`{"op":"diagnostics"}`), http.StatusOK, "result")
}

// CheckManifest sends a signed GET to base+"/api/median" and to
// base+"/api/median/", and fails t unless the Handler answered both with
// its manifest (200 application/json): no route for POST only, no
// redirect of the trailing slash.
func CheckManifest(t testing.TB, base string) {
	t.Helper()
	for _, path := range []string{"/api/median", "/api/median/"} {
		status, hdr, body := Get(t, base+path)
		if status != http.StatusOK || hdr.Get("Content-Type") != "application/json" {
			t.Errorf("GET %s: got %d %s %s, want the manifest (200 application/json)", path, status, hdr.Get("Content-Type"), body)
		}
	}
}

// CheckGuarded sends GET base+"/api/orders" without a token and fails t
// unless the app's own auth middleware answered 401: the endpoint sits
// beside that middleware, which still guards the app's routes.
func CheckGuarded(t testing.TB, base string) {
	t.Helper()
	if status, _, body := Get(t, base+"/api/orders"); status != http.StatusUnauthorized {
		t.Errorf("GET /api/orders without a token: got %d %s, want the app's 401 (the auth middleware must still guard the app)", status, body)
	}
}

// CheckBodyLimit sends url (an endpoint built by CatalogHandler) signed
// diagnostics requests of exactly DefaultMaxBodyBytes and of one byte
// more, and fails t unless the Handler answered both: its result, then its
// 413 invalid_body. A framework limit at or below the Handler's answers
// in its place.
func CheckBodyLimit(t testing.TB, url string) {
	t.Helper()
	padded := func(n int) []byte {
		b := bytes.Repeat([]byte(" "), n)
		copy(b, `{"op":"diagnostics"}`)
		return b
	}
	checkAnswer(t, url, padded(DefaultMaxBodyBytes), http.StatusOK, "result")
	checkAnswer(t, url, padded(DefaultMaxBodyBytes+1), http.StatusRequestEntityTooLarge, "error")
}

// checkAnswer POSTs body signed to url and fails t unless the answer has
// status, Content-Type application/json and a JSON object with key.
func checkAnswer(t testing.TB, url string, body []byte, status int, key string) {
	t.Helper()
	a := catalogtest.Send(t, Do(url), http.MethodPost, url, body, true)
	var v map[string]json.RawMessage
	if a.Status != status || a.Header.Get("Content-Type") != "application/json" || json.Unmarshal(a.Body, &v) != nil || v[key] == nil {
		t.Errorf("POST %s (%d bytes): got %d %q %.200s, want the Handler's %d {%q: …}",
			url, len(body), a.Status, a.Header.Get("Content-Type"), a.Body, status, key)
	}
}

// DeadlineTool is the one tool of DeadlineHandler's endpoint.
const DeadlineTool = "deadline"

// deadline is what DeadlineTool answers.
type deadline struct {
	// Set is true when the tool's context had a deadline.
	Set bool `json:"set"`
	// LeftMS is how long it had left, in milliseconds.
	LeftMS int64 `json:"leftMs"`
}

// DeadlineHandler builds an endpoint with Key whose one tool,
// DeadlineTool, answers how long its context had left when it ran: a
// framework's request timeout shows there as the tools' deadline, and
// when it runs out the framework answers in the Handler's place. Closed
// when t ends.
func DeadlineHandler(t testing.TB) *protocol.Handler {
	tool := protocol.NewTool(DeadlineTool, protocol.RiskLow, "Tells how long the call may run.",
		func(ctx context.Context, _ protocol.ToolCall[struct{}]) (deadline, error) {
			d, ok := ctx.Deadline()
			return deadline{Set: ok, LeftMS: time.Until(d).Milliseconds()}, nil
		}, protocol.ReadOnly())
	h, err := protocol.New(protocol.Config{Keys: []string{Key}, Tools: []*protocol.Tool{tool}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// CheckDeadline calls DeadlineTool at url (an endpoint built by
// DeadlineHandler) and fails t when the tool's context ends within
// atLeast: the framework's timeout is then below the tools'.
func CheckDeadline(t testing.TB, url string, atLeast time.Duration) {
	t.Helper()
	target := conformance.Target{Do: Do(url), URL: url, Key: Key}
	r := conformance.CallTool[deadline](t, target, conformance.ToolSample{Tool: DeadlineTool})
	if r.Error != nil || r.Refusal != nil {
		t.Fatalf("%s answered %d %s, want its result", DeadlineTool, r.Status, r.Raw)
	}
	if left := time.Duration(r.Result.LeftMS) * time.Millisecond; r.Result.Set && left < atLeast {
		t.Errorf("the tools' context ends in %v: the framework's timeout answers in the Handler's place then; want it above %v", left, atLeast)
	}
}
