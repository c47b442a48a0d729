package testsupport

import (
	"os"
	"testing"
)

// Missing ends a test that needs a component the machine lacks (a Redis
// or PostgreSQL server, Chromium): locally it skips with msg, which should
// say how to install the component; when the environment variable CI is
// "true" it fails instead, so that a CI machine without the component
// cannot pass by skipping.
func Missing(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: a missing component fails the test; .ci/run must install it)")
		return
	}
	t.Skip(msg)
}
