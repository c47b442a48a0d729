package protocol

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hiddenPattern is the message of an error the agent is not shown.
var hiddenPattern = regexp.MustCompile(`^tool ([a-zA-Z0-9_-]+) failed \(reference ([0-9a-f]{8})\); the server's log has the details$`)

// requireHidden asserts that msg is the answer to tool's error the agent
// is not shown, and returns its reference.
func requireHidden(t testing.TB, msg, tool string) string {
	t.Helper()
	m := hiddenPattern.FindStringSubmatch(msg)
	require.NotNil(t, m, "want the message that names the tool and a reference, got %q", msg)
	require.Equal(t, tool, m[1], "the message names the tool")
	return m[2]
}

// requireLoggedUnder returns the one log line that carries errorRef ref.
func requireLoggedUnder(t testing.TB, logs *logBuffer, ref string) map[string]any {
	t.Helper()
	var found []map[string]any
	for _, l := range logs.lines(t) {
		if l["errorRef"] == ref {
			found = append(found, l)
		}
	}
	require.Len(t, found, 1, "one log line under errorRef %s; the log:\n%s", ref, logs.String())
	return found[0]
}

// TestAgentErrorIsShown: an AgentError's Message is answered, returned
// as is, wrapped, or with a cause; the cause goes only to the log.
func TestAgentErrorIsShown(t *testing.T) {
	cause := errors.New("dial tcp 10.0.0.7:5432: connection refused")
	errCancelled := errors.New("order A-1 was cancelled on Monday")
	for name, tc := range map[string]struct {
		err    error
		logged string // the error's full text in the log; "" when the agent read all of it
	}{
		"AgentErrorf":     {AgentErrorf("order %s was cancelled on %s", "A-1", "Monday"), ""},
		"wrapped":         {fmt.Errorf("lookup: %w", AgentErrorf("order A-1 was cancelled on Monday")), "lookup: order A-1 was cancelled on Monday"},
		"with a cause":    {&AgentError{Message: "order A-1 was cancelled on Monday", Err: cause}, "order A-1 was cancelled on Monday: " + cause.Error()},
		"joined":          {errors.Join(cause, AgentErrorf("order A-1 was cancelled on Monday")), cause.Error() + "\\norder A-1 was cancelled on Monday"},
		"its own message": {&AgentError{Message: errCancelled.Error(), Err: errCancelled}, ""},
		"own, wrapped":    {fmt.Errorf("cancel: %w", &AgentError{Message: errCancelled.Error(), Err: errCancelled}), "cancel: order A-1 was cancelled on Monday"},
	} {
		t.Run(name, func(t *testing.T) {
			obs := &observed{}
			h, logs := newHandler(t, Config{Observer: obs.add, Tools: []*Tool{fnTool("t", func(context.Context) (any, error) { return nil, tc.err })}})
			resp := h.Serve(context.Background(), post(toolCall("t", "c", `{}`)))
			assert.Equal(t, "order A-1 was cancelled on Monday", requireError(t, resp, http.StatusOK, CodeExecutionFailed))
			assert.NotContains(t, string(resp.Body), "10.0.0.7")
			assert.Empty(t, obs.last(t).ErrorRef, "no reference: the agent read the author's message")
			lines := logs.find(t, "tool returned an error")
			if tc.logged == "" {
				assert.Empty(t, lines, "nothing more to log than the agent read")
				return
			}
			require.Len(t, lines, 1)
			assert.Equal(t, "INFO", lines[0]["level"])
			assert.Equal(t, strings.ReplaceAll(tc.logged, "\\n", "\n"), lines[0]["error"])
			assert.Equal(t, "c", lines[0]["toolCallId"])
		})
	}
	assert.Equal(t, "m: "+cause.Error(), (&AgentError{Message: "m", Err: cause}).Error())
	assert.ErrorIs(t, &AgentError{Message: "m", Err: cause}, cause)
	assert.Equal(t, errCancelled.Error(), (&AgentError{Message: errCancelled.Error(), Err: errCancelled}).Error(), "the message once, not twice")
	// A nil *AgentError, or one without a Message, marks nothing: it is an
	// error like any other.
	var nilAgent *AgentError
	for _, err := range []error{fmt.Errorf("x: %w", nilAgent), &AgentError{Err: cause}} {
		h, logs := newHandler(t, Config{Tools: []*Tool{fnTool("t", func(context.Context) (any, error) { return nil, err })}})
		resp := h.Serve(context.Background(), post(toolCall("t", "c", `{}`)))
		ref := requireHidden(t, requireError(t, resp, http.StatusOK, CodeExecutionFailed), "t")
		assert.Equal(t, err.Error(), requireLoggedUnder(t, logs, ref)["error"])
	}
}

// TestHiddenErrorEverywhere: the reference of an error the agent is not
// shown is the same in the answer, its repeat, the Event, the report's
// lastFailure and the log; the error's text is only in the log.
func TestHiddenErrorEverywhere(t *testing.T) {
	const secret = "password=hunter2 host=db.internal"
	obs := &observed{}
	h, logs := newHandler(t, Config{Observer: obs.add, Tools: []*Tool{fnTool("lookup_order", func(context.Context) (any, error) {
		return nil, fmt.Errorf("lookup order: %w", errors.New(secret))
	})}})
	ctx := context.Background()
	first := h.Serve(ctx, post(toolCall("lookup_order", "c1", `{}`)))
	ref := requireHidden(t, requireError(t, first, http.StatusOK, CodeExecutionFailed), "lookup_order")
	ev := obs.last(t)
	assert.Equal(t, ref, ev.ErrorRef)
	assert.False(t, ev.Replayed)

	again := h.Serve(ctx, post(toolCall("lookup_order", "c1", `{}`)))
	assert.Equal(t, string(first.Body), string(again.Body), "a repeat gets the same answer, reference included")
	ev = obs.last(t)
	assert.True(t, ev.Replayed)
	assert.Equal(t, ref, ev.ErrorRef, "the repeat's event carries the first answer's reference")

	second := h.Serve(ctx, post(toolCall("lookup_order", "c2", `{}`)))
	ref2 := requireHidden(t, requireError(t, second, http.StatusOK, CodeExecutionFailed), "lookup_order")
	assert.NotEqual(t, ref, ref2, "each failure has its own reference")

	r := requireReport(t, h.Serve(ctx, post(`{"op":"diagnostics"}`)))
	require.NotNil(t, r.Tools["lookup_order"].LastFailure)
	assert.Equal(t, hiddenErrorMessage("lookup_order", ref2), r.Tools["lookup_order"].LastFailure.Message)
	for _, body := range []string{string(first.Body), string(second.Body), r.raw} {
		assert.NotContains(t, body, "hunter2")
		assert.NotContains(t, body, "db.internal")
	}
	for _, e := range obs.all() {
		assert.NotContains(t, string(e.Answer), "hunter2")
	}
	assert.Equal(t, "lookup order: "+secret, requireLoggedUnder(t, logs, ref)["error"])
	assert.Equal(t, "lookup order: "+secret, requireLoggedUnder(t, logs, ref2)["error"])
}

// TestErrorRefOf: the reference is read back from exactly the answer the
// default rule writes, for the call's tool.
func TestErrorRefOf(t *testing.T) {
	body := func(msg string) []byte { return errorResponse(newError(CodeExecutionFailed, msg)).Body }
	assert.Equal(t, "0123abcd", errorRefOf("t", body(hiddenErrorMessage("t", "0123abcd"))))
	assert.Equal(t, "00000000", errorRefOf("t00000000", body(hiddenErrorMessage("t00000000", "00000000"))))
	for name, b := range map[string][]byte{
		"another tool":     body(hiddenErrorMessage("u", "0123abcd")),
		"not hex":          body(hiddenErrorMessage("t", "0123abcX")),
		"short":            body(hiddenErrorMessage("t", "0123abc")),
		"long":             body(hiddenErrorMessage("t", "0123abcde")),
		"author's message": body("order A-1 was cancelled"),
		"a result":         []byte(`{"result":"tool t failed (reference 0123abcd); the server's log has the details"}`),
		"empty":            nil,
	} {
		assert.Empty(t, errorRefOf("t", b), name)
	}
}

// TestErrorMessagePolicyComposes: Config.ErrorMessage decides first, for
// shown and hidden errors alike; "" hands the error to the default rule.
func TestErrorMessagePolicyComposes(t *testing.T) {
	errSoldOut := errors.New("sold out")
	var seen []error
	policy := func(_ context.Context, _ *Call, err error) string {
		seen = append(seen, err)
		switch {
		case errors.Is(err, errSoldOut):
			return "That item is sold out."
		case strings.Contains(err.Error(), "translate me"):
			return "Traduit."
		}
		return ""
	}
	errs := map[string]error{
		"sold":      fmt.Errorf("reserve: %w", errSoldOut),
		"agent":     AgentErrorf("translate me"),
		"plain":     errors.New("dial tcp 10.0.0.7:5432: connection refused"),
		"agentkept": AgentErrorf("order A-1 was cancelled"),
	}
	var tools []*Tool
	for name, err := range errs {
		tools = append(tools, fnTool(name, func(context.Context) (any, error) { return nil, err }))
	}
	h, logs := newHandler(t, Config{Tools: tools, ErrorMessage: policy})
	ask := func(name string) string {
		return requireError(t, h.Serve(context.Background(), post(toolCall(name, "c_"+name, `{}`))), http.StatusOK, CodeExecutionFailed)
	}
	assert.Equal(t, "That item is sold out.", ask("sold"))
	assert.Equal(t, "Traduit.", ask("agent"), "the policy decides before the default rule, AgentErrors included")
	assert.Equal(t, "order A-1 was cancelled", ask("agentkept"), `"" leaves an AgentError to the default rule`)
	ref := requireHidden(t, ask("plain"), "plain")
	assert.Equal(t, errs["plain"].Error(), requireLoggedUnder(t, logs, ref)["error"])
	assert.Len(t, seen, 4, "the policy saw every error")
	assert.Len(t, logs.find(t, "tool returned an error"), 2, "each message the policy wrote is logged with its error")
}

// TestHiddenErrorPaths: interceptors, handlers behind the middleware and
// input types' Validate follow the same rule; a timeout's message, which
// the library writes, is shown.
func TestHiddenErrorPaths(t *testing.T) {
	ctx := context.Background()
	secret := errors.New("redis 10.0.0.9:6379: NOAUTH")
	t.Run("interceptor", func(t *testing.T) {
		deny := func(context.Context, *Call, *Tool) error { return secret }
		h, logs := newHandler(t, Config{Tools: []*Tool{fnTool("t", func(context.Context) (any, error) { return "ran", nil })}, Interceptors: []Interceptor{deny}})
		ref := requireHidden(t, requireError(t, h.Serve(ctx, post(toolCall("t", "c", `{}`))), http.StatusOK, CodeExecutionFailed), "t")
		assert.Equal(t, secret.Error(), requireLoggedUnder(t, logs, ref)["error"])
	})
	t.Run("interceptor AgentError", func(t *testing.T) {
		deny := func(context.Context, *Call, *Tool) error {
			return &AgentError{Message: "Bookings are closed today.", Err: secret}
		}
		h, _ := newHandler(t, Config{Tools: []*Tool{fnTool("t", func(context.Context) (any, error) { return "ran", nil })}, Interceptors: []Interceptor{deny}})
		assert.Equal(t, "Bookings are closed today.", requireError(t, h.Serve(ctx, post(toolCall("t", "c", `{}`))), http.StatusOK, CodeExecutionFailed))
	})
	t.Run("middleware", func(t *testing.T) {
		h, logs := newHandler(t, Config{Tools: []*Tool{DeclareTool[noInput]("t", RiskLow, "Declared.")}})
		cctx, _, ok := h.Verify(ctx, post(toolCall("t", "c", `{}`)))
		require.True(t, ok)
		ref := requireHidden(t, requireError(t, Answer(cctx, nil, secret), http.StatusOK, CodeExecutionFailed), "t")
		assert.Equal(t, secret.Error(), requireLoggedUnder(t, logs, ref)["error"])
	})
	t.Run("timeout", func(t *testing.T) {
		slow := NewTool("slow", RiskLow, "Slow.", func(ctx context.Context, _ ToolCall[noInput]) (any, error) {
			<-ctx.Done()
			return nil, fmt.Errorf("query 10.0.0.9: %w", ctx.Err())
		}, WithTimeout(20*time.Millisecond))
		h, logs := newHandler(t, Config{Tools: []*Tool{slow}})
		msg := requireError(t, h.Serve(ctx, post(toolCall("slow", "c", `{}`))), http.StatusOK, CodeExecutionFailed)
		assert.Equal(t, "tool slow timed out after 20ms", msg)
		lines := logs.find(t, "tool returned an error")
		require.Len(t, lines, 1, "the tool's own error is in the log")
		assert.Contains(t, lines[0]["error"], "query 10.0.0.9: context deadline exceeded")
	})
}
