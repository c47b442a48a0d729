package catalog

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/redisstore"
)

// newRedisStore connects to url and checks that Redis answers.
func newRedisStore(url string) (protocol.Store, func() error, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, nil, fmt.Errorf("%s is not a Redis URL (want redis://[user:password@]host:port/db): %w", RedisURLEnv, err)
	}
	client := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, nil, fmt.Errorf("redis at %s does not answer (check %s): %w", opt.Addr, RedisURLEnv, err)
	}
	return redisstore.New(client, redisstore.Options{}), client.Close, nil
}
