package protocol

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMountChainEndsAtAHandlerThatWrites: an authorization handler that
// refuses with http.Error ends the chain: the dispatcher does not run, the
// tool's side effect never happens and the 403 goes out alone. A warning
// names the status, at most once per logInterval, with the count of the
// lines held back.
func TestMountChainEndsAtAHandlerThatWrites(t *testing.T) {
	clock := newSettableClock()
	h, logs := newHandler(t, Config{Tools: appTools("refund"), Now: clock.Now})
	dispatched := 0
	auth := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "forbidden", http.StatusForbidden) })
	dispatch := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dispatched++
		Respond(w, r, map[string]bool{"refunded": true}, nil)
	})
	mux := http.NewServeMux()
	h.Mount(mux, "/api/median", auth, dispatch)
	for i := range 3 {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httpPost("/api/median", toolCall("refund", "chain_"+string(rune('a'+i)), `{}`)))
		assert.Equal(t, http.StatusForbidden, rec.Code)
		assert.Equal(t, "forbidden\n", rec.Body.String(), "exactly one answer goes out")
	}
	assert.Zero(t, dispatched, "nothing after the handler that answered runs")
	warnings := logs.find(t, "outside the contract")
	require.Len(t, warnings, 1, "one line per interval, not one per request")
	assert.EqualValues(t, http.StatusForbidden, warnings[0]["status"])
	assert.EqualValues(t, 0, warnings[0]["suppressed"])

	clock.advance(logInterval)
	mux.ServeHTTP(httptest.NewRecorder(), httpPost("/api/median", toolCall("refund", "chain_d", `{}`)))
	warnings = logs.find(t, "outside the contract")
	require.Len(t, warnings, 2, "a line again once the interval has passed")
	assert.EqualValues(t, 2, warnings[1]["suppressed"], "it counts the lines held back")

	// The handler's own answer is sent; its repeat gets execution_failed
	// at once, kept for the toolCallId, without running the chain again.
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httpPost("/api/median", toolCall("refund", "chain_a", `{}`)))
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.JSONEq(t, `{"error":{"code":"execution_failed","message":"the server's handler did not answer this call"}}`, rec.Body.String())
}

// TestMountChainRunsInOrder: handlers that do not answer pass the call on, in
// order; the third answers. A handler that answers ends the chain.
func TestMountChainRunsInOrder(t *testing.T) {
	h, _ := newHandler(t, Config{Tools: appTools("lookup")})
	var ran []string
	pass := func(name string) http.Handler {
		return http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = append(ran, name) })
	}
	third := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ran = append(ran, "third")
		Respond(w, r, "found", nil)
	})
	mux := http.NewServeMux()
	h.Mount(mux, "/m", pass("first"), pass("second"), third)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httpPost("/m", toolCall("lookup", "three_1", `{}`)))
	assert.Equal(t, `{"result":"found"}`, rec.Body.String())
	assert.Equal(t, []string{"first", "second", "third"}, ran)

	// Handlers run in order until one answers.
	h, _ = newHandler(t, Config{Tools: appTools("forbidden", "allowed")})
	mux = http.NewServeMux()
	ran = nil
	deny := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ran = append(ran, "deny")
		if call, _ := CallFrom(r.Context()); call.Tool == "forbidden" {
			Respond(w, r, nil, Refuse("not_allowed", "No."))
		}
	})
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ran = append(ran, "app")
		Respond(w, r, "ok", nil)
	})
	h.Mount(mux, "/m", deny, app)
	rec = httptest.NewRecorder()
	mux.ServeHTTP(rec, httpPost("/m/", toolCall("forbidden", "m1", `{}`)))
	assert.Contains(t, rec.Body.String(), "not_allowed")
	assert.Equal(t, []string{"deny"}, ran)
	rec = httptest.NewRecorder()
	mux.ServeHTTP(rec, httpPost("/m", toolCall("allowed", "m2", `{}`)))
	assert.Equal(t, `{"result":"ok"}`, rec.Body.String())
	assert.Equal(t, []string{"deny", "deny", "app"}, ran)
}

// TestInterceptorErrorsAreExecutionFailed: whatever code an interceptor's
// error carries, it answers execution_failed with its message, as the
// Interceptor doc says; only a Refusal answers otherwise.
func TestInterceptorErrorsAreExecutionFailed(t *testing.T) {
	var ret error
	ic := func(context.Context, *Call, *Tool) error { return ret }
	var rewritten error
	h, _ := newHandler(t, Config{
		Tools:        appTools("t"),
		Interceptors: []Interceptor{ic},
		ErrorMessage: func(_ context.Context, _ *Call, err error) string {
			rewritten = err
			return "rewritten: " + err.Error()
		},
	})
	for i, err := range []error{CodeUnknownTool, unknownTool("t"), newError(CodeInvalidInput, "orderId: required")} {
		ret = err
		resp := h.Serve(context.Background(), post(toolCall("t", "ic_"+string(rune('a'+i)), `{}`)))
		assert.Equal(t, "rewritten: "+err.Error(), requireError(t, resp, http.StatusOK, CodeExecutionFailed), "%v", err)
		assert.Equal(t, err, rewritten, "Config.ErrorMessage gets the interceptor's own error")
	}
}

// TestSettleWritten: a response the handlers wrote on their own is not
// written over, and the call is kept as execution_failed for its repeats.
func TestSettleWritten(t *testing.T) {
	h, logs := newHandler(t, Config{Tools: appTools("mine"), ReplayLease: time.Hour})
	ctx := context.Background()
	cctx, _, ok := h.Verify(ctx, post(toolCall("mine", "written_1", `{}`)))
	require.True(t, ok)
	assert.Zero(t, Settle(cctx, http.StatusForbidden, nil).Status, "nothing to write over the handler's 403")
	_, again, ok := h.Verify(ctx, post(toolCall("mine", "written_1", `{}`)))
	require.False(t, ok)
	assert.Contains(t, requireError(t, again, http.StatusOK, CodeExecutionFailed), "did not answer")
	require.Len(t, logs.find(t, "outside the contract"), 1)
	assert.EqualValues(t, http.StatusForbidden, logs.find(t, "outside the contract")[0]["status"])

	cctx, _, ok = h.Verify(ctx, post(toolCall("mine", "written_2", `{}`)))
	require.True(t, ok)
	assert.Zero(t, Settle(cctx, http.StatusOK, "bug after writing").Status, "a panic after the handler wrote: nothing more is written")
	_, again, _ = h.Verify(ctx, post(toolCall("mine", "written_2", `{}`)))
	assert.Contains(t, requireError(t, again, http.StatusOK, CodeExecutionFailed), "failed unexpectedly")
}

// TestMountChainEarlyHints: a 103 Early Hints is sent ahead of the answer,
// it is not one: the chain goes on and the dispatcher's answer goes out.
func TestMountChainEarlyHints(t *testing.T) {
	h, logs := newHandler(t, Config{Tools: appTools("lookup")})
	hints := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Link", "</app.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
	})
	dispatch := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { Respond(w, r, "found", nil) })
	mux := http.NewServeMux()
	h.Mount(mux, "/m", hints, dispatch)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	req := httpPost("/m", toolCall("lookup", "hints_1", `{}`))
	req.RequestURI, req.URL.Scheme, req.URL.Host = "", "http", srv.Listener.Addr().String()
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, `{"result":"found"}`, string(body))
	assert.Empty(t, logs.find(t, "outside the contract"))
}
