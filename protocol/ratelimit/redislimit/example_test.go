package redislimit_test

import (
	"time"

	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/ratelimit"
	"github.com/median-go/median/protocol/ratelimit/redislimit"
	"github.com/redis/go-redis/v9"
)

// Every instance behind one endpoint counts in the same Redis: 20 calls
// per conversation per minute in all. When Redis does not answer within
// 200 ms the call runs unlimited and a warning is logged.
func ExampleNew() {
	opt, err := redis.ParseURL("redis://127.0.0.1:6379/0")
	if err != nil {
		panic(err)
	}
	opt.ContextTimeoutEnabled = true // the limit's deadline reaches the socket
	backend, err := redislimit.New(redis.NewClient(opt), redislimit.Options{})
	if err != nil {
		panic(err)
	}
	limit, err := ratelimit.New(ratelimit.Config{
		Limit:   ratelimit.Limit{Calls: 20, Per: time.Minute},
		Backend: backend,
		Timeout: 200 * time.Millisecond,
	})
	if err != nil {
		panic(err)
	}
	_ = protocol.Config{Interceptors: []protocol.Interceptor{limit}}
}
