package adaptertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/internal/testonly/testsupport"
	"github.com/median-go/median/protocol"
)

// Run checks one adapter for what the conformance suite cannot see from
// outside, over a real loopback connection: the EndpointCases through its
// Mount and the methods only its framework routes (ExtraMethods, Foreign);
// what a client with no key costs (a request without a signature answered
// before its body is read, the memory of 300 connections that declare a
// large body and send little of it); in middleware mode (Mount with a handler, behind the framework's recovery
// middleware), what reaches the handler (MiddlewareCases: CallFrom and
// the signed body given back, no query string), handler chains (ChainCases) and the
// observer's event for each, replays of calls it answered, calls it left
// unanswered or panicked on, and an unusable key; Respond without the
// middleware; and framework values on a tool's ctx, during and
// after the request. The contract's own cases are conformance's
// (internal/testonly/adapters runs the suite against every adapter).
func Run(t *testing.T, a Adapter) {
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			if a.NoMiddleware != "" && (strings.HasPrefix(step.name, "middleware") || step.name == "respond without middleware") {
				t.Skip(a.NoMiddleware)
			}
			if a.Values == nil && strings.HasPrefix(step.name, "framework values") {
				t.Skip("the adapter has no framework store of its own")
			}
			step.run(t, a)
		})
	}
}

// steps are Run's steps, in the order they run; each names its subtest.
var steps = []struct {
	name string
	run  func(t *testing.T, a Adapter)
}{
	{"endpoint", endpointCases},
	{"a bad signature header is answered before the body is read", checkHeaderFirst},
	{"keyless clients declaring 1 MiB, sending one byte", func(t *testing.T, a Adapter) { checkKeyless(t, a, 1) }},
	{"keyless clients declaring 1 MiB, sending past fasthttp's read-ahead", func(t *testing.T, a Adapter) { checkKeyless(t, a, KeylessPastReadAhead) }},
	{"endpoint extra methods", endpointExtraMethods},
	{"middleware unusable key", middlewareUnusableKey},
	{"middleware", middlewareCases},
	{"middleware chain", middlewareChain},
	{"middleware replay", middlewareReplay},
	{"middleware unknown tool replay", middlewareUnknownToolReplay},
	{"middleware call left unanswered", middlewareCallLeftUnanswered},
	{"middleware call not answered at all", middlewareCallNotAnsweredAtAll},
	{"respond without middleware", respondWithoutMiddleware},
	{"middleware panic replay", middlewarePanicReplay},
	{"middleware extra methods", middlewareExtraMethods},
	{"method the framework answers", methodTheFrameworkAnswers},
	{"framework values reach tools", frameworkValuesReachTools},
	{"framework values after the request", frameworkValuesAfterTheRequest},
}

// endpointCases (step "endpoint") checks the EndpointCases through the
// adapter's Mount.
func endpointCases(t *testing.T, a Adapter) {
	h, _ := NewHandler()
	c := Start(t, a.Endpoint(h))
	for _, tc := range EndpointCases() {
		t.Run(tc.Name, func(t *testing.T) {
			if a.LastHeaderLine != "" && tc.Request.Signatures != nil {
				t.Skip(a.LastHeaderLine)
			}
			Check(t, tc.Want, c.Do(t, tc.Request))
		})
	}
}

// endpointExtraMethods (step "endpoint extra methods") checks that the
// methods only the framework routes (ExtraMethods) are refused 405 at Path
// and Path/.
func endpointExtraMethods(t *testing.T, a Adapter) {
	h, _ := NewHandler()
	c := Start(t, a.Endpoint(h))
	refusesExtraMethods(t, a, c)
}

// refusesExtraMethods checks that c refuses each of a.ExtraMethods 405
// at Path and Path/.
func refusesExtraMethods(t *testing.T, a Adapter, c *Client) {
	for _, m := range a.ExtraMethods {
		for _, path := range []string{Path, Path + "/"} {
			req := Signed(m, nil)
			req.Path = path
			Check(t, Want{Status: http.StatusMethodNotAllowed, Code: protocol.CodeMethodNotAllowed, Allow: AllowHeader}, c.Do(t, req))
		}
	}
}

// middlewareUnusableKey (step "middleware unusable key"): the endpoint with
// an unusable key is conformance's (key/missing, key/too-short); in
// middleware mode the call must not reach the handler either.
func middlewareUnusableKey(t *testing.T, a Adapter) {
	for _, tc := range []struct {
		key  string
		code protocol.Code
	}{{"", protocol.CodeMissingSecret}, {"too short", protocol.CodeInvalidMedianKey}} {
		h, err := protocol.New(protocol.Config{Keys: []string{tc.key}, Logger: slog.New(slog.DiscardHandler)})
		require.Error(t, err, "key %q", tc.key)
		require.NotNil(t, h, "a key problem alone still builds a handler")
		rec := &Recorder{}
		got := Start(t, a.Middleware(h, rec.Answer)).Do(t, Signed(http.MethodPost, ToolCall(ToolCustom, "call_key", `{}`)))
		Check(t, Want{Status: http.StatusInternalServerError, Code: tc.code}, got)
		if tc.key != "" {
			assert.NotContains(t, string(got.Body), tc.key, "the answer must not repeat the key")
		}
		assert.Zero(t, rec.Calls(), "a call to an endpoint with an unusable key reached the handler")
	}
}

// middlewareCases (step "middleware") checks the MiddlewareCases: what
// reaches the handler behind the middleware, and how often it runs.
func middlewareCases(t *testing.T, a Adapter) {
	h, runs := NewHandler()
	rec := &Recorder{}
	c := Start(t, a.Middleware(h, rec.Answer))
	for _, tc := range MiddlewareCases() {
		t.Run(tc.Name, func(t *testing.T) {
			before := rec.Calls()
			Check(t, tc.Want, c.Do(t, tc.Request))
			assert.Equal(t, tc.Calls, rec.Calls()-before, "how often the handler behind the middleware ran")
			assert.NoError(t, rec.Err(), "what the handler behind the middleware saw")
		})
	}
	assert.Zero(t, runs.Echo.Load(), "the middleware never runs a registered tool itself")
}

// middlewareChain (step "middleware chain"): a handler's own answer also
// reaches the log, naming its status, and the observer, as what was sent
// (protocol.Event.OffContract): each case has its own handler, as the
// warning comes once per interval.
func middlewareChain(t *testing.T, a Adapter) {
	for i, tc := range ChainCases(a) {
		t.Run(tc.Name, func(t *testing.T) {
			logs := &testsupport.Buffer{} // written from the server's goroutines while the test reads it
			var mu sync.Mutex
			var ran []int
			var evMu sync.Mutex // apart from mu, which the checks below hold
			var events []protocol.Event
			h, runs := NewHandler(func(cfg *protocol.Config) {
				cfg.Logger = slog.New(slog.NewJSONHandler(logs, nil))
				cfg.Observer = func(_ context.Context, ev protocol.Event) { evMu.Lock(); events = append(events, ev); evMu.Unlock() }
			})
			c := Start(t, a.Chain(h, tc.Steps, func(i int) { mu.Lock(); ran = append(ran, i); mu.Unlock() }))
			got := c.Do(t, Signed(http.MethodPost, ToolCall(ToolEcho, fmt.Sprintf("chain_%d", i), chainInput)))
			if tc.Own {
				assert.Equal(t, tc.Want.Status, got.Status, "status (body %s)", got.Body)
				assert.Equal(t, tc.Body, string(got.Body), "exactly one answer goes out: the handler's own")
			} else {
				Check(t, tc.Want, got)
			}
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, tc.Ran, ran, "the handlers that ran: none after the first that answered")
			assert.Zero(t, runs.Echo.Load(), "no tool runs behind the middleware")
			if tc.Own && !slices.Contains(tc.Steps, Hijack) { // the core cannot see the status written on a hijacked connection
				assert.Contains(t, logs.String(), fmt.Sprintf(`"status":%d`, tc.Want.Status), "the warning names the status the handler answered (log %s)", logs.String())
			}
			if tc.Own { // after a hijack the client may have the answer before the handler returns: wait for the line
				assert.Eventually(t, func() bool { return strings.Contains(logs.String(), "outside the contract") }, 5*time.Second, time.Millisecond, "the warning (log %s)", logs.String())
			}
			checkChainEvent(t, tc, func() []protocol.Event { evMu.Lock(); defer evMu.Unlock(); return slices.Clone(events) })
		})
	}
}

// middlewareReplay (step "middleware replay") checks that a repeated call
// the handler answered gets the first answer byte for byte, without reaching
// the handler again.
func middlewareReplay(t *testing.T, a Adapter) {
	h, _ := NewHandler()
	rec := &Recorder{}
	c := Start(t, a.Middleware(h, rec.Answer))
	body := ToolCall(ToolCustom, "mw_replay", `{}`)
	first := c.Do(t, Signed(http.MethodPost, body))
	second := c.Do(t, Signed(http.MethodPost, body))
	Check(t, Want{Status: http.StatusOK, Result: Handled{Tool: ToolCustom, Input: []byte(`{}`), Visitor: "user_7"}}, first)
	assert.Equal(t, first, second, "a repeated toolCallId gets the first answer byte for byte")
	assert.Equal(t, 1, rec.Calls(), "a repeated toolCallId reaches the handler once")
}

// middlewareUnknownToolReplay (step "middleware unknown tool replay"): a
// registered tool the handler does not know, answered
// protocol.CodeUnknownTool through Respond: the answer is stored like any
// other, and the repeat gets the same bytes without reaching the handler.
// The lease is short, so an answer that was not stored would let the repeat
// through (Calls 2) instead of hanging.
func middlewareUnknownToolReplay(t *testing.T, a Adapter) {
	h, _ := NewHandler(func(cfg *protocol.Config) { cfg.ReplayLease = time.Millisecond })
	rec := &Recorder{}
	c := Start(t, a.Middleware(h, rec.Answer))
	body := ToolCall(ToolCustomUnknown, "mw_unknown_replay", `{}`)
	first := c.Do(t, Signed(http.MethodPost, body))
	second := c.Do(t, Signed(http.MethodPost, body))
	Check(t, Want{Status: http.StatusNotFound, Code: protocol.CodeUnknownTool, Message: ToolCustomUnknown}, first)
	assert.Equal(t, first, second, "a repeated toolCallId gets the stored unknown_tool answer byte for byte")
	assert.Equal(t, 1, rec.Calls(), "a repeated toolCallId reaches the handler once")
	assert.NoError(t, rec.Err(), "what the handler behind the middleware saw")
}

// middlewareCallLeftUnanswered (step "middleware call left unanswered"): a
// handler that answers on its own, without Respond: the middleware settles
// the call, so its repeat gets execution_failed at once instead of waiting
// for the lease (20 s here) and reaching the handler again.
func middlewareCallLeftUnanswered(t *testing.T, a Adapter) {
	h, _ := NewHandler(func(cfg *protocol.Config) { cfg.ReplayLease = 20 * time.Second })
	rec := &Recorder{}
	c := Start(t, a.Middleware(h, rec.Answer))
	body := ToolCall(ToolCustomSilent, "mw_silent", `{}`)
	first := c.Do(t, Signed(http.MethodPost, body))
	assert.Equal(t, http.StatusNoContent, first.Status, "the handler's own answer")
	second := c.Do(t, Signed(http.MethodPost, body))
	Check(t, Want{Status: http.StatusOK, Code: protocol.CodeExecutionFailed, Message: "did not answer"}, second)
	assert.Equal(t, 1, rec.Calls(), "the repeat does not reach the handler")
}

// middlewareCallNotAnsweredAtAll (step "middleware call not answered at
// all"): a handler that returns without writing anything: the middleware
// answers execution_failed, the first time as for the repeat.
func middlewareCallNotAnsweredAtAll(t *testing.T, a Adapter) {
	h, _ := NewHandler(func(cfg *protocol.Config) { cfg.ReplayLease = 20 * time.Second })
	rec := &Recorder{}
	c := Start(t, a.Middleware(h, rec.Answer))
	body := ToolCall(ToolCustomNothing, "mw_nothing", `{}`)
	first := c.Do(t, Signed(http.MethodPost, body))
	Check(t, Want{Status: http.StatusOK, Code: protocol.CodeExecutionFailed, Message: "did not answer"}, first)
	second := c.Do(t, Signed(http.MethodPost, body))
	assert.Equal(t, first, second, "the repeat gets the first answer byte for byte")
	assert.Equal(t, 1, rec.Calls(), "the repeat does not reach the handler")
}

// respondWithoutMiddleware (step "respond without middleware") checks that
// Respond without the middleware answers execution_failed naming it, and
// that CallFrom finds no call.
func respondWithoutMiddleware(t *testing.T, a Adapter) {
	rec := &Recorder{}
	c := Start(t, a.Bare(rec.Answer))
	got := c.Do(t, Signed(http.MethodPost, ToolCall(ToolCustom, "bare", `{}`)))
	Check(t, Want{Status: http.StatusOK, Code: protocol.CodeExecutionFailed, Message: "middleware"}, got)
	require.Equal(t, 1, rec.Calls(), "the bare handler ran")
	assert.ErrorIs(t, rec.Err(), errNoCall, "CallFrom finds no call without the middleware")
}

// middlewarePanicReplay (step "middleware panic replay"): the handler panics
// behind the middleware, with the framework's recovery middleware outside:
// the core answers first, and keeps the answer, so the repeat gets the same
// bytes without running it again.
func middlewarePanicReplay(t *testing.T, a Adapter) {
	h, _ := NewHandler()
	rec := &Recorder{}
	c := Start(t, a.Middleware(h, rec.Answer))
	body := ToolCall(ToolCustomPanic, "mw_panic_replay", `{}`)
	first := c.Do(t, Signed(http.MethodPost, body))
	second := c.Do(t, Signed(http.MethodPost, body))
	Check(t, Want{Status: http.StatusOK, Code: protocol.CodeExecutionFailed, Message: "failed unexpectedly"}, first)
	assert.Equal(t, first, second, "a repeated toolCallId gets the first answer byte for byte")
	assert.Equal(t, 1, rec.Calls(), "a repeated toolCallId reaches the handler once")
	// The app keeps serving after the panic.
	Check(t, Want{Status: http.StatusOK, Result: Handled{Tool: ToolCustom, Input: []byte(`{}`), Visitor: "user_7"}},
		c.Do(t, Signed(http.MethodPost, ToolCall(ToolCustom, "mw_after_panic", `{}`))))
}

// middlewareExtraMethods (step "middleware extra methods") checks that the
// methods only the framework routes (ExtraMethods) are refused 405 in
// middleware mode too, without reaching the handler.
func middlewareExtraMethods(t *testing.T, a Adapter) {
	h, _ := NewHandler()
	rec := &Recorder{}
	c := Start(t, a.Middleware(h, rec.Answer))
	refusesExtraMethods(t, a, c)
	assert.Zero(t, rec.Calls())
}

// methodTheFrameworkAnswers (step "method the framework answers") checks
// that the Foreign method is answered by the framework, in both modes.
func methodTheFrameworkAnswers(t *testing.T, a Adapter) {
	if a.Foreign == "" {
		t.Skip("every method reaches the Handler")
	}
	h, _ := NewHandler()
	starters := map[string]Starter{"endpoint": a.Endpoint(h)}
	if a.NoMiddleware == "" {
		starters["middleware"] = a.Middleware(h, (&Recorder{}).Answer)
	}
	for name, s := range starters {
		got := Start(t, s).Do(t, Signed(a.Foreign, nil))
		assert.Equal(t, a.ForeignStatus, got.Status, "%s: %s is answered by the framework (body %s)", name, a.Foreign, got.Body)
	}
}

// frameworkValuesReachTools (step "framework values reach tools"): a
// middleware before the endpoint stores the request id in the framework's
// own store; the tool finds it on its ctx.
func frameworkValuesReachTools(t *testing.T, a Adapter) {
	h, runs := NewHandler(func(cfg *protocol.Config) { cfg.DisableReplayProtection = true })
	c := Start(t, a.Values(h))
	req := Signed(http.MethodPost, ToolCall(ToolValue, "call_value", `{}`))
	req.RequestID = "req-42"
	Check(t, Want{Status: http.StatusOK, Result: ValueOut{Value: "req-42"}}, c.Do(t, req))
	req.RequestID = ""
	Check(t, Want{Status: http.StatusOK, Result: ValueOut{}}, c.Do(t, req))
	req.Path = Path + "/"
	req.RequestID = "req-slash"
	Check(t, Want{Status: http.StatusOK, Result: ValueOut{Value: "req-slash"}}, c.Do(t, req))
	require.Len(t, runs.Contexts(), 3)
}

// frameworkValuesAfterTheRequest (step "framework values after the
// request"): tools keep their ctx past the request while concurrent requests
// make the framework reuse its contexts: reading the kept ctx must not read
// a reused store (the race detector watches), and finds either nothing or,
// where the store is the request's context, the request's own value.
func frameworkValuesAfterTheRequest(t *testing.T, a Adapter) {
	h, runs := NewHandler(func(cfg *protocol.Config) { cfg.DisableReplayProtection = true })
	c := Start(t, a.Values(h))
	const n = 16
	var wg sync.WaitGroup
	stop := make(chan struct{})
	reading := make(chan struct{})
	go func() { // reads every kept ctx while requests run
		defer close(reading)
		for {
			for _, ctx := range runs.Contexts() {
				_ = ctx.Value(ValueKey)
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	for i := range n {
		wg.Go(func() {
			req := Signed(http.MethodPost, ToolCall(ToolValue, fmt.Sprintf("call_after_%d", i), `{}`))
			req.RequestID = fmt.Sprintf("req-%d", i)
			Check(t, Want{Status: http.StatusOK, Result: ValueOut{Value: req.RequestID}}, c.Do(t, req))
		})
	}
	wg.Wait()
	close(stop)
	<-reading
	ctxs := runs.Contexts()
	require.Len(t, ctxs, n)
	for _, ctx := range ctxs {
		v := ctx.Value(ValueKey)
		if a.ValuesOutliveRequest {
			assert.NotNil(t, v, "the request's context keeps its values")
		} else {
			assert.Nil(t, v, "a reused framework store is not read after the request")
		}
	}
}

// checkChainEvent asserts that the observer got one event for a chain
// case's call, telling what was sent: for a handler's own answer, the
// status it wrote, no code and no answer; for the core's, its code and
// body. The status written on a hijacked connection is not seen (see
// protocol.Event.OffContract), and not checked.
func checkChainEvent(t *testing.T, tc ChainCase, events func() []protocol.Event) {
	t.Helper()
	// The event may follow the answer the client read: wait for it.
	assert.Eventually(t, func() bool { return len(events()) > 0 }, 5*time.Second, time.Millisecond, "the observer got no event")
	got := events()
	if !assert.Len(t, got, 1, "one event per answer") {
		return
	}
	ev := got[0]
	assert.Equal(t, ToolEcho, ev.Tool)
	if !tc.Own {
		assert.False(t, ev.OffContract, "the core answered")
		assert.Equal(t, tc.Want.Status, ev.Status)
		assert.Equal(t, tc.Want.Code, ev.Code)
		assert.NotEmpty(t, ev.Answer, "the core's answer, as sent")
		return
	}
	assert.True(t, ev.OffContract, "the handler's own answer went out")
	if !slices.Contains(tc.Steps, Hijack) {
		assert.Equal(t, tc.Want.Status, ev.Status, "the status the handler wrote")
	}
	assert.Empty(t, ev.Code, "no contract code went out")
	assert.Nil(t, ev.Answer, "the core did not see what the handler wrote")
}

// Recorder is the kit's Answer: it answers the custom tools (and ToolEcho),
// answers any other tool protocol.CodeUnknownTool, counts its runs and
// remembers the first thing it found wrong with what the adapter handed it.
type Recorder struct {
	calls atomic.Int64
	mu    sync.Mutex
	err   error
}

// Answer implements Answer.
func (r *Recorder) Answer(s Seen) (any, error) {
	r.calls.Add(1)
	switch {
	case s.Call == nil && s.ContextCall == nil:
		r.fail(errNoCall)
		return nil, errNoCall
	case s.Call == nil:
		r.fail(errors.New("the adapter's CallFrom found no call, but the request's context.Context has one"))
	case s.Call != s.ContextCall:
		r.fail(errors.New("the adapter's CallFrom and protocol.CallFrom return different calls"))
	}
	call := s.Call
	if call == nil {
		call = s.ContextCall
	}
	switch {
	case s.BodyErr != nil:
		r.fail(fmt.Errorf("reading the body after the middleware: %w", s.BodyErr))
	case !bytes.Equal(s.Body, call.Body):
		r.fail(fmt.Errorf("the handler read the body %q after the middleware, Median signed %q", s.Body, call.Body))
	}
	switch call.Tool {
	case ToolEcho, ToolCustom:
		return Dispatched(call), nil
	case ToolCustomBody:
		return BodySeen{Body: string(s.Body)}, nil
	case ToolCustomRequest:
		return RequestSeen{Target: s.Target, Tenant: s.Tenant, User: s.User}, nil
	case ToolCustomFail:
		return nil, ErrFail
	case ToolCustomRefuse:
		return Refusal, nil
	case ToolCustomSilent:
		return nil, ErrNoAnswer
	case ToolCustomNothing:
		return nil, ErrNothing
	case ToolCustomPanic:
		panic("adaptertest: the handler behind the middleware panics")
	}
	return nil, protocol.CodeUnknownTool
}

// Calls returns how often Answer ran.
func (r *Recorder) Calls() int { return int(r.calls.Load()) }

// Err returns the first problem Answer found, or nil.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *Recorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}
