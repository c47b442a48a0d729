package testsupport

import (
	"testing"
	"time"
)

// Eventually waits until cond holds, asking every 10 ms, and fails the test
// naming what when it still does not after 10 s: for what a background
// goroutine (a key file's reader, a server starting) makes true soon.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
