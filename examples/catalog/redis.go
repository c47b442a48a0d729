package catalog

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/redisstore"
)

// redisTimeout bounds each of go-redis's own waits (dial, read, write, a
// free connection). The core already gives each store call a deadline
// (protocol.Config.StoreTimeout, 1 s), and ContextTimeoutEnabled lets that
// deadline reach the socket; these keep go-redis from waiting longer on its
// own (its defaults are 5 s to dial, 3 s to read, with 3 retries: 15 s
// before a call fails against a frozen Redis). A call the store cannot
// record in time is answered execution_failed without running the tool,
// and Median does not retry, so failing fast is the right trade.
const redisTimeout = 500 * time.Millisecond

// newRedisStore connects to url and checks that Redis answers.
func newRedisStore(url string) (protocol.Store, func() error, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, nil, fmt.Errorf("%s is not a Redis URL (want redis://[user:password@]host:port/db): %w", RedisURLEnv, err)
	}
	opt.ContextTimeoutEnabled = true // required by redisstore.New
	opt.DialTimeout = redisTimeout
	opt.ReadTimeout = redisTimeout
	opt.WriteTimeout = redisTimeout
	opt.PoolTimeout = redisTimeout
	opt.MaxRetries = 1 // one more try on a broken pooled connection, within the deadline
	client := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, nil, fmt.Errorf("redis at %s does not answer (check %s): %w", opt.Addr, RedisURLEnv, err)
	}
	store, err := redisstore.New(client, redisstore.Options{})
	if err != nil {
		_ = client.Close()
		return nil, nil, err
	}
	return store, client.Close, nil
}
