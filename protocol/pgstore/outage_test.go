package pgstore_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/internal/testonly/pgtest"
	"github.com/median-go/median/internal/testonly/testsupport"
	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/pgstore"
	"github.com/median-go/median/protocol/storetest"
)

// These tests pause (SIGSTOP to every server process) or kill their own
// PostgreSQL and check what calls through a Handler answer. They bound a
// hang, not a speed: the margin is generous.

const (
	storeTimeout = time.Second
	hangMargin   = 2 * time.Second
)

// outage is a Handler on a pgstore whose server the test controls, with a
// cancel_order tool (writes in the call's transaction) and a read-only
// lookup_order tool, each counting its runs.
type outage struct {
	srv           *pgtest.Server
	h             *protocol.Handler
	cancels, look atomic.Int64
	holds         atomic.Int64  // runs of hold_order
	entered       chan struct{} // hold_order has written in its transaction
	release       chan struct{} // closed to let hold_order return
	logs          *testsupport.Buffer
	pool          *pgxpool.Pool
	lastID        string // the toolCallId of the last call
}

// newOutage starts a server and a Handler on it. The pool keeps pgx's
// defaults: the store deadline alone must bound each call.
func newOutage(t *testing.T) *outage {
	t.Helper()
	o := &outage{srv: pgtest.Start(t), logs: &testsupport.Buffer{}, entered: make(chan struct{}, 4), release: make(chan struct{})}
	pool, err := pgxpool.New(context.Background(), o.srv.URL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	opts := freshTable(t, pool)
	_, err = pool.Exec(context.Background(), "CREATE TABLE cancellations (order_id text NOT NULL, tool_call_id text PRIMARY KEY)")
	require.NoError(t, err)
	store := newStore(t, pool, opts)
	o.pool = pool
	o.h, err = protocol.New(protocol.Config{
		Keys:         []string{storetest.Key},
		Store:        store,
		StoreTimeout: storeTimeout,
		Logger:       slog.New(slog.NewTextHandler(o.logs, nil)),
		Tools: []*protocol.Tool{
			protocol.NewTool("cancel_order", protocol.RiskLow, "Cancels an order.",
				func(ctx context.Context, call protocol.ToolCall[cancelInput]) (string, error) {
					o.cancels.Add(1)
					tx, _ := pgstore.Tx(ctx)
					_, err := tx.Exec(ctx, "INSERT INTO cancellations VALUES ($1, $2)", call.Input.OrderID, call.ToolCallID)
					return "cancelled", err
				}),
			protocol.NewTool("hold_order", protocol.RiskLow, "Writes, then waits for the test.",
				func(ctx context.Context, call protocol.ToolCall[cancelInput]) (string, error) {
					o.holds.Add(1)
					tx, _ := pgstore.Tx(ctx)
					if _, err := tx.Exec(ctx, "INSERT INTO cancellations VALUES ($1, $2)", call.Input.OrderID, call.ToolCallID); err != nil {
						return "", err
					}
					o.entered <- struct{}{}
					<-o.release
					return "held", nil
				}),
			protocol.NewTool("lookup_order", protocol.RiskLow, "Looks an order up.",
				func(ctx context.Context, call protocol.ToolCall[cancelInput]) (string, error) {
					o.look.Add(1)
					return "processing", nil
				}, protocol.ReadOnly()),
		},
	})
	require.NoError(t, err)
	return o
}

// call serves a fresh call of tool and returns the answer and how long it
// took.
func (o *outage) call(t *testing.T, tool string) (protocol.Response, time.Duration) {
	t.Helper()
	o.lastID = storetest.NewID()
	req := signed(t, tool, o.lastID, cancelInput{OrderID: "A-1001"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // only so a broken build cannot hang CI
	defer cancel()
	start := time.Now()
	resp := o.h.Serve(ctx, req)
	return resp, time.Since(start)
}

// requireOutageAnswers checks the answers while the store is unreachable:
// cancel_order not run, answered execution_failed within the store
// deadline; lookup_order run and answered, its answer not kept.
func (o *outage) requireOutageAnswers(t *testing.T, what string) {
	t.Helper()
	before := o.cancels.Load()
	resp, took := o.call(t, "cancel_order")
	t.Logf("%s: cancel_order answered %s in %s", what, codeOf(resp), took.Round(time.Millisecond))
	require.Less(t, took, storeTimeout+hangMargin, "%s: the call must be answered within the store deadline", what)
	require.Equal(t, http.StatusOK, resp.Status, "%s: %s", what, resp.Body)
	require.Equal(t, protocol.CodeExecutionFailed, codeOf(resp), "%s: %s", what, resp.Body)
	require.Contains(t, string(resp.Body), "the tool was not run and nothing was changed", what)
	require.NotContains(t, string(resp.Body), "127.0.0.1", "%s: no transport detail in the answer", what)
	require.Equal(t, before, o.cancels.Load(), "%s: the tool must not run", what)
	require.Contains(t, o.logs.String(), "replay store failed", "%s: the failure is logged", what)

	before = o.look.Load()
	resp, took = o.call(t, "lookup_order")
	t.Logf("%s: read-only lookup_order answered in %s", what, took.Round(time.Millisecond))
	require.Less(t, took, storeTimeout+hangMargin, "%s: the read-only call must be answered within the store deadline", what)
	require.Equal(t, `{"result":"processing"}`, string(resp.Body), "%s: the read-only tool runs", what)
	require.Equal(t, before+1, o.look.Load(), what)
	require.Contains(t, o.logs.String(), "the read-only tool runs and its answer is not kept", what)
}

// requireRecovers checks that calls run again once the server is back, and
// returns how long that took.
func (o *outage) requireRecovers(t *testing.T, what string) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(15 * time.Second)
	for {
		before := o.cancels.Load()
		resp, _ := o.call(t, "cancel_order")
		if codeOf(resp) == "" {
			require.Equal(t, `{"result":"cancelled"}`, string(resp.Body), what)
			require.Equal(t, before+1, o.cancels.Load(), "%s: the tool runs once", what)
			require.Equal(t, 1, cancellations(t, o.pool, o.lastID), "%s: its write committed", what)
			return time.Since(start)
		}
		if o.cancels.Load() != before {
			// The tool ran, then its transaction failed (a connection of the
			// pool broke): nothing of it may be left.
			t.Logf("%s: the tool ran and its transaction failed: %s", what, resp.Body)
			require.Zero(t, cancellations(t, o.pool, o.lastID), "%s: a failed call left its write", what)
		}
		require.True(t, time.Now().Before(deadline), "%s: still failing after 15s: %s", what, resp.Body)
		time.Sleep(100 * time.Millisecond)
	}
}

func TestPausedServer(t *testing.T) {
	o := newOutage(t)
	warm, _ := o.call(t, "cancel_order")
	require.Equal(t, `{"result":"cancelled"}`, string(warm.Body))

	o.srv.Pause()
	o.requireOutageAnswers(t, "PostgreSQL paused (SIGSTOP to every process)")
	o.srv.Resume()
	took := o.requireRecovers(t, "after SIGCONT")
	t.Logf("after SIGCONT: calls ran again after %s, without a restart", took.Round(time.Millisecond))
}

func TestKilledServer(t *testing.T) {
	o := newOutage(t)
	warm, _ := o.call(t, "cancel_order")
	require.Equal(t, `{"result":"cancelled"}`, string(warm.Body))

	o.srv.Kill()
	o.requireOutageAnswers(t, "PostgreSQL killed")
	o.srv.Restart()
	took := o.requireRecovers(t, "after a restart on the same port")
	t.Logf("after the restart: calls ran again after %s, without restarting the service", took.Round(time.Millisecond))
}

func TestPausedInsideTheTransaction(t *testing.T) {
	// PostgreSQL freezes while a tool is inside its call's transaction,
	// after its write: the commit cannot happen, so the answer must say
	// nothing was changed, within the store deadline; when the server is
	// back the write is not there and the next copy runs and commits.
	o := newOutage(t)
	id := storetest.NewID()
	req := signed(t, "hold_order", id, cancelInput{OrderID: "A-1001"})
	answered := make(chan protocol.Response, 1)
	var released time.Time
	go func() { answered <- serve(o.h, req) }()
	<-o.entered
	o.srv.Pause()
	released = time.Now()
	close(o.release)
	resp := <-answered
	took := time.Since(released)
	t.Logf("paused inside the transaction: answered %s %s after the tool returned", codeOf(resp), took.Round(time.Millisecond))
	require.Less(t, took, storeTimeout+hangMargin, "answered within the store deadline")
	require.Equal(t, protocol.CodeExecutionFailed, codeOf(resp), "%s", resp.Body)
	require.Contains(t, string(resp.Body), "rolled back and nothing was changed")
	o.srv.Resume()

	deadline := time.Now().Add(15 * time.Second)
	for {
		again := serve(o.h, req)
		if codeOf(again) == "" {
			require.Equal(t, `{"result":"held"}`, string(again.Body))
			break
		}
		require.True(t, time.Now().Before(deadline), "still failing 15s after SIGCONT: %s", again.Body)
		time.Sleep(100 * time.Millisecond)
	}
	require.Equal(t, 1, cancellations(t, o.pool, id), "the frozen transaction's write is gone; the next copy's committed")
	require.Equal(t, int64(2), o.holds.Load(), "the tool ran again once, for the copy after the outage")
}

// codeOf returns the error code an answer carries, or "" for a result.
func codeOf(resp protocol.Response) protocol.Code {
	var a struct {
		Error *struct {
			Code protocol.Code `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(resp.Body, &a) != nil || a.Error == nil {
		return ""
	}
	return a.Error.Code
}
