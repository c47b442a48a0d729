package dynamostore_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/median-go/median/internal/testonly/dynamotest"
	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/dynamostore"
	"github.com/median-go/median/protocol/storetest"
)

// These tests start their own dynalite, freeze or kill it, and check what a
// call through a Handler answers. They bound a hang, not a speed: the
// margins are generous.

const hangMargin = 2 * time.Second

// outage is a handler on a dynamostore whose server the test controls.
type outage struct {
	*handler
	srv          *dynamotest.Server
	storeTimeout time.Duration
}

// newOutage starts a server with the store's table and a handler on it.
// The client keeps the SDK's defaults: the store's deadline and retryer
// alone must bound each call.
func newOutage(t *testing.T, storeTimeout time.Duration) *outage {
	t.Helper()
	srv, c := startWithTable(t)
	h := newHandler(t, newStore(t, c, dynamostore.Options{}), protocol.Config{StoreTimeout: storeTimeout})
	o := &outage{handler: h, srv: srv, storeTimeout: storeTimeout}
	warm, _ := o.call(t, "cancel_order") // opens a connection
	require.Empty(t, codeOf(warm), "before the outage: %s", warm.Body)
	o.cancels.Store(0)
	return o
}

// call serves a fresh signed call of tool and returns the answer and how
// long it took.
func (o *outage) call(t *testing.T, tool string) (protocol.Response, time.Duration) {
	t.Helper()
	req := signedCall(t, tool, storetest.NewID(), "A-1001")
	start := time.Now()
	resp := serve(o.h, req)
	return resp, time.Since(start)
}

// requireNotRun checks the answer to a call the store could not record.
func (o *outage) requireNotRun(t *testing.T, resp protocol.Response, took time.Duration, what string) {
	t.Helper()
	require.Less(t, took, o.storeTimeout+hangMargin, "%s: the call must be answered within the store deadline", what)
	require.Equal(t, http.StatusOK, resp.Status, "%s: %s", what, resp.Body)
	require.Equal(t, protocol.CodeExecutionFailed, codeOf(resp), "%s: %s", what, resp.Body)
	msg := string(resp.Body)
	require.Contains(t, msg, "the tool was not run and nothing was changed", what)
	require.NotContains(t, strings.ToLower(msg), "try again", "%s: Median never retries", what)
	require.NotContains(t, msg, o.srv.URL[len("http://"):], "%s: no transport detail in the answer", what)
	require.Zero(t, o.cancels.Load(), "%s: the tool must not run", what)
	require.Contains(t, o.logs.String(), "replay store failed", "%s: the failure is logged", what)
}

// requireReadOnlyRuns checks that a read-only tool runs while the store
// cannot record its claim, answered within the store deadline, its answer
// not kept.
func (o *outage) requireReadOnlyRuns(t *testing.T, what string) {
	t.Helper()
	before := o.looks.Load()
	resp, took := o.call(t, "lookup_order")
	require.Less(t, took, o.storeTimeout+hangMargin, "%s: the read-only call must be answered within the store deadline", what)
	require.Equal(t, `{"result":"processing"}`, string(resp.Body), "%s: the read-only tool runs", what)
	require.Equal(t, before+1, o.looks.Load(), what)
	require.Contains(t, o.logs.String(), "the read-only tool runs and its answer is not kept", what)
}

// requireRuns checks that calls run their tool again, once each, and that
// a repeat gets the first answer.
func (o *outage) requireRuns(t *testing.T, what string) {
	t.Helper()
	var resp protocol.Response
	var req protocol.Request
	// The client may need a moment to reconnect; a call that fails on the
	// way must not have run the tool.
	deadline := time.Now().Add(10 * time.Second)
	for {
		before := o.cancels.Load()
		req = signedCall(t, "cancel_order", storetest.NewID(), "A-1001")
		resp = serve(o.h, req)
		if codeOf(resp) == "" || time.Now().After(deadline) {
			break
		}
		require.Equal(t, before, o.cancels.Load(), "%s: a failed call must not run the tool", what)
		time.Sleep(100 * time.Millisecond)
	}
	require.Equal(t, http.StatusOK, resp.Status, "%s: %s", what, resp.Body)
	require.Empty(t, codeOf(resp), "%s: want a result, got %s", what, resp.Body)
	require.Equal(t, int64(1), o.cancels.Load(), "%s: the tool must run once", what)
	again := serve(o.h, req)
	require.Equal(t, string(resp.Body), string(again.Body), "%s: a repeat gets the first answer", what)
	require.Equal(t, int64(1), o.cancels.Load(), "%s: a repeat does not run the tool", what)
}

func TestFrozenServer(t *testing.T) {
	o := newOutage(t, time.Second)
	o.srv.Pause()
	resp, took := o.call(t, "cancel_order")
	t.Logf("frozen dynalite: answered %s in %s", codeOf(resp), took)
	o.requireNotRun(t, resp, took, "dynalite frozen (SIGSTOP)")
	require.Contains(t, o.logs.String(), "context deadline exceeded", "the store gave up at its deadline")
	o.requireReadOnlyRuns(t, "dynalite frozen (SIGSTOP)")

	o.srv.Resume()
	o.requireRuns(t, "after SIGCONT")
}

func TestKilledServer(t *testing.T) {
	// A deadline of seconds, to tell "at once" from "at the deadline".
	o := newOutage(t, 5*time.Second)
	o.srv.Kill()
	resp, took := o.call(t, "cancel_order")
	t.Logf("killed dynalite: answered %s in %s", codeOf(resp), took)
	o.requireNotRun(t, resp, took, "dynalite killed")
	require.Less(t, took, o.storeTimeout/2, "a refused connection fails at once, retries included, not at the store's deadline")
	o.requireReadOnlyRuns(t, "dynalite killed")

	// dynalite comes back on the same port, empty: the table is gone, and
	// the log says what to do.
	o.srv.Restart()
	resp, took = o.call(t, "cancel_order")
	o.requireNotRun(t, resp, took, "dynalite back without the table")
	require.Contains(t, o.logs.String(), "does not exist; create it with dynamostore.CreateTable")
	createTable(t, newClient(t, o.srv.URL), dynamostore.Options{})
	o.requireRuns(t, "after a restart on the same port")
}

// TestDiagnosticsDuringAnOutage: while dynalite is frozen the report still
// answers within a second, says the store is not reachable and counts the
// claim that failed, without the server's address; once it is back it is
// reachable again.
func TestDiagnosticsDuringAnOutage(t *testing.T) {
	o := newOutage(t, time.Second)
	addr := o.srv.URL[len("http://"):]
	report := func() map[string]any {
		body := []byte(`{"op":"diagnostics"}`)
		key, err := protocol.ParseKey(storetest.Key)
		require.NoError(t, err)
		start := time.Now()
		resp := o.h.Serve(context.Background(), protocol.Request{Method: http.MethodPost, Signature: key.Sign(time.Now(), body), BodyBytes: body})
		require.Less(t, time.Since(start), 2*time.Second, "the report answers within a second: %s", resp.Body)
		require.NotContains(t, string(resp.Body), addr, "no transport detail")
		var a struct {
			Result struct{ Store map[string]any }
		}
		require.NoError(t, json.Unmarshal(resp.Body, &a), "%s", resp.Body)
		return a.Result.Store
	}
	store := report()
	require.Equal(t, "dynamodb", store["kind"])
	require.Equal(t, true, store["reachable"])

	o.srv.Pause()
	resp, took := o.call(t, "cancel_order")
	o.requireNotRun(t, resp, took, "dynalite frozen (SIGSTOP)")
	store = report()
	require.Equal(t, false, store["reachable"])
	require.EqualValues(t, 1, store["claimFailures"])
	require.Contains(t, o.logs.String(), "did not answer its probe")

	o.srv.Resume()
	require.Eventually(t, func() bool { return report()["reachable"] == true }, 10*time.Second, 100*time.Millisecond)
}
