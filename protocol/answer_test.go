package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// noInput is the input of tools that take none.
type noInput struct{}

// fnTool registers a tool without input that runs fn.
func fnTool(name string, fn func(ctx context.Context) (any, error)) *Tool {
	return NewTool(name, RiskLow, "Test tool "+name+".", func(ctx context.Context, c ToolCall[noInput]) (any, error) { return fn(ctx) })
}

func TestResultAnswer(t *testing.T) {
	for name, tc := range map[string]struct {
		v    any
		want string
	}{
		"object": {map[string]any{"status": "shipped", "n": 2}, `{"result":{"n":2,"status":"shipped"}}`},
		"string": {"hello", `{"result":"hello"}`},
		"nil":    {nil, `{"result":null}`},
		"array":  {[]int{1, 2}, `{"result":[1,2]}`},
		"struct": {struct {
			A string `json:"a"`
		}{"x"}, `{"result":{"a":"x"}}`},
	} {
		t.Run(name, func(t *testing.T) {
			h, _ := newHandler(t, Config{Tools: []*Tool{fnTool("t", func(context.Context) (any, error) { return tc.v, nil })}})
			resp := h.Serve(context.Background(), post(toolCall("t", "c", `{}`)))
			assert.Equal(t, http.StatusOK, resp.Status)
			assert.Equal(t, tc.want, string(resp.Body))
			assert.Empty(t, resp.code)
		})
	}
}

// TestRefusalJSON pins the exact objects of PROTOCOL.md §3.1.
func TestRefusalJSON(t *testing.T) {
	tests := []struct {
		name string
		r    *Refusal
		want string
	}{
		{"blocked", Refuse("out_of_stock", "The item is sold out."), `{"ok":false,"allowed":false,"outcome":"blocked","reason":"out_of_stock","detail":"The item is sold out."}`},
		{"unknown", &Refusal{Unknown: true, Reason: "no_such_order", Detail: "No order A-1."}, `{"ok":false,"known":false,"outcome":"unknown","reason":"no_such_order","detail":"No order A-1."}`},
		{"not signed in", notSignedIn("Sign in to see orders."), `{"ok":false,"allowed":false,"outcome":"blocked","reason":"not_signed_in","detail":"Sign in to see orders."}`},
		{"default reason", Refuse("", "No."), `{"ok":false,"allowed":false,"outcome":"blocked","reason":"tool_refused","detail":"No."}`},
		{"zero value", &Refusal{}, `{"ok":false,"allowed":false,"outcome":"blocked","reason":"tool_refused"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.r.wire())
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(b))
			// Returned as the error, as the result, or wrapped: all answer the same result.
			for how, fn := range map[string]func(context.Context) (any, error){
				"as error":   func(context.Context) (any, error) { return nil, tt.r },
				"as result":  func(context.Context) (any, error) { return tt.r, nil },
				"wrapped":    func(context.Context) (any, error) { return nil, fmt.Errorf("lookup: %w", tt.r) },
				"with value": func(context.Context) (any, error) { return map[string]any{"x": 1}, tt.r },
			} {
				h, _ := newHandler(t, Config{Tools: []*Tool{fnTool("t", fn)}})
				resp := h.Serve(context.Background(), post(toolCall("t", "c", `{}`)))
				assert.Equal(t, `{"result":`+tt.want+`}`, string(resp.Body), how)
				assert.Equal(t, http.StatusOK, resp.Status, how)
			}
		})
	}
	assert.Equal(t, "not_signed_in: Sign in.", notSignedIn("Sign in.").Error())
	assert.Equal(t, "tool_refused: No.", Refuse("", "No.").Error())
}

// TestExecutionFailed: an error the tool's author did not mark for the
// agent is answered with the tool's name and a reference; the log has the
// error under that reference, at level ERROR.
func TestExecutionFailed(t *testing.T) {
	h, logs := newHandler(t, Config{Tools: []*Tool{fnTool("t", func(context.Context) (any, error) {
		return nil, errors.New("warehouse API: 503 from https://wh.internal/orders")
	})}})
	resp := h.Serve(context.Background(), post(toolCall("t", "c", `{}`)))
	msg := requireError(t, resp, http.StatusOK, CodeExecutionFailed)
	ref := requireHidden(t, msg, "t")
	assert.NotContains(t, string(resp.Body), "wh.internal")
	line := requireLoggedUnder(t, logs, ref)
	assert.Equal(t, "ERROR", line["level"])
	assert.Equal(t, "warehouse API: 503 from https://wh.internal/orders", line["error"])
	assert.Equal(t, "t", line["tool"])
	assert.Equal(t, "c", line["toolCallId"])
	assert.Empty(t, logs.find(t, "tool returned an error"), "the hidden error is logged once, under its reference")
}

func TestErrorMessageHook(t *testing.T) {
	var seen struct {
		call *Call
		err  error
	}
	secret := errors.New("db: password auth failed for user admin")
	h, logs := newHandler(t, Config{
		Tools: []*Tool{fnTool("t", func(context.Context) (any, error) { return nil, secret })},
		ErrorMessage: func(ctx context.Context, call *Call, err error) string {
			seen.call, seen.err = call, err
			return "The order service is unavailable."
		},
	})
	resp := h.Serve(context.Background(), post(toolCall("t", "c9", `{}`)))
	msg := requireError(t, resp, http.StatusOK, CodeExecutionFailed)
	assert.Equal(t, "The order service is unavailable.", msg)
	assert.NotContains(t, string(resp.Body), "password")
	assert.Same(t, secret, seen.err)
	require.NotNil(t, seen.call)
	assert.Equal(t, "c9", seen.call.ToolCallID)
	lines := logs.find(t, "tool returned an error")
	require.Len(t, lines, 1, "the original error is still logged")
	assert.Equal(t, secret.Error(), lines[0]["error"])
	assert.Equal(t, "t", lines[0]["tool"])

	// Refusals are results, not errors: the hook does not touch them.
	h2, _ := newHandler(t, Config{
		Tools:        []*Tool{fnTool("t", func(context.Context) (any, error) { return nil, notSignedIn("Sign in.") })},
		ErrorMessage: func(context.Context, *Call, error) string { return "rewritten" },
	})
	assert.Contains(t, string(h2.Serve(context.Background(), post(toolCall("t", "c", `{}`))).Body), "not_signed_in")
}

func TestPanicRecovered(t *testing.T) {
	obs := &observed{}
	h, logs := newHandler(t, Config{Observer: obs.add, Tools: []*Tool{fnTool("boom", func(context.Context) (any, error) {
		panic("index out of range: secret detail")
	})}})
	resp := h.Serve(context.Background(), post(toolCall("boom", "c1", `{}`)))
	msg := requireError(t, resp, http.StatusOK, CodeExecutionFailed)
	assert.Equal(t, "tool boom failed unexpectedly", msg)
	assert.NotContains(t, string(resp.Body), "secret detail")
	lines := logs.find(t, "panicked")
	require.Len(t, lines, 1)
	assert.Equal(t, "ERROR", lines[0]["level"])
	assert.Equal(t, "boom", lines[0]["tool"])
	assert.Equal(t, "c1", lines[0]["toolCallId"])
	assert.Equal(t, "index out of range: secret detail", lines[0]["panic"])
	assert.Contains(t, lines[0]["stack"], "answer_test.go", "the stack reaches the panicking function")
	assert.Equal(t, CodeExecutionFailed, obs.last(t).Code)
}

func TestToolTimeout(t *testing.T) {
	tool := NewTool("slow", RiskLow, "Slow.", func(ctx context.Context, c ToolCall[noInput]) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}, WithTimeout(10*time.Millisecond))
	h, _ := newHandler(t, Config{Tools: []*Tool{tool}})
	msg := requireError(t, h.Serve(context.Background(), post(toolCall("slow", "c", `{}`))), http.StatusOK, CodeExecutionFailed)
	assert.Contains(t, msg, "timed out")
}

type hinted struct {
	OrderID string `json:"orderId"`
	Hints
}

func TestHintsSetters(t *testing.T) {
	tests := []struct {
		path string
		ok   bool
	}{
		{"/", true},
		{"/orders/A-1001", true},
		{"/a?b=c#d", true},
		{"/" + strings.Repeat("a", 2047), true},
		{"/" + strings.Repeat("é", 2047), true},
		{"/" + strings.Repeat("a", 2048), false},
		{"", false},
		{"orders", false},
		{"https://evil.com/", false},
		{"//evil.com", false},
		{"//evil.com/path", false},
		{`/\evil.com`, false},
		{" /orders", false},
	}
	for _, tt := range tests {
		err := checkNavigateTo(tt.path)
		if tt.ok {
			assert.NoError(t, err, tt.path)
		} else {
			assert.Error(t, err, tt.path)
			assert.Contains(t, err.Error(), "medianNavigateTo")
		}
	}
	h := Hints{NavigateTo: "/orders/1", Highlight: "#order-" + strings.Repeat("x", 249)}
	require.NoError(t, checkHighlight(h.Highlight))
	assert.Error(t, checkHighlight(strings.Repeat("x", 257)))
	assert.Error(t, checkHighlight(""))
	b, err := json.Marshal(hinted{OrderID: "1", Hints: h})
	require.NoError(t, err)
	assert.JSONEq(t, `{"orderId":"1","medianNavigateTo":"/orders/1","medianHighlight":"#order-`+strings.Repeat("x", 249)+`"}`, string(b))
	b, _ = json.Marshal(hinted{OrderID: "1"})
	assert.Equal(t, `{"orderId":"1"}`, string(b), "unset hints are omitted")
}

// TestInvalidHintRemoved: a hint set around the setters is removed from the
// result with a warning; valid hints and the rest stay.
func TestInvalidHintRemoved(t *testing.T) {
	tests := []struct {
		name   string
		result any
		want   string
		warns  int
	}{
		{"valid kept", hinted{OrderID: "1", Hints: Hints{NavigateTo: "/o/1", Highlight: "#o"}}, `{"orderId":"1","medianNavigateTo":"/o/1","medianHighlight":"#o"}`, 0},
		{"other origin", hinted{OrderID: "1", Hints: Hints{NavigateTo: "//evil.com", Highlight: "#o"}}, `{"orderId":"1","medianHighlight":"#o"}`, 1},
		{"too long path", hinted{OrderID: "1", Hints: Hints{NavigateTo: "/" + strings.Repeat("a", 2048)}}, `{"orderId":"1"}`, 1},
		{"too long selector", hinted{OrderID: "1", Hints: Hints{Highlight: strings.Repeat("a", 257)}}, `{"orderId":"1"}`, 1},
		{"both bad", map[string]any{"medianNavigateTo": "x", "medianHighlight": 5, "n": 1}, `{"n":1}`, 2},
		{"not a string", map[string]any{"medianNavigateTo": true}, `{}`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, logs := newHandler(t, Config{Tools: []*Tool{fnTool("hint", func(context.Context) (any, error) { return tt.result, nil })}})
			res := requireResult(t, h.Serve(context.Background(), post(toolCall("hint", "c", `{}`))))
			assert.JSONEq(t, tt.want, string(res))
			if tt.warns == 0 {
				assert.Equal(t, tt.want, string(res), "a result whose hints are valid is sent as encoded, its field order kept")
			}
			warns := logs.find(t, "invalid widget hint")
			assert.Len(t, warns, tt.warns)
			for _, w := range warns {
				assert.Equal(t, "WARN", w["level"])
				assert.Equal(t, "hint", w["tool"])
			}
		})
	}
}

func TestOversizedResultWarned(t *testing.T) {
	// n characters and two quotes: at the limit exactly, one over, and far
	// from it either way.
	for _, n := range []int{maxResultChars - 2, maxResultChars - 1, 3000, 5000} {
		h, logs := newHandler(t, Config{Tools: []*Tool{fnTool("big", func(context.Context) (any, error) { return strings.Repeat("é", n), nil })}})
		resp := h.Serve(context.Background(), post(toolCall("big", "c", `{}`)))
		res := requireResult(t, resp)
		assert.Len(t, []rune(string(res)), n+2, "the whole result is still sent")
		warns := logs.find(t, "longer than the agent reads")
		if n+2 <= maxResultChars {
			assert.Empty(t, warns)
			continue
		}
		require.Len(t, warns, 1)
		assert.Equal(t, "WARN", warns[0]["level"])
		assert.Equal(t, "big", warns[0]["tool"])
		assert.EqualValues(t, n+2, warns[0]["chars"], "size in characters, not bytes")
		assert.EqualValues(t, maxResultChars, warns[0]["limit"])
	}
}

// TestDiagnosticsReplace: Config.DiagnosticsReplace answers instead of the
// report, under DiagnosticsTimeout.
func TestDiagnosticsReplace(t *testing.T) {
	diag := []byte(`{"op":"diagnostics"}`)
	req := func() Request { return post(string(diag)) }

	t.Run("result", func(t *testing.T) {
		h, _ := newHandler(t, Config{DiagnosticsReplace: func(ctx context.Context) (any, error) {
			_, ok := ctx.Deadline()
			return map[string]any{"db": "ok", "deadline": ok}, nil
		}})
		res := requireResult(t, h.Serve(context.Background(), req()))
		assert.JSONEq(t, `{"db":"ok","deadline":true}`, string(res))
	})
	t.Run("error shown only by reference", func(t *testing.T) {
		h, logs := newHandler(t, Config{DiagnosticsReplace: func(context.Context) (any, error) {
			return nil, errors.New("dial redis://admin:hunter2@10.0.0.7: refused")
		}})
		msg := requireError(t, h.Serve(context.Background(), req()), http.StatusOK, CodeExecutionFailed)
		assert.NotContains(t, msg, "hunter2", "Median reads only what the author chose to show (§3)")
		lines := logs.find(t, "diagnostics failed")
		require.Len(t, lines, 1)
		assert.Contains(t, lines[0]["error"], "hunter2", "the log has the whole error")
		ref, _ := lines[0]["errorRef"].(string)
		require.Len(t, ref, 8)
		assert.Equal(t, "diagnostics failed (reference "+ref+"); the server's log has the details", msg)
	})
	t.Run("AgentError shown", func(t *testing.T) {
		h, _ := newHandler(t, Config{DiagnosticsReplace: func(context.Context) (any, error) {
			return nil, fmt.Errorf("checking: %w", AgentErrorf("redis down"))
		}})
		msg := requireError(t, h.Serve(context.Background(), req()), http.StatusOK, CodeExecutionFailed)
		assert.Equal(t, "diagnostics failed: redis down", msg)
	})
	t.Run("panic", func(t *testing.T) {
		h, logs := newHandler(t, Config{DiagnosticsReplace: func(context.Context) (any, error) { panic("kaboom") }})
		requireError(t, h.Serve(context.Background(), req()), http.StatusOK, CodeExecutionFailed)
		assert.Len(t, logs.find(t, "panicked"), 1)
	})
	t.Run("ignores ctx and blocks", func(t *testing.T) {
		release := make(chan struct{})
		returned := make(chan struct{})
		h, _ := newHandler(t, Config{DiagnosticsTimeout: 20 * time.Millisecond, DiagnosticsReplace: func(context.Context) (any, error) {
			defer close(returned)
			<-release // ignores ctx
			return "late", nil
		}})
		msg := requireError(t, h.Serve(context.Background(), req()), http.StatusOK, CodeExecutionFailed)
		assert.Contains(t, msg, "did not finish within 20ms")
		close(release)
		<-returned // no goroutine left behind for goleak
	})
	t.Run("long answer warned", func(t *testing.T) {
		for _, n := range []int{100, 2500} {
			h, logs := newHandler(t, Config{DiagnosticsReplace: func(context.Context) (any, error) { return strings.Repeat("x", n), nil }})
			requireResult(t, h.Serve(context.Background(), req()))
			warns := logs.find(t, "diagnostics answer is longer")
			if n < maxDiagnosticsChars {
				assert.Empty(t, warns)
				continue
			}
			require.Len(t, warns, 1)
			assert.Equal(t, "WARN", warns[0]["level"])
			assert.EqualValues(t, maxDiagnosticsChars, warns[0]["limit"])
			assert.Empty(t, logs.find(t, "longer than the agent reads"), "the 4,000-character tool warning is not used")
		}
	})
	t.Run("default timeout under 8 s", func(t *testing.T) {
		assert.Less(t, defaultDiagnosticsTimeout, 8*time.Second)
		h, _ := newHandler(t, Config{DiagnosticsReplace: func(context.Context) (any, error) { return nil, nil }})
		assert.Equal(t, defaultDiagnosticsTimeout, h.cfg.DiagnosticsTimeout)
	})
}

// TestToolNamedDiagnostics: a user tool may be called "diagnostics"; its
// oversized results are warned like any other tool's.
func TestToolNamedDiagnostics(t *testing.T) {
	h, logs := newHandler(t, Config{Tools: []*Tool{fnTool("diagnostics", func(context.Context) (any, error) { return strings.Repeat("x", 5000), nil })}})
	requireResult(t, h.Serve(context.Background(), post(toolCall("diagnostics", "c", `{}`))))
	assert.Len(t, logs.find(t, "longer than the agent reads"), 1)
}

func TestManifest(t *testing.T) {
	explicit := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)
	tools := []*Tool{
		echoTool(nil),
		NewTool("b-search_2", RiskHigh, "Search.", func(ctx context.Context, c ToolCall[map[string]any]) (any, error) { return nil, nil }, WithInputSchema(explicit)),
		fnTool("a_first", func(context.Context) (any, error) { return nil, nil }),
	}
	h, _ := newHandler(t, Config{Tools: tools})
	resp := h.Serve(context.Background(), get())
	require.Equal(t, http.StatusOK, resp.Status, "body %s", resp.Body)
	var m struct {
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Risk        Risk            `json:"risk"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(resp.Body, &m))
	require.Len(t, m.Tools, 3)
	var names []string
	for _, tl := range m.Tools {
		names = append(names, tl.Name)
		assert.Regexp(t, `^[a-zA-Z0-9_-]{1,64}$`, tl.Name)
		assert.NotEmpty(t, tl.Description)
		assert.Positive(t, tl.Risk.rank())
		assert.Equal(t, `"object"`, gjson(t, tl.InputSchema, "type"))
	}
	assert.Equal(t, []string{"a_first", "b-search_2", "echo"}, names, "sorted by name")
	assert.Equal(t, string(explicit), string(m.Tools[1].InputSchema))
	assert.Equal(t, RiskHigh, m.Tools[1].Risk)
	assert.Contains(t, string(m.Tools[2].InputSchema), `"orderId"`)

	// Stable bytes: another Handler with the tools in another order.
	h2, _ := newHandler(t, Config{Tools: []*Tool{tools[2], tools[0], tools[1]}})
	assert.Equal(t, string(resp.Body), string(h2.Serve(context.Background(), get()).Body))
	assert.Equal(t, string(resp.Body), string(h.Serve(context.Background(), get()).Body))

	// Signed like a POST: unsigned, stale or signed over a body is refused.
	requireError(t, h.Serve(context.Background(), Request{Method: http.MethodGet}), http.StatusUnauthorized, CodeMissingSignature)
	requireError(t, h.Serve(context.Background(), Request{Method: http.MethodGet, Signature: mustParseKey(testKey).Sign(testNow.Add(-time.Hour), nil)}), http.StatusUnauthorized, CodeStaleTimestamp)
	requireError(t, h.Serve(context.Background(), Request{Method: http.MethodGet, Signature: mustParseKey(otherKey).Sign(testNow, nil)}), http.StatusUnauthorized, CodeInvalidSignature)
	requireError(t, h.Serve(context.Background(), Request{Method: http.MethodGet, Signature: mustParseKey(testKey).Sign(testNow, []byte("{}"))}), http.StatusUnauthorized, CodeInvalidSignature)

	// Through net/http, and with no tools at all.
	assert.Equal(t, string(resp.Body), string(serveHTTP(h, http.MethodGet, mustParseKey(testKey).Sign(testNow, nil), "").Body))
	h0, _ := newHandler(t, Config{})
	assert.Equal(t, `{"tools":[]}`, string(h0.Serve(context.Background(), get()).Body))
}

func TestObserver(t *testing.T) {
	obs := &observed{}
	h, _ := newHandler(t, Config{Observer: obs.add, Tools: []*Tool{
		echoTool(nil),
		fnTool("fail", func(context.Context) (any, error) { return nil, errors.New("x") }),
	}})
	cases := []struct {
		req    Request
		tool   string
		id     string
		code   Code
		status int
		method string
	}{
		{post(toolCall("echo", "c1", `{"orderId":1}`)), "echo", "c1", "", 200, "POST"},
		{post(toolCall("fail", "c2", `{}`)), "fail", "c2", CodeExecutionFailed, 200, "POST"},
		{post(toolCall("echo", "c3", `{}`)), "echo", "c3", CodeInvalidInput, 400, "POST"},
		{post(`{"op":"diagnostics"}`), "", "", "", 200, "POST"},
		{Request{Method: http.MethodPost}, "", "", CodeMissingSignature, 401, "POST"},
		{get(), "", "", "", 200, "GET"},
		{Request{Method: http.MethodPut}, "", "", CodeMethodNotAllowed, 405, "PUT"},
	}
	for _, c := range cases {
		h.Serve(context.Background(), c.req)
		ev := obs.last(t)
		assert.Equal(t, c.tool, ev.Tool)
		assert.Equal(t, c.id, ev.ToolCallID)
		assert.Equal(t, c.code, ev.Code)
		assert.Equal(t, c.status, ev.Status)
		assert.Equal(t, c.method, ev.Method)
		assert.GreaterOrEqual(t, ev.Duration, time.Duration(0))
		assert.False(t, ev.Replayed)
	}
	assert.Len(t, obs.all(), len(cases), "one event per request")
	h.Serve(context.Background(), post(toolCall("echo", "c1", `{"orderId":1}`)))
	assert.True(t, obs.last(t).Replayed)
}

// TestSmallestResultBudget: a budget of one character still applies: a
// result that cannot fit it is not sent whole.
func TestSmallestResultBudget(t *testing.T) {
	tool := NewTool("tiny", RiskLow, "Returns a long word.", func(context.Context, ToolCall[noInput]) (any, error) { return "abcdef", nil }, WithResultBudget(1))
	h, _ := newHandler(t, Config{Tools: []*Tool{tool}})
	resp := h.Serve(context.Background(), post(toolCall("tiny", "c_tiny", `{}`)))
	assert.NotContains(t, string(resp.Body), "abcdef")
}

// TestResultAfterTheToolsDeadline: a tool that ignores its context and
// returns a result after its timeout has its result sent: only an error
// after the deadline is answered as timed out.
func TestResultAfterTheToolsDeadline(t *testing.T) {
	tool := NewTool("late", RiskLow, "Returns late.", func(context.Context, ToolCall[noInput]) (any, error) {
		time.Sleep(30 * time.Millisecond)
		return "done", nil
	}, WithTimeout(5*time.Millisecond))
	h, _ := newHandler(t, Config{Tools: []*Tool{tool}})
	assert.JSONEq(t, `"done"`, string(requireResult(t, h.Serve(context.Background(), post(toolCall("late", "c_late", `{}`))))))
}

// TestToolErrorIsNotATimeoutUnlessItRanOut: an error a tool returns before
// its timeout, or with no timeout after its request's deadline, is the
// tool's error, not "timed out".
func TestToolErrorIsNotATimeoutUnlessItRanOut(t *testing.T) {
	quick := NewTool("quick", RiskLow, "Fails at once.", func(context.Context, ToolCall[noInput]) (any, error) {
		return nil, errors.New("card declined")
	}, WithTimeout(time.Minute))
	slow := fnTool("slow", func(context.Context) (any, error) {
		time.Sleep(30 * time.Millisecond) // past the request's deadline, ignoring it
		return nil, errors.New("card declined")
	})
	h, _ := newHandler(t, Config{Tools: []*Tool{quick, slow}})
	msg := requireError(t, h.Serve(context.Background(), post(toolCall("quick", "c_quick", `{}`))), http.StatusOK, CodeExecutionFailed)
	assert.NotContains(t, msg, "timed out")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	msg = requireError(t, h.Serve(ctx, post(toolCall("slow", "c_slow", `{}`))), http.StatusOK, CodeExecutionFailed)
	assert.NotContains(t, msg, "timed out")
}
