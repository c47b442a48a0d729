package pgstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/internal/testonly/pgtest"
	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/pgstore"
	"github.com/median-go/median/protocol/storetest"
)

// cancelInput is the input of the test's cancel_order tool.
type cancelInput struct {
	OrderID string `json:"orderId"`
	// Then says what the tool does after its write: "" returns a result,
	// "error" an error, "refuse" a refusal, "panic" panics, "commit" tries
	// to commit the transaction itself, "break" runs a failing statement
	// and returns a result anyway, "wait" waits for the test's signal.
	Then string `json:"then,omitempty"`
}

// bench is a database with an orders table and Handlers whose
// cancel_order tool writes to it inside the call's transaction.
type bench struct {
	srv     *pgtest.Server
	pool    *pgxpool.Pool
	opts    pgstore.Options
	runs    atomic.Int64
	commit  atomic.Value  // the error a "commit" tool's Commit returned
	inTx    chan struct{} // receives once a "wait" tool has written
	release chan struct{} // closed to let "wait" tools return
}

func newBench(t *testing.T) *bench {
	t.Helper()
	b := &bench{srv: pgtest.Start(t), inTx: make(chan struct{}, 16), release: make(chan struct{})}
	b.pool = newPool(t, b.srv.URL)
	b.opts = freshTable(t, b.pool)
	_, err := b.pool.Exec(context.Background(), "CREATE TABLE cancellations (order_id text NOT NULL, tool_call_id text PRIMARY KEY)")
	require.NoError(t, err)
	return b
}

// cancelOrder is the tool: it records the cancellation in the call's
// transaction, then does what the input says.
func (b *bench) cancelOrder() *protocol.Tool {
	return protocol.NewTool("cancel_order", protocol.RiskLow, "Cancels an order.",
		func(ctx context.Context, call protocol.ToolCall[cancelInput]) (map[string]string, error) {
			b.runs.Add(1)
			tx, ok := pgstore.Tx(ctx)
			if !ok {
				return nil, errors.New("no transaction on the tool's context")
			}
			if _, err := tx.Exec(ctx, "INSERT INTO cancellations VALUES ($1, $2)", call.Input.OrderID, call.ToolCallID); err != nil {
				return nil, err
			}
			switch call.Input.Then {
			case "error":
				return nil, protocol.AgentErrorf("the payment provider said no")
			case "refuse":
				return nil, protocol.Refuse("order_shipped", "The order has shipped.")
			case "panic":
				panic("the tool broke")
			case "commit":
				if err := tx.Commit(ctx); err != nil {
					b.commit.Store(err)
					return nil, err
				}
			case "break":
				_, _ = tx.Exec(ctx, "SELECT 1/0")
			case "wait":
				b.inTx <- struct{}{}
				<-b.release
			}
			return map[string]string{"orderId": call.Input.OrderID, "status": "cancelled"}, nil
		})
}

// handler is a Handler on a new pool of the bench's database: one
// instance.
func (b *bench) handler(t *testing.T) *protocol.Handler {
	t.Helper()
	h, err := protocol.New(protocol.Config{
		Keys:   []string{storetest.Key},
		Store:  newStore(t, newPool(t, b.srv.URL), b.opts),
		Logger: slog.New(slog.DiscardHandler),
		Tools:  []*protocol.Tool{b.cancelOrder()},
	})
	require.NoError(t, err)
	return h
}

// cancellations counts the rows the tool wrote for id.
func (b *bench) cancellations(t *testing.T, id string) int {
	t.Helper()
	return cancellations(t, b.pool, id)
}

// cancellations counts the rows of the cancellations table on pool that
// the call id wrote.
func cancellations(t *testing.T, pool *pgxpool.Pool, id string) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM cancellations WHERE tool_call_id = $1", id).Scan(&n))
	return n
}

// signed returns a signed call of tool with input.
func signed(t testing.TB, tool, id string, input any) protocol.Request {
	t.Helper()
	in, err := json.Marshal(input)
	require.NoError(t, err)
	body := fmt.Appendf(nil, `{"tool":%q,"toolCallId":%q,"input":%s,`+
		`"context":{"conversationId":"conv_1","risk":"low","visitor":{"verified":false}}}`, tool, id, in)
	key, err := protocol.ParseKey(storetest.Key)
	require.NoError(t, err)
	return protocol.Request{Method: http.MethodPost, Signature: key.Sign(time.Now(), body), BodyBytes: body, ContentLength: int64(len(body))}
}

func serve(h *protocol.Handler, req protocol.Request) protocol.Response {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return h.Serve(ctx, req)
}

func TestResultCommitsWritesAndAnswer(t *testing.T) {
	b := newBench(t)
	h := b.handler(t)
	id := storetest.NewID()
	req := signed(t, "cancel_order", id, cancelInput{OrderID: "A-1001"})
	first := serve(h, req)
	require.JSONEq(t, `{"result":{"orderId":"A-1001","status":"cancelled"}}`, string(first.Body))
	require.Equal(t, 1, b.cancellations(t, id), "the tool's write committed")
	again := serve(b.handler(t), req)
	require.Equal(t, string(first.Body), string(again.Body), "another instance replays the first answer byte for byte")
	require.Equal(t, int64(1), b.runs.Load(), "the tool ran once")
	require.Equal(t, 1, b.cancellations(t, id))
}

func TestFailureRollsBackWritesAndKeepsTheAnswer(t *testing.T) {
	b := newBench(t)
	h := b.handler(t)
	for _, then := range []string{"error", "refuse", "panic", "commit"} {
		t.Run(then, func(t *testing.T) {
			b.runs.Store(0)
			id := storetest.NewID()
			req := signed(t, "cancel_order", id, cancelInput{OrderID: "A-1001", Then: then})
			first := serve(h, req)
			require.Equal(t, http.StatusOK, first.Status, "%s", first.Body)
			switch then {
			case "refuse":
				require.Contains(t, string(first.Body), `"reason":"order_shipped"`)
			case "panic":
				require.Contains(t, string(first.Body), "failed unexpectedly")
			case "commit":
				// The store's refusal of the tool's Commit is not meant for
				// the agent: it reads the tool's name and a reference.
				require.Contains(t, string(first.Body), "tool cancel_order failed (reference ")
				require.ErrorContains(t, b.commit.Load().(error), "committed or rolled back by the store")
			default:
				require.Contains(t, string(first.Body), "the payment provider said no")
			}
			require.Zero(t, b.cancellations(t, id), "the tool's write was rolled back")
			again := serve(h, req)
			require.Equal(t, string(first.Body), string(again.Body), "the answer is kept all the same")
			require.Equal(t, int64(1), b.runs.Load(), "a repeat does not run the tool again")
		})
	}
}

func TestFailedCommitSendsNoResult(t *testing.T) {
	// The tool's statement fails (its transaction is aborted) and it
	// returns a result anyway: nothing can commit, so the result must not
	// go out, and the call is not kept: a repeat runs it again.
	b := newBench(t)
	h := b.handler(t)
	id := storetest.NewID()
	resp := serve(h, signed(t, "cancel_order", id, cancelInput{OrderID: "A-1001", Then: "break"}))
	require.Contains(t, string(resp.Body), `"code":"execution_failed"`, "%s", resp.Body)
	require.Contains(t, string(resp.Body), "rolled back and nothing was changed")
	require.Zero(t, b.cancellations(t, id))
	require.Zero(t, rows(t, b.pool, b.opts, "answer IS NOT NULL OR expires_at > now()"), "no answer is kept, and no claim holds copies")

	resp = serve(h, signed(t, "cancel_order", id, cancelInput{OrderID: "A-1001"}))
	require.Contains(t, string(resp.Body), `"status":"cancelled"`, "the next copy runs and commits: %s", resp.Body)
	require.Equal(t, 1, b.cancellations(t, id))
	require.Equal(t, int64(2), b.runs.Load())
}

// TestFailedStatementIsNamedInTheLog: when the commit fails because the
// tool went on after a failed statement, the log says so and what to do,
// not only PostgreSQL's "current transaction is aborted".
func TestFailedStatementIsNamedInTheLog(t *testing.T) {
	b := newBench(t)
	var log bytes.Buffer
	h, err := protocol.New(protocol.Config{
		Keys:   []string{storetest.Key},
		Store:  newStore(t, newPool(t, b.srv.URL), b.opts),
		Logger: slog.New(slog.NewTextHandler(&log, nil)),
		Tools:  []*protocol.Tool{b.cancelOrder()},
	})
	require.NoError(t, err)
	resp := serve(h, signed(t, "cancel_order", storetest.NewID(), cancelInput{OrderID: "A-1001", Then: "break"}))
	require.Contains(t, string(resp.Body), `"code":"execution_failed"`, "%s", resp.Body)
	assert.Contains(t, log.String(), "a statement the tool ran in pgstore.Tx failed and the tool returned a result all the same")
	assert.Contains(t, log.String(), "SQLSTATE 25P02", "PostgreSQL's own error stays in the chain")
}

func TestCopyWaitsForTheCommit(t *testing.T) {
	b := newBench(t)
	ha, hb := b.handler(t), b.handler(t)
	id := storetest.NewID()
	req := signed(t, "cancel_order", id, cancelInput{OrderID: "A-1001", Then: "wait"})
	var first protocol.Response
	done := make(chan struct{})
	go func() {
		defer close(done)
		first = serve(ha, req)
	}()
	<-b.inTx // A has written inside its transaction and waits

	copied := make(chan protocol.Response, 1)
	go func() { copied <- serve(hb, req) }()
	select {
	case resp := <-copied:
		t.Fatalf("the copy was answered before the first committed: %s", resp.Body)
	case <-time.After(1500 * time.Millisecond): // longer than the store deadline (1 s): the copy must keep asking, not fail
	}
	close(b.release)
	<-done
	second := <-copied
	require.Contains(t, string(first.Body), `"status":"cancelled"`)
	require.Equal(t, string(first.Body), string(second.Body), "the copy gets the first answer's bytes")
	require.Equal(t, int64(1), b.runs.Load(), "the tool ran once")
	require.Equal(t, 1, b.cancellations(t, id), "the write happened once")
}

func TestManyCopiesAcrossTwoInstances(t *testing.T) {
	// 200 calls, each sent 8 times at once across two instances on one
	// database: every tool runs once, every copy gets identical bytes.
	if testing.Short() {
		t.Skip("1,600 requests")
	}
	b := newBench(t)
	handlers := []*protocol.Handler{b.handler(t), b.handler(t)}
	const calls, copies = 200, 8
	ids := make([]string, calls)
	bodies := make([][copies]string, calls)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32) // requests in flight
	for c := range calls {
		ids[c] = storetest.NewID()
		req := signed(t, "cancel_order", ids[c], cancelInput{OrderID: fmt.Sprintf("A-%d", c)})
		start := make(chan struct{})
		for k := range copies {
			wg.Go(func() {
				<-start
				sem <- struct{}{}
				defer func() { <-sem }()
				bodies[c][k] = string(serve(handlers[k%2], req).Body)
			})
		}
		close(start)
	}
	wg.Wait()
	require.Equal(t, int64(calls), b.runs.Load(), "every tool ran once")
	var total int
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT count(*) FROM cancellations").Scan(&total))
	require.Equal(t, calls, total, "every write happened once")
	for c := range calls {
		assert.Contains(t, bodies[c][0], `"status":"cancelled"`, "call %d", c)
		for k := range copies {
			assert.Equal(t, bodies[c][0], bodies[c][k], "call %d copy %d", c, k)
		}
	}
}

func TestMiddlewareCallsHaveNoTransaction(t *testing.T) {
	b := newBench(t)
	h := b.handler(t)
	mux := http.NewServeMux()
	h.Mount(mux, "/api/median", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, ok := pgstore.Tx(r.Context())
		protocol.Respond(w, r, map[string]bool{"tx": ok}, nil)
	}))
	id := storetest.NewID()
	req := signed(t, "cancel_order", id, cancelInput{OrderID: "A-1001"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	callCtx, _, ok := h.Verify(ctx, req)
	require.True(t, ok)
	_, has := pgstore.Tx(callCtx)
	require.False(t, has, "a call answered through Middleware uses Claim and Save, without a transaction")
	resp := protocol.Answer(callCtx, "done", nil)
	require.Equal(t, `{"result":"done"}`, string(resp.Body))
	require.Equal(t, 1, rows(t, b.pool, b.opts, "answer IS NOT NULL"), "the answer is kept by Save")
}
