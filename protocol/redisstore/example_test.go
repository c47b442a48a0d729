package redisstore_test

import (
	"context"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/redisstore"
	"github.com/redis/go-redis/v9"
)

// Every instance behind the load balancer points at the same Redis, so a
// call replayed on any of them gets the first answer and its tool runs once.
func Example() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

// run serves the endpoint with a Redis store until the server fails; the
// client is closed on the way out.
func run() error {
	opt, err := redis.ParseURL(os.Getenv("MEDIAN_REDIS_URL")) // e.g. redis://localhost:6379/0
	if err != nil {
		return err
	}
	// The core gives each store call a deadline (Config.StoreTimeout, 1 s):
	// let it reach the socket, and keep go-redis's own waits short.
	opt.ContextTimeoutEnabled = true
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout, opt.PoolTimeout = 500*time.Millisecond, 500*time.Millisecond, 500*time.Millisecond, 500*time.Millisecond
	opt.MaxRetries = 1
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	store, err := redisstore.New(rdb, redisstore.Options{})
	if err != nil {
		return err
	}
	type cancelInput struct {
		OrderID string `json:"orderId"`
	}
	cancelOrder := protocol.NewTool("cancel_order", protocol.RiskHigh, "Cancels an order that has not shipped.",
		func(ctx context.Context, call protocol.ToolCall[cancelInput]) (map[string]string, error) {
			return map[string]string{"orderId": call.Input.OrderID, "status": "cancelled"}, nil
		})

	h, err := protocol.New(protocol.Config{
		Tools: []*protocol.Tool{cancelOrder},
		Store: store,
	})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	h.Mount(mux, "/median")
	srv := &http.Server{Addr: ":8080", Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 30 * time.Second}
	return srv.ListenAndServe()
}
