package testsupport

import (
	"strings"
	"sync"
	"testing"
)

// TestBufferConcurrent: writes from many goroutines all arrive, whole,
// while another goroutine reads (the race detector checks the locking).
func TestBufferConcurrent(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("line\n"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := strings.Count(b.String(), "line\n"); got != 800 {
		t.Fatalf("want 800 lines, got %d", got)
	}
}
