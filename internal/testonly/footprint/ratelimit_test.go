package footprint

import (
	"strings"
	"testing"
)

// TestMemoryLimitLoadsNoRedis: an app that limits calls in memory
// (protocol/ratelimit) loads no Redis client, with the package's tests too;
// the Redis backend lives in protocol/ratelimit/redislimit.
func TestMemoryLimitLoadsNoRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	loaded := strings.Fields(goList(t, "-deps", "-test", "-f", "{{.ImportPath}}", module+"/protocol/ratelimit"))
	if len(loaded) < 20 {
		t.Fatalf("go list found only %d packages; the check itself is broken", len(loaded))
	}
	var bad []string
	for _, pkg := range loaded {
		if strings.HasPrefix(pkg, "github.com/redis/") || strings.HasPrefix(pkg, "github.com/go-redis/") {
			bad = append(bad, pkg)
		}
	}
	if msg := forbidden("protocol/ratelimit", loaded); msg != "" || len(bad) > 0 {
		t.Fatalf("protocol/ratelimit loads heavy packages: %v\n%s", bad, msg)
	}
}
