package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/pgstore"
)

// A tool's email goes out only once the cancellation committed: the tool
// writes an outbox row in the call's transaction, and a worker sends what
// committed rows say.
func ExampleTx() {
	_ = protocol.NewTool("cancel_order", protocol.RiskHigh, "Cancel an order by its id.",
		func(ctx context.Context, call protocol.ToolCall[orderInput]) (string, error) {
			tx, _ := pgstore.Tx(ctx)
			if _, err := tx.Exec(ctx, "UPDATE orders SET status = 'cancelled' WHERE id = $1", call.Input.OrderID); err != nil {
				return "", err
			}
			// Not an email sent here: it could not be unsent if the
			// transaction rolled back.
			_, err := tx.Exec(ctx, "INSERT INTO outbox (kind, order_id, tool_call_id) VALUES ('cancel_email', $1, $2)", call.Input.OrderID, call.ToolCallID)
			return "cancelled", err
		})
}

// A tool reads through Querier: on the pool while it has not begun its
// call's transaction (the call then holds no connection while the tool
// runs, so tools that read cannot starve the pool), in that transaction
// once it has (it then sees its own writes, and never waits for a second
// connection). The same function serves the application's own handlers,
// where Querier gives the pool.
func ExampleQuerier() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	orderStatus := func(ctx context.Context, id string) (string, error) {
		var status string
		err := pgstore.Querier(ctx, pool).QueryRow(ctx, "SELECT status FROM orders WHERE id = $1", id).Scan(&status)
		return status, err
	}
	lookup := protocol.NewTool("lookup_order", protocol.RiskLow, "Look an order up by its id.",
		func(ctx context.Context, call protocol.ToolCall[orderInput]) (string, error) {
			return orderStatus(ctx, call.Input.OrderID) // on the pool: no transaction was begun
		}, protocol.ReadOnly())
	refund := protocol.NewTool("refund_order", protocol.RiskHigh, "Refund a cancelled order by its id.",
		func(ctx context.Context, call protocol.ToolCall[orderInput]) (string, error) {
			tx, ok := pgstore.Tx(ctx) // begins the call's transaction: the refund commits with its answer
			if !ok {
				return "", errors.New("refund_order needs the Postgres store")
			}
			status, err := orderStatus(ctx, call.Input.OrderID) // in the transaction, on its connection
			if err != nil {
				return "", err
			}
			if status != "cancelled" {
				return "", protocol.Refuse("not_cancelled", "Only a cancelled order can be refunded.")
			}
			_, err = tx.Exec(ctx, "UPDATE orders SET status = 'refunded' WHERE id = $1", call.Input.OrderID)
			return "refunded", err
		})
	_ = []*protocol.Tool{lookup, refund}
}

// Teams that apply migrations with their own tool take the SQL instead of
// calling Migrate.
func ExampleMigrationSQL() {
	sql := pgstore.MigrationSQL(pgstore.Options{Schema: "app", Table: "median_calls"})
	for line := range strings.Lines(sql) {
		if strings.HasPrefix(line, "CREATE") {
			fmt.Print(line)
		}
	}
	// Output:
	// CREATE SCHEMA IF NOT EXISTS "app";
	// CREATE TABLE IF NOT EXISTS "app"."median_calls" (
	// CREATE INDEX IF NOT EXISTS "median_calls_expires_at_idx" ON "app"."median_calls" (expires_at);
}
