package testsupport

import (
	"testing"
)

func TestEventuallyWaits(t *testing.T) {
	n := 0
	Eventually(t, "the third ask", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Fatalf("asked %d times, want 3", n)
	}
}
