package dynamotest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCIInstallsThePinnedVersion: .ci/run installs the release Version
// names, where Bin looks.
func TestCIInstallsThePinnedVersion(t *testing.T) {
	run, err := os.ReadFile(filepath.Join("..", "..", "..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dynalite@" + Version, `"$HOME/.cache/median-go/dynalite"`} {
		if !strings.Contains(string(run), want) {
			t.Errorf(".ci/run does not hold %s; InstallLine is %s", want, InstallLine)
		}
	}
}

// TestServerLifecycle: the server answers once started, not while paused
// or killed, and again after Resume and Restart on the same port.
func TestServerLifecycle(t *testing.T) {
	s := Start(t)
	port := s.Port
	if err := Ping(s.URL, 2*time.Second); err != nil {
		t.Fatalf("a started server must answer: %v", err)
	}
	s.Pause()
	if err := Ping(s.URL, 300*time.Millisecond); err == nil {
		t.Fatal("a paused server must not answer")
	}
	s.Resume()
	if err := Ping(s.URL, 5*time.Second); err != nil {
		t.Fatalf("a resumed server must answer: %v", err)
	}
	s.Kill()
	if err := Ping(s.URL, 300*time.Millisecond); err == nil {
		t.Fatal("a killed server must not answer")
	}
	s.Restart()
	if s.Port != port {
		t.Fatalf("Restart moved the server from port %d to %d", port, s.Port)
	}
	if err := Ping(s.URL, 2*time.Second); err != nil {
		t.Fatalf("a restarted server must answer: %v", err)
	}
}
