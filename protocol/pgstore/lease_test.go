package pgstore_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/pgstore"
	"github.com/median-go/median/protocol/storetest"
)

// TestSlowToolRunsOnce: a tool that writes in its call's transaction,
// ignores its context and runs three times its claim's lease runs once
// when a copy of its call reaches another instance after the lease: from
// its first Tx the claim is its transaction's connection's, however long.
// (A tool that does not ask for its transaction keeps its claim by the
// core's renewals, as on every store: storetest.RunHandlers checks it,
// through RunClaimed in TestTwoInstances and through Claim and Save in
// TestTwoInstancesClaimAndSave.)
func TestSlowToolRunsOnce(t *testing.T) {
	const (
		lease = 500 * time.Millisecond
		runs  = 3 * lease
		copy  = lease + lease/2 // after the lease, before the tool returns
	)
	b := newBench(t)
	var ran atomic.Int64
	slow := protocol.NewTool("refund_order", protocol.RiskLow, "Refunds through a slow payment API.",
		func(ctx context.Context, call protocol.ToolCall[cancelInput]) (string, error) {
			ran.Add(1)
			tx, _ := pgstore.Tx(ctx)
			if _, err := tx.Exec(ctx, "INSERT INTO cancellations VALUES ($1, $2)", call.Input.OrderID, call.ToolCallID); err != nil {
				return "", err
			}
			time.Sleep(runs) // the payment API, which does not heed ctx
			return "refunded", nil
		})
	handler := func() *protocol.Handler {
		h, err := protocol.New(protocol.Config{
			Keys: []string{storetest.Key}, Store: newStore(t, newPool(t, b.srv.URL), b.opts), ReplayLease: lease,
			Logger: slog.New(slog.DiscardHandler), Tools: []*protocol.Tool{slow},
		})
		require.NoError(t, err)
		return h
	}
	a, other := handler(), handler()
	id := storetest.NewID()
	req := signed(t, "refund_order", id, cancelInput{OrderID: "A-1001"})
	first := make(chan protocol.Response, 1)
	go func() { first <- serve(a, req) }()
	time.Sleep(copy)
	second := serve(other, req)
	got := <-first
	require.Equal(t, `{"result":"refunded"}`, string(got.Body))
	require.Equal(t, string(got.Body), string(second.Body), "the copy gets the first answer")
	require.Equal(t, int64(1), ran.Load(), "the tool ran once")
	require.Equal(t, 1, b.cancellations(t, id), "its write committed once")
}
