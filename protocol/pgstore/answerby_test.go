package pgstore_test

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/internal/testonly/pgtest"
	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/pgstore"
	"github.com/median-go/median/protocol/storetest"
)

// TestAnswerByInTheTransaction: a tool whose statement in the call's
// transaction is still running at Request.AnswerBy (as on Lambda) has it
// cancelled with its ctx; the call is answered timed out, its writes roll
// back, and the answer is kept: a repeat on another instance gets it at
// once, without running the tool again.
func TestAnswerByInTheTransaction(t *testing.T) {
	srv := pgtest.Start(t)
	pool := newPool(t, srv.URL)
	opts := freshTable(t, pool)
	_, err := pool.Exec(context.Background(), "CREATE TABLE cancellations (order_id text NOT NULL, tool_call_id text PRIMARY KEY)")
	require.NoError(t, err)
	var runs atomic.Int64
	slow := protocol.NewTool("cancel_order", protocol.RiskLow, "Cancels an order, slowly.",
		func(ctx context.Context, call protocol.ToolCall[cancelInput]) (string, error) {
			runs.Add(1)
			tx, _ := pgstore.Tx(ctx)
			if _, err := tx.Exec(ctx, "INSERT INTO cancellations VALUES ($1, $2)", call.Input.OrderID, call.ToolCallID); err != nil {
				return "", err
			}
			if _, err := tx.Exec(ctx, "SELECT pg_sleep(10)"); err != nil {
				return "", err
			}
			return "cancelled", nil
		})
	handler := func() *protocol.Handler {
		h, err := protocol.New(protocol.Config{Keys: []string{storetest.Key}, Store: newStore(t, newPool(t, srv.URL), opts),
			Logger: slog.New(slog.DiscardHandler), Tools: []*protocol.Tool{slow}})
		require.NoError(t, err)
		return h
	}
	id := storetest.NewID()
	req := signed(t, "cancel_order", id, cancelInput{OrderID: "A-1"})
	req.AnswerBy = time.Now().Add(300 * time.Millisecond)
	first := serve(handler(), req)
	assert.Equal(t, http.StatusOK, first.Status)
	assert.JSONEq(t, `{"error":{"code":"execution_failed","message":"tool cancel_order timed out: it had not finished when the request had to be answered"}}`, string(first.Body))

	start := time.Now()
	again := serve(handler(), signed(t, "cancel_order", id, cancelInput{OrderID: "A-1"}))
	assert.Equal(t, string(first.Body), string(again.Body), "the repeat gets the kept answer")
	assert.Less(t, time.Since(start), 5*time.Second, "the repeat did not wait for the claim's lease")
	assert.Equal(t, int64(1), runs.Load(), "the tool ran once")
	assert.Equal(t, 0, cancellations(t, pool, id), "its writes rolled back")
}
