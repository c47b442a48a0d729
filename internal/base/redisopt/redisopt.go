// Package redisopt reads what the Redis packages (protocol/redisstore,
// protocol/ratelimit/redislimit) must know of a go-redis client before
// they accept it. Only those packages import it, so a user of the
// in-memory store never loads go-redis.
//
// It is a leaf of the core (internal/base); it imports no package of the
// module, so the core and every package above it can import it
// (internal/testonly/surface holds it to protocol at most).
package redisopt

import "github.com/redis/go-redis/v9"

// ContextTimeoutEnabled reports the client's ContextTimeoutEnabled option
// when its type tells (a *redis.Client, failover clients included, a
// *redis.ClusterClient or a *redis.Ring); known is false for another
// implementation of redis.UniversalClient. Without the option go-redis
// ignores a context's deadline on the socket, so a frozen Redis would hold
// a call for ReadTimeout × retries.
func ContextTimeoutEnabled(client redis.UniversalClient) (enabled, known bool) {
	switch c := client.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled, true
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled, true
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled, true
	}
	return false, false
}
