package storetest

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/median-go/median/protocol"
)

// RunHandlers serves signed tool calls through two Handlers built with
// [protocol.New], each with one of the stores newStores returns, and checks
// what the core promises: a call repeated on the other Handler gets the
// first answer byte for byte and its tool runs once; 32 concurrent copies of
// a call spread over both run it once; a different body under the same
// toolCallId is refused 409 invalid_body; a claim whose holder stops
// renewing it (it was closed, as a crashed instance stops) is taken over
// when its lease ends; a tool that runs three leases, ignoring its
// context, runs once while a copy sent after its first lease waits for
// its answer (the Handler renews the claim, through Renew); a copy whose
// request ends while the first still runs is answered execution_failed
// without running the tool.
//
// For a shared store, return two stores on one server, as two instances of
// your service would hold. For a store that lives in one process, return
// the same store twice: the cases then check one instance under
// concurrency.
func RunHandlers(t *testing.T, newStores func(t *testing.T) (protocol.Store, protocol.Store)) {
	t.Helper()
	for _, c := range handlerCases {
		t.Run(c.name, func(t *testing.T) {
			a, b := newStores(t)
			c.run(t, a, b)
		})
	}
}

var handlerCases = []struct {
	name string
	run  func(t *testing.T, a, b protocol.Store)
}{
	{"ReplayOnOtherHandler", testReplayOnOtherHandler},
	{"ConcurrentCopies", testConcurrentCopies},
	{"ExpiredLeaseTakenOver", testHandlerLeaseTakenOver},
	{"SlowToolOutlivesItsLease", testSlowToolOutlivesItsLease},
	{"CopyGivesUpWhenItsRequestEnds", testCopyGivesUp},
}

// Key is the Median key of the Handlers RunHandlers builds.
const Key = "mk_storetest_0123456789abcdefghijklmnopqrstuvwxyz"

// cancelInput and cancelOutput are the test tool's types.
type cancelInput struct {
	OrderID string `json:"orderId"`
}

type cancelOutput struct {
	OrderID string `json:"orderId"`
	Status  string `json:"status"`
	Run     int64  `json:"run"` // which run answered: a second run changes the bytes
}

// counter counts a tool's runs.
type counter struct{ n atomic.Int64 }

// cancelOrder returns a tool that counts its runs and takes a moment, so
// concurrent copies overlap.
func (c *counter) cancelOrder() *protocol.Tool {
	return protocol.NewTool("cancel_order", protocol.RiskHigh, "Cancels an order.",
		func(ctx context.Context, call protocol.ToolCall[cancelInput]) (cancelOutput, error) {
			n := c.n.Add(1)
			time.Sleep(20 * time.Millisecond)
			return cancelOutput{OrderID: call.Input.OrderID, Status: "cancelled", Run: n}, nil
		})
}

// slowRefund returns a tool that counts its runs and takes pause, ignoring
// its context, as a call to a slow payment API may.
func (c *counter) slowRefund(pause time.Duration) *protocol.Tool {
	return protocol.NewTool("refund", protocol.RiskHigh, "Refunds an order.",
		func(_ context.Context, call protocol.ToolCall[cancelInput]) (cancelOutput, error) {
			n := c.n.Add(1)
			time.Sleep(pause)
			return cancelOutput{OrderID: call.Input.OrderID, Status: "refunded", Run: n}, nil
		})
}

// newHandler builds a Handler on store with the test tools, closed when t
// ends. Its store deadline is Deadline, not the default second: the cases
// check that a call runs once, and a loaded machine (or a slow test server)
// may take longer than a second to answer 32 copies at once without being
// wrong.
func newHandler(t *testing.T, store protocol.Store, runs *counter, lease time.Duration) *protocol.Handler {
	t.Helper()
	h, err := protocol.New(protocol.Config{
		Keys:         []string{Key},
		Tools:        []*protocol.Tool{runs.cancelOrder(), runs.slowRefund(3 * slowLease)},
		Store:        store,
		StoreTimeout: Deadline,
		ReplayLease:  lease,
		Logger:       slog.New(slog.DiscardHandler),
	})
	mustNoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// slowLease is the lease of the case whose tool (refund) runs three
// leases: long enough that a renewal due every third of it lands in time
// on a loaded machine.
const slowLease = 3 * Short

// signedCall returns a signed POST of a cancel_order call.
func signedCall(t *testing.T, id, orderID string) protocol.Request {
	t.Helper()
	return signedCallOf(t, "cancel_order", id, orderID)
}

// signedCallOf returns a signed POST of a call of tool.
func signedCallOf(t *testing.T, tool, id, orderID string) protocol.Request {
	t.Helper()
	body := fmt.Appendf(nil, `{"tool":%q,"toolCallId":%q,"input":{"orderId":%q},`+
		`"context":{"conversationId":"conv_1","risk":"high","visitor":{"verified":true,"externalId":"user_7"},"approvedBy":"A teammate"}}`, tool, id, orderID)
	key, err := protocol.ParseKey(Key)
	mustNoError(t, err)
	sig := key.Sign(time.Now(), body)
	return protocol.Request{Method: http.MethodPost, Signature: sig, BodyBytes: body, ContentLength: int64(len(body))}
}

// serve answers req on h under Deadline.
func serve(h *protocol.Handler, req protocol.Request) protocol.Response {
	ctx, cancel := context.WithTimeout(context.Background(), Deadline)
	defer cancel()
	return h.Serve(ctx, req)
}

func testReplayOnOtherHandler(t *testing.T, a, b protocol.Store) {
	var runs counter
	ha, hb := newHandler(t, a, &runs, 0), newHandler(t, b, &runs, 0)
	id := NewID()
	req := signedCall(t, id, "A-1001")

	first := serve(ha, req)
	mustEqual(t, http.StatusOK, first.Status, "first answer: %s", first.Body)
	mustContain(t, string(first.Body), `"status":"cancelled"`)

	again := serve(hb, req)
	mustEqual(t, http.StatusOK, again.Status, "replay: %s", again.Body)
	mustEqual(t, string(first.Body), string(again.Body), "the replay on the other handler must get the first answer byte for byte")
	mustEqual(t, int64(1), runs.n.Load(), "the tool must run once")

	other := serve(hb, signedCall(t, id, "B-2002"))
	mustEqual(t, http.StatusConflict, other.Status, "same toolCallId, different body: %s", other.Body)
	mustContain(t, string(other.Body), `"code":"invalid_body"`)
	mustEqual(t, int64(1), runs.n.Load(), "a conflicting call must not run the tool")
}

func testConcurrentCopies(t *testing.T, a, b protocol.Store) {
	var runs counter
	handlers := []*protocol.Handler{newHandler(t, a, &runs, 0), newHandler(t, b, &runs, 0)}
	req := signedCall(t, NewID(), "A-1001")
	const n = 32
	bodies := make([][]byte, n)
	statuses := make([]int, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			resp := serve(handlers[i%2], req)
			bodies[i], statuses[i] = resp.Body, resp.Status
		})
	}
	close(start)
	wg.Wait()
	mustEqual(t, int64(1), runs.n.Load(), "%d concurrent copies over two handlers must run the tool once", n)
	for i := range n {
		expectEqual(t, http.StatusOK, statuses[i], "copy %d: %s", i, bodies[i])
		expectEqual(t, string(bodies[0]), string(bodies[i]), "copy %d must get the same bytes as copy 0", i)
	}
}

func testHandlerLeaseTakenOver(t *testing.T, a, b protocol.Store) {
	var runs counter
	ha, hb := newHandler(t, a, &runs, Short), newHandler(t, b, &runs, Short)
	req := signedCall(t, NewID(), "A-1001")

	// Handler A verifies the call, which claims it, and then "crashes": it
	// never answers, and stops renewing the claim (Close stops what a
	// Handler runs in the background). B waits out A's lease, then runs
	// the tool itself.
	_, _, ok := ha.Verify(context.Background(), req)
	mustTrue(t, ok, "A must let the first copy through")
	mustNoError(t, ha.Close())
	resp := serve(hb, req)
	mustEqual(t, http.StatusOK, resp.Status, "B after A's lease ended: %s", resp.Body)
	mustEqual(t, int64(1), runs.n.Load(), "B must run the tool once A's lease has ended")

	again := serve(ha, req)
	mustEqual(t, string(resp.Body), string(again.Body), "a later copy on A must get B's answer")
	mustEqual(t, int64(1), runs.n.Load())
}

func testSlowToolOutlivesItsLease(t *testing.T, a, b protocol.Store) {
	var runs counter
	ha, hb := newHandler(t, a, &runs, slowLease), newHandler(t, b, &runs, slowLease)
	req := signedCallOf(t, "refund", NewID(), "A-1001")

	// A runs the tool for three leases; a copy on B arrives after A's first
	// lease would have ended. A renews its claim while the tool runs, so the
	// copy waits for A's answer instead of running the tool again.
	first := make(chan protocol.Response, 1)
	go func() { first <- serve(ha, req) }()
	deadline := time.Now().Add(Deadline)
	for runs.n.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the tool did not start within %s", Deadline)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(3 * slowLease / 2)
	copied := serve(hb, req)
	resp := <-first
	mustEqual(t, http.StatusOK, resp.Status, "A's answer: %s", resp.Body)
	mustContain(t, string(resp.Body), `"status":"refunded"`)
	mustEqual(t, string(resp.Body), string(copied.Body), "the copy sent after the first lease must get A's answer byte for byte")
	mustEqual(t, int64(1), runs.n.Load(), "a tool that outlives its lease must run once")
}

func testCopyGivesUp(t *testing.T, a, b protocol.Store) {
	var runs counter
	ha, hb := newHandler(t, a, &runs, Long), newHandler(t, b, &runs, Long)
	req := signedCall(t, NewID(), "A-1001")

	// A holds the claim and has not answered yet; a copy on B waits for its
	// answer until B's request ends.
	callA, _, ok := ha.Verify(context.Background(), req) // the context carrying A's call
	mustTrue(t, ok, "A must let the first copy through")
	ctx, cancel := context.WithTimeout(context.Background(), Short)
	defer cancel()
	resp := hb.Serve(ctx, req)
	mustEqual(t, http.StatusOK, resp.Status, "a copy whose request ended: %s", resp.Body)
	mustContain(t, string(resp.Body), `"code":"execution_failed"`, "a copy whose request ended")
	mustContain(t, string(resp.Body), "did not run the tool")
	mustEqual(t, int64(0), runs.n.Load(), "the copy must not run the tool")

	// A answers; a later copy on B gets A's answer.
	first := protocol.Answer(callA, cancelOutput{OrderID: "A-1001", Status: "cancelled"}, nil)
	again := serve(hb, req)
	mustEqual(t, string(first.Body), string(again.Body), "a later copy must get A's answer")
	mustEqual(t, int64(0), runs.n.Load())
}
