package redisopt

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

// other is a redis.UniversalClient of a type ContextTimeoutEnabled does not
// know.
type other struct{ redis.UniversalClient }

func TestContextTimeoutEnabled(t *testing.T) {
	const addr = "127.0.0.1:1" // nothing is dialled: only the options are read
	for _, on := range []bool{false, true} {
		clients := map[string]redis.UniversalClient{
			"Client":         redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: on}),
			"ClusterClient":  redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}, ContextTimeoutEnabled: on}),
			"Ring":           redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": addr}, ContextTimeoutEnabled: on}),
			"FailoverClient": redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{addr}, ContextTimeoutEnabled: on}),
		}
		for name, c := range clients {
			enabled, known := ContextTimeoutEnabled(c)
			if !known || enabled != on {
				t.Errorf("%s with ContextTimeoutEnabled %v: got enabled %v, known %v", name, on, enabled, known)
			}
			_ = c.Close()
		}
	}
	if _, known := ContextTimeoutEnabled(other{}); known {
		t.Error("an unknown client type: want known false")
	}
}
