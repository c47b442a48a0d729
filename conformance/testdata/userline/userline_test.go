// Package userline is run by conformance's TestFailuresPointAtTheUsersLine
// in a go test of its own: its tests fail on purpose, and the report must
// name the lines marked "want:" here, not conformance's files.
package userline

import (
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/internal/testonly/fixture"
	"github.com/median-go/median/protocol"
)

const key = "mk_test_0123456789abcdef0123456789abcdef"

// target is an endpoint that accepts stale timestamps (a broken one), seen
// as a deployed URL would be.
func target(t *testing.T) conformance.Target {
	if os.Getenv("MEDIAN_USERLINE") == "" {
		t.Skip("fails on purpose: run by conformance's TestFailuresPointAtTheUsersLine")
	}
	h, err := protocol.New(protocol.Config{Keys: []string{key}, Tools: fixture.Tools(),
		Tolerance: 100 * time.Hour, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	tg := conformance.HandlerTarget(h, "/api/median", key)
	tg.Deployed = true
	return tg
}

func TestRun(t *testing.T) {
	conformance.Run(t, target(t)) // want: Run
}

func TestCallTool(t *testing.T) {
	conformance.CallTool[int](t, target(t), conformance.ToolSample{Tool: "echo", Input: map[string]string{"message": "hi"}}) // want: CallTool
}
