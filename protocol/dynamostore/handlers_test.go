package dynamostore_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/dynamostore"
	"github.com/median-go/median/protocol/storetest"
)

// TestTwoHandlersRunEachCallOnce: two Handlers, standing for two Lambda
// instances, each with its own client on one table; each of 200 calls is
// sent 8 times at once, spread over both. Every call runs its tool once and
// all 8 copies get the same bytes.
func TestTwoHandlersRunEachCallOnce(t *testing.T) {
	srv, a := startWithTable(t)
	b := newClient(t, srv.URL)
	var mu sync.Mutex
	runs := map[string]int{}
	tool := protocol.NewTool("refund_order", protocol.RiskLow, "Refunds an order.",
		func(ctx context.Context, call protocol.ToolCall[orderInput]) (map[string]any, error) {
			mu.Lock()
			runs[call.ToolCallID]++
			n := runs[call.ToolCallID]
			mu.Unlock()
			time.Sleep(5 * time.Millisecond) // the copies overlap the run
			return map[string]any{"orderId": call.Input.OrderID, "refunded": true, "run": n}, nil
		})
	// A store deadline of seconds: the test is about running once, and
	// 1,600 requests at once on a shared machine may be slow.
	cfg := protocol.Config{StoreTimeout: storetest.Deadline, Tools: []*protocol.Tool{tool}}
	handlers := []*protocol.Handler{
		newHandler(t, newStore(t, a, dynamostore.Options{}), cfg).h,
		newHandler(t, newStore(t, b, dynamostore.Options{}), cfg).h,
	}

	const calls, copies, atOnce = 200, 8, 10 // atOnce calls in flight, each with its copies
	ids := make([]string, calls)
	bodies := make([][copies]string, calls)
	statuses := make([][copies]int, calls)
	sem := make(chan struct{}, atOnce)
	var wg sync.WaitGroup
	for i := range calls {
		ids[i] = storetest.NewID()
		req := signedCall(t, "refund_order", ids[i], fmt.Sprintf("A-%04d", i))
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			start := make(chan struct{})
			var copiesWG sync.WaitGroup
			for j := range copies {
				copiesWG.Go(func() {
					<-start
					resp := serve(handlers[j%2], req)
					bodies[i][j], statuses[i][j] = string(resp.Body), resp.Status
				})
			}
			close(start)
			copiesWG.Wait()
		})
	}
	wg.Wait()

	for i, id := range ids {
		require.Equal(t, 1, runs[id], "call %d ran its tool %d times", i, runs[id])
		for j := range copies {
			require.Equal(t, http.StatusOK, statuses[i][j], "call %d, copy %d: %s", i, j, bodies[i][j])
			require.Equal(t, bodies[i][0], bodies[i][j], "call %d, copy %d must get the bytes copy 0 got", i, j)
		}
		require.Contains(t, bodies[i][0], `"refunded":true`, "call %d", i)
	}
}

// lostReply is an error that makes the SDK send a request again, standing
// for a reply lost on the way back.
type lostReply struct{}

func (lostReply) Error() string        { return "the reply was lost" }
func (lostReply) RetryableError() bool { return true }

// TestClaimWhoseReplyWasLost: when the reply to a claim's PutItem is lost
// after DynamoDB wrote it, the SDK sends it again and the copy fails its
// condition on the claim the first wrote. The claim's token tells the
// store that claim is its own: acquired, not another caller's running
// call (which would hold the call until the lease ended).
func TestClaimWhoseReplyWasLost(t *testing.T) {
	var lose atomic.Int64
	count := &roundTrips{}
	loseOne := func(stack *middleware.Stack) error {
		return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("medianLoseAReply",
			func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleDeserialize(ctx, in)
				if err == nil && lose.Add(-1) == 0 {
					return out, md, lostReply{}
				}
				return out, md, err
			}), middleware.After)
	}
	_, c := startWithTable(t, count.add, loseOne)
	s := newStore(t, c, dynamostore.Options{})
	count.take()

	lose.Store(1)
	k := key("lost")
	st, _, err := s.Claim(context.Background(), k, fp, time.Minute)
	require.NoError(t, err)
	require.Equal(t, []string{"PutItem", "PutItem", "GetItem"}, count.take(), "the PutItem was sent again, and found its own claim")
	require.Equal(t, protocol.ClaimAcquired, st, "the claim the first attempt wrote is this call's")
	st, _, err = s.Claim(context.Background(), k, fp, time.Minute)
	require.NoError(t, err)
	require.Equal(t, protocol.ClaimRunning, st, "to any other Claim it is a running call")
	count.take()

	lose.Store(1)
	evicted, err := s.Save(context.Background(), k, fp, answerOf("kept"), time.Minute)
	require.NoError(t, err, "a Save sent again finds its own answer: the first answer wins, no error")
	require.Zero(t, evicted)
	require.Equal(t, []string{"PutItem", "PutItem"}, count.take())
	_, got, err := s.Claim(context.Background(), k, fp, time.Minute)
	require.NoError(t, err)
	require.Equal(t, string(answerOf("kept")), string(got))
}
