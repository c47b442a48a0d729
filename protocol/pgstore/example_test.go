package pgstore_test

import (
	"context"
	"fmt"
	"strings"

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
