package testsupport

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that records Fatal and Skip instead of ending
// the test.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper()           {}
func (r *recorder) Fatal(args ...any) { r.fatal = fmt.Sprint(args...) }
func (r *recorder) Skip(args ...any)  { r.skip = fmt.Sprint(args...) }

// TestMissingFailsInCI: a missing component skips locally with the
// install line and fails when CI=true.
func TestMissingFailsInCI(t *testing.T) {
	t.Setenv("CI", "")
	local := &recorder{TB: t}
	Missing(local, "not installed (apt-get install x)")
	if local.fatal != "" || !strings.Contains(local.skip, "apt-get install") {
		t.Fatalf("locally: want a skip with the install line, got fatal %q, skip %q", local.fatal, local.skip)
	}
	t.Setenv("CI", "true")
	ci := &recorder{TB: t}
	Missing(ci, "not installed (apt-get install x)")
	if ci.skip != "" || !strings.Contains(ci.fatal, "not installed") || !strings.Contains(ci.fatal, "CI=true") {
		t.Fatalf("with CI=true: want a failure, got fatal %q, skip %q", ci.fatal, ci.skip)
	}
}
