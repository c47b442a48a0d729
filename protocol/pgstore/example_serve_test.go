package pgstore_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/pgstore"
)

// Every instance points at the same database: at start each runs the
// migration (safe at once), then serves with the store. A call replayed on
// any instance gets the first answer, and its tool runs once.
func Example() {
	if err := run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

// run migrates the database and serves the endpoint with the Postgres store
// until the server fails; the pool is closed on the way out.
func run(ctx context.Context) error {
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL")) // postgres://app:secret@db:5432/shop
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := pgstore.Migrate(ctx, pool, pgstore.Options{}); err != nil {
		return err
	}
	store, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		return err
	}
	h, err := protocol.New(protocol.Config{Store: store, Tools: []*protocol.Tool{cancelOrderTool()}})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	h.Mount(mux, "/api/median")
	srv := &http.Server{Addr: ":8080", Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 30 * time.Second}
	return srv.ListenAndServe()
}

type orderInput struct {
	OrderID string `json:"orderId"`
}

// cancelOrderTool cancels in its call's transaction: the update commits
// with the answer that reports it, or not at all.
func cancelOrderTool() *protocol.Tool {
	return protocol.NewTool("cancel_order", protocol.RiskHigh, "Cancel an order by its id.",
		func(ctx context.Context, call protocol.ToolCall[orderInput]) (string, error) {
			tx, ok := pgstore.Tx(ctx)
			if !ok {
				return "", fmt.Errorf("cancel_order needs the Postgres store")
			}
			tag, err := tx.Exec(ctx, "UPDATE orders SET status = 'cancelled' WHERE id = $1 AND status <> 'cancelled'", call.Input.OrderID)
			if err != nil {
				return "", err
			}
			if tag.RowsAffected() == 0 {
				// A refusal: the transaction rolls back, the answer is kept.
				return "", protocol.Refuse("not_cancellable", "The order is already cancelled or does not exist.")
			}
			return "cancelled", nil
		})
}
