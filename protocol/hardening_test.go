package protocol

// Hardening tests: replayed answers keep their code and status, no goroutine
// outlives a request (client gone, tool timeout, late diagnostics, panics),
// cancellation reaches the tool, and no key, secret or MAC leaks into an
// answer or a log line.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// hardKey is the key of every hardening handler; hardOldKey is a second,
// older key held during a rotation.
const (
	hardKey    = "hardening-key-0123456789abcdefghijklmnopqrstuvwxyz"
	hardOldKey = "hardening-old-key-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
)

// hardIn is the input of the hardening tools.
type hardIn struct {
	OrderID string `json:"orderId"`
}

// hardCallBody returns a ToolCall body for tool with a unique id.
func hardCallBody(tool, id, orderID string, verified bool) []byte {
	visitor := `{"verified":false,"email":"eve@example.com"}`
	if verified {
		visitor = `{"verified":true,"externalId":"user_7","email":"ada@example.com","name":"Ada"}`
	}
	return fmt.Appendf(nil, `{"tool":%q,"toolCallId":%q,"input":{"orderId":%q},"context":{"conversationId":"conv_1","risk":"low","visitor":%s}}`,
		tool, id, orderID, visitor)
}

// hardSigned returns a signed POST request for body.
func hardSigned(body []byte) Request {
	return Request{
		Method:        http.MethodPost,
		Signature:     mustParseKey(hardKey).Sign(time.Now(), body),
		BodyBytes:     body,
		ContentLength: int64(len(body)),
	}
}

// hardNew builds a Handler for hardKey with cfg's other settings.
func hardNew(t *testing.T, cfg Config) *Handler {
	t.Helper()
	if cfg.Keys == nil {
		cfg.Keys = []string{hardKey}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	h, err := New(cfg)
	require.NoError(t, err)
	return h
}

// hardErrorCode reads the code of an error answer.
func hardErrorCode(t *testing.T, body []byte) (Code, string) {
	t.Helper()
	var e struct {
		Error struct {
			Code    Code   `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &e), "answer %s", body)
	return e.Error.Code, e.Error.Message
}

// Found by FuzzServe: the replay store keeps only the answer's bytes, and a
// replayed answer came back as 200 with no code, so a replayed invalid_input
// was 200 and the observer counted a replayed failure as a success.
func TestReplayedAnswerKeepsCodeAndStatus(t *testing.T) {
	failing := NewTool("fail", RiskLow, "Always fails.",
		func(ctx context.Context, call ToolCall[hardIn]) (any, error) {
			return nil, errors.New("the order service is down")
		})
	var mu sync.Mutex
	var events []Event
	h := hardNew(t, Config{
		Tools:    append([]*Tool{failing}, appTools("other")...),
		Observer: func(_ context.Context, ev Event) { mu.Lock(); events = append(events, ev); mu.Unlock() },
	})
	// A middleware-style handler answering a bind error stores a 400.
	bindBody := hardCallBody("other", "call_bind", "A-1", true)
	cctx, _, ok := h.Verify(context.Background(), hardSigned(bindBody))
	require.True(t, ok)
	call, _ := CallFrom(cctx)
	first := Answer(cctx, nil, call.BindInput(new(struct {
		OrderID int `json:"orderId"`
	})))
	require.Equal(t, http.StatusBadRequest, first.Status)

	tests := []struct {
		name   string
		body   []byte
		status int
		code   Code
		verify bool
	}{
		{"execution_failed from Serve", hardCallBody("fail", "call_fail", "A-1", true), http.StatusOK, CodeExecutionFailed, false},
		{"invalid_input from Respond", bindBody, http.StatusBadRequest, CodeInvalidInput, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for round := range 2 {
				var resp Response
				if tt.verify { // a middleware's Verify answers a repeat from the store
					_, resp, _ = h.Verify(context.Background(), hardSigned(tt.body))
				} else {
					resp = h.Serve(context.Background(), hardSigned(tt.body))
				}
				assert.Equal(t, tt.status, resp.Status, "round %d: %s", round, resp.Body)
				assert.Equal(t, tt.code, resp.code, "round %d", round)
				code, _ := hardErrorCode(t, resp.Body)
				assert.Equal(t, tt.code, code, "round %d", round)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	var replayed int
	for _, ev := range events {
		if ev.Replayed {
			replayed++
			assert.NotEmpty(t, ev.Code, "a replayed error answer must report its code to the observer")
		}
	}
	assert.Equal(t, 3, replayed) // the second Serve and both Verify calls
}

// hardBlockingTool is a tool that reports when it starts, then waits for its
// context to end and reports the context's error.
type hardBlockingTool struct {
	started chan struct{}
	ctxErr  chan error
}

func newHardBlockingTool() *hardBlockingTool {
	return &hardBlockingTool{started: make(chan struct{}, 1), ctxErr: make(chan error, 1)}
}

func (b *hardBlockingTool) tool(opts ...ToolOption) *Tool {
	return NewTool("block", RiskLow, "Waits until its context ends.",
		func(ctx context.Context, call ToolCall[hardIn]) (any, error) {
			b.started <- struct{}{}
			<-ctx.Done()
			b.ctxErr <- ctx.Err()
			return nil, ctx.Err()
		}, opts...)
}

// waitFor receives from ch or fails the test after a generous bound (a hang
// guard, not a timing assertion).
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("gave up waiting: %s", what)
		panic("unreachable")
	}
}

// A client that goes away mid-tool cancels the tool's context, over real
// HTTP, and nothing is left running once the server is closed.
func TestClientDisconnectCancelsToolWithoutLeaks(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	b := newHardBlockingTool()
	h := hardNew(t, Config{Tools: []*Tool{b.tool()}})
	srv := httptest.NewServer(h)
	defer srv.Close()
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()

	body := hardCallBody("block", "call_disconnect", "A-1", true)
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set(signatureHeader, mustParseKey(hardKey).Sign(time.Now(), body))
	clientErr := make(chan error, 1)
	go func() {
		resp, err := (&http.Client{Transport: transport}).Do(req)
		if err == nil {
			resp.Body.Close()
		}
		clientErr <- err
	}()
	waitFor(t, b.started, "the tool to start")
	cancel()
	assert.ErrorIs(t, waitFor(t, clientErr, "the client to give up"), context.Canceled)
	assert.ErrorIs(t, waitFor(t, b.ctxErr, "the tool to see the cancellation"), context.Canceled)
}

// A cancelled request context reaches the tool through Serve, and the
// answer does not claim a timeout.
func TestCancelledRequestContextReachesTool(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	b := newHardBlockingTool()
	h := hardNew(t, Config{Tools: []*Tool{b.tool(WithTimeout(time.Hour))}})
	ctx, cancel := context.WithCancel(context.Background())
	answered := make(chan Response, 1)
	go func() { answered <- h.Serve(ctx, hardSigned(hardCallBody("block", "call_cancel", "A-1", true))) }()
	waitFor(t, b.started, "the tool to start")
	cancel()
	assert.ErrorIs(t, waitFor(t, b.ctxErr, "the tool to see the cancellation"), context.Canceled)
	resp := waitFor(t, answered, "Serve to return")
	code, msg := hardErrorCode(t, resp.Body)
	assert.Equal(t, CodeExecutionFailed, code)
	assert.NotContains(t, msg, "timed out")
}

// A tool that honours ctx and overruns WithTimeout is answered 200
// execution_failed saying it timed out; nothing is left running.
func TestToolTimeoutAnswersTimedOut(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	b := newHardBlockingTool()
	h := hardNew(t, Config{Tools: []*Tool{b.tool(WithTimeout(20 * time.Millisecond))}})
	resp := h.Serve(context.Background(), hardSigned(hardCallBody("block", "call_timeout", "A-1", true)))
	assert.ErrorIs(t, waitFor(t, b.ctxErr, "the tool's context error"), context.DeadlineExceeded)
	assert.Equal(t, http.StatusOK, resp.Status)
	code, msg := hardErrorCode(t, resp.Body)
	assert.Equal(t, CodeExecutionFailed, code)
	assert.Contains(t, msg, "timed out")
}

// A DiagnosticsReplace that ignores its deadline is answered without
// waiting for it; the late goroutine exits as soon as the function returns.
func TestLateDiagnosticsDoNotLeak(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	release := make(chan struct{})
	returned := make(chan struct{})
	h := hardNew(t, Config{
		DiagnosticsTimeout: 20 * time.Millisecond,
		DiagnosticsReplace: func(ctx context.Context) (any, error) {
			defer close(returned)
			<-release // ignores ctx on purpose
			return "late", nil
		},
	})
	body := []byte(`{"op":"diagnostics"}`)
	resp := h.Serve(context.Background(), hardSigned(body))
	// Serve returned while the function is still blocked on release.
	assert.Equal(t, http.StatusOK, resp.Status)
	code, msg := hardErrorCode(t, resp.Body)
	assert.Equal(t, CodeExecutionFailed, code)
	assert.Contains(t, msg, "did not finish")
	close(release)
	waitFor(t, returned, "the diagnostics function to return")
	// goleak.VerifyNone retries until the late goroutine has gone.
}

// Panics in a tool and in diagnostics are answered execution_failed and
// leave no goroutine behind; the panic value stays in the log.
func TestPanicsAreAnsweredWithoutLeaks(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	logger, logs := newLogger()
	panicky := NewTool("panicky", RiskLow, "Panics.",
		func(ctx context.Context, call ToolCall[hardIn]) (any, error) {
			panic("secret internal state " + call.Input.OrderID)
		})
	h := hardNew(t, Config{
		Tools:              []*Tool{panicky},
		Logger:             logger,
		DiagnosticsReplace: func(ctx context.Context) (any, error) { panic("diagnostics exploded") },
	})
	for _, tt := range []struct {
		name string
		body []byte
		logs string
	}{
		{"tool", hardCallBody("panicky", "call_panic", "A-9", true), "secret internal state A-9"},
		{"diagnostics", []byte(`{"op":"diagnostics"}`), "diagnostics exploded"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := h.Serve(context.Background(), hardSigned(tt.body))
			assert.Equal(t, http.StatusOK, resp.Status)
			code, msg := hardErrorCode(t, resp.Body)
			assert.Equal(t, CodeExecutionFailed, code)
			assert.NotContains(t, string(resp.Body), "panic(", "no stack in the answer")
			assert.NotContains(t, msg, tt.logs, "the panic value stays out of the answer")
			assert.Contains(t, logs.String(), tt.logs)
		})
	}
}

// hardSecretForms returns every form in which key could leak: the key, its
// derived secret in hex (both cases) and base64.
func hardSecretForms(t *testing.T, key string) []string {
	t.Helper()
	secret, err := deriveSecret(key)
	require.NoError(t, err)
	h := hex.EncodeToString(secret)
	return []string{key, h, strings.ToUpper(h), base64.StdEncoding.EncodeToString(secret), base64.RawURLEncoding.EncodeToString(secret)}
}

// hardMACs returns the correct v1 (hex) of body at ts under each key.
func hardMACs(ts time.Time, body []byte, keys ...string) []string {
	var out []string
	for _, k := range keys {
		sig := mustParseKey(k).Sign(ts, body)
		out = append(out, sig[strings.Index(sig, "v1=")+3:])
	}
	return out
}

// No answer and no log line, at Debug level, carries a key, a derived
// secret or a correct MAC, across every kind of request — each sent with a
// known length and again streamed without one — under a key given with
// spaces around it and a second (rotation) key; the key fingerprint is what
// identifies a key.
func TestNoSecretInAnswersOrLogs(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	logger, logs := newLogger()
	var h *Handler
	lookup := NewTool("lookup_order", RiskLow, "Looks up an order.",
		func(ctx context.Context, call ToolCall[hardIn]) (any, error) {
			if _, ok := call.Visitor.ExternalID(); !ok {
				return nil, notSignedIn("Sign in to see orders.")
			}
			switch call.Input.OrderID {
			case "fail":
				return nil, errors.New("database unavailable")
			case "panic":
				panic("boom")
			case "slow":
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return map[string]any{"orderId": call.Input.OrderID, "medianNavigateTo": "//not-a-path"}, nil
		}, WithTimeout(20*time.Millisecond))
	h = hardNew(t, Config{
		Keys:         []string{" " + hardKey + "\n", hardOldKey},
		Tools:        []*Tool{lookup},
		Logger:       logger,
		MaxBodyBytes: 2048,
		Diagnostics: func(ctx context.Context) (any, error) {
			return map[string]any{"keys": fingerprints(h)}, nil
		},
	})

	key, old := mustParseKey(hardKey), mustParseKey(hardOldKey)
	now := time.Now()
	type request struct {
		name   string
		method string
		body   []byte
		sig    func(body []byte) string
		status int
	}
	signed := func(k Key, at time.Time) func([]byte) string {
		return func(b []byte) string { return k.Sign(at, b) }
	}
	raw := func(s string) func([]byte) string { return func([]byte) string { return s } }
	unknownKey := mustParseKey("an-unknown-key-that-nobody-configured-0000")
	requests := []request{
		{"valid", "POST", hardCallBody("lookup_order", "call_1", "A-1", true), signed(key, now), 200},
		{"valid under the old key", "POST", hardCallBody("lookup_order", "call_2", "A-2", true), signed(old, now), 200},
		{"replay", "POST", hardCallBody("lookup_order", "call_1", "A-1", true), signed(key, now), 200},
		{"reused id", "POST", hardCallBody("lookup_order", "call_1", "A-3", true), signed(key, now), 409},
		{"unverified visitor", "POST", hardCallBody("lookup_order", "call_3", "A-1", false), signed(key, now), 200},
		{"tool error", "POST", hardCallBody("lookup_order", "call_4", "fail", true), signed(key, now), 200},
		{"tool panic", "POST", hardCallBody("lookup_order", "call_5", "panic", true), signed(key, now), 200},
		{"tool timeout", "POST", hardCallBody("lookup_order", "call_6", "slow", true), signed(key, now), 200},
		{"invalid input", "POST", []byte(`{"tool":"lookup_order","toolCallId":"call_7","input":{"orderId":7},"context":{"conversationId":"c","risk":"low","visitor":{"verified":true}}}`), signed(key, now), 400},
		{"unknown tool", "POST", hardCallBody("drop_tables", "call_8", "A-1", true), signed(key, now), 404},
		{"bad JSON", "POST", []byte(`{"tool":`), signed(key, now), 400},
		{"unknown op", "POST", []byte(`{"op":"reboot"}`), signed(key, now), 400},
		{"diagnostics", "POST", []byte(`{"op":"diagnostics"}`), signed(key, now), 200},
		{"manifest", "GET", nil, signed(key, now), 200},
		{"oversized", "POST", bytes.Repeat([]byte("x"), 4096), signed(key, now), 413},
		{"405", "DELETE", nil, signed(key, now), 405},
		{"missing signature", "POST", hardCallBody("lookup_order", "call_9", "A-1", true), raw(""), 401},
		{"malformed signature", "POST", hardCallBody("lookup_order", "call_9", "A-1", true), raw("t=abc,v1=00"), 401},
		{"stale", "POST", hardCallBody("lookup_order", "call_9", "A-1", true), signed(key, now.Add(-10*time.Minute)), 401},
		{"future", "POST", hardCallBody("lookup_order", "call_9", "A-1", true), signed(key, now.Add(10*time.Minute)), 401},
		{"unknown key", "POST", hardCallBody("lookup_order", "call_9", "A-1", true), signed(unknownKey, now), 401},
		{"body changed after signing", "POST", hardCallBody("lookup_order", "call_9", "A-1", true), raw(key.Sign(now, []byte("{}"))), 401},
	}

	forbidden := append(hardSecretForms(t, hardKey), hardSecretForms(t, hardOldKey)...)
	var answers bytes.Buffer
	for _, r := range requests {
		for _, streamed := range []bool{false, true} {
			req := httptest.NewRequest(r.method, "/api/median", bytes.NewReader(r.body))
			if streamed {
				req.ContentLength = -1 // the body is read to its end, not trusted to a length
			}
			if sig := r.sig(r.body); sig != "" {
				req.Header.Set(signatureHeader, sig)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			assert.Equal(t, r.status, w.Code, "%s (streamed: %v): %s", r.name, streamed, w.Body)
			assert.Equal(t, "application/json", w.Header().Get("Content-Type"), r.name)
			answers.Write(w.Body.Bytes())
			answers.WriteByte('\n')
		}
		// The correct MAC for this request, at the time it carries and at
		// now, under every configured key.
		for _, at := range []time.Time{now, now.Add(-10 * time.Minute), now.Add(10 * time.Minute)} {
			forbidden = append(forbidden, hardMACs(at, r.body, hardKey, hardOldKey)...)
		}
	}
	// An unusable key is logged and answered without being repeated.
	const shortKey = "short-secret-key-42"
	bad, err := New(Config{Keys: []string{shortKey}, Logger: logger})
	require.ErrorIs(t, err, CodeInvalidMedianKey)
	assert.NotContains(t, err.Error(), shortKey)
	w := httptest.NewRecorder()
	bad.ServeHTTP(w, httptest.NewRequest("POST", "/", strings.NewReader("{}")))
	assert.Equal(t, http.StatusInternalServerError, w.Code)
	answers.Write(w.Body.Bytes())
	forbidden = append(forbidden, shortKey)

	logText := logs.String()
	require.Contains(t, logText, `"level":"DEBUG"`, "the logger captured debug lines")
	require.Contains(t, logText, "boom", "the logger captured the panic")
	for _, secret := range forbidden {
		assert.NotContains(t, strings.ToLower(answers.String()), strings.ToLower(secret), "an answer leaks %.8s…", secret)
		assert.NotContains(t, strings.ToLower(logText), strings.ToLower(secret), "a log line leaks %.8s…", secret)
	}

	// The fingerprint identifies a key: short, derived, not the secret.
	fps := fingerprints(h)
	require.Equal(t, []string{key.st.fingerprint, old.st.fingerprint}, fps)
	assert.Contains(t, answers.String(), fps[0], "diagnostics show the fingerprint")
	for _, fp := range fps {
		assert.Regexp(t, `^mk_[0-9a-f]{12}$`, fp)
	}
	assert.Equal(t, "median key "+fps[0], fmt.Sprint(key))
	assert.Equal(t, "median key "+fps[0], fmt.Sprintf("%+v", key))
}

// panickyError is an error whose methods panic: user code the core must
// not let take the server down.
type panickyError struct{}

func (panickyError) Error() string   { panic("Error() exploded") }
func (panickyError) Is(error) bool   { panic("Is exploded") }
func (panickyError) As(any) bool     { panic("As exploded") }
func (panickyError) Unwrap() []error { return nil }

// DiagnosticsReplace returning an error whose Error, Is or As panics is answered
// execution_failed, like a tool returning one; the panic does not escape
// Serve.
func TestDiagnosticsErrorMethodsPanic(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	logger, logs := newLogger()
	h := hardNew(t, Config{
		Logger:             logger,
		DiagnosticsReplace: func(ctx context.Context) (any, error) { return nil, panickyError{} },
	})
	var resp Response
	require.NotPanics(t, func() { resp = h.Serve(context.Background(), hardSigned([]byte(`{"op":"diagnostics"}`))) })
	assert.Equal(t, http.StatusOK, resp.Status)
	code, _ := hardErrorCode(t, resp.Body)
	assert.Equal(t, CodeExecutionFailed, code)
	assert.Contains(t, logs.String(), "exploded")
}

// TestUnsignedClientsCannotFloodTheLog: every line a request can cause
// before its signature is verified (a body that cannot be read, a
// refusal at debug level, a panic of Config.Observer) is logged at most
// once per logInterval, with the count of those held back; the same lines
// for verified requests are logged each time.
func TestUnsignedClientsCannotFloodTheLog(t *testing.T) {
	const n = 50
	ctx := context.Background()
	keyless := fmt.Sprintf("t=%d,v1=%s", testNow.UnixMilli(), strings.Repeat("0", 64))
	cases := []struct {
		name, line string
		level      string
		send       func(h *Handler)
		cfg        Config
	}{
		{name: "a body that cannot be read", line: "the request body could not be read", level: "INFO", send: func(h *Handler) {
			body := &offerReader{body: []byte(`{"op":`), piece: 3, fail: errors.New("connection reset by peer")}
			requireError(t, h.Serve(ctx, Request{Method: http.MethodPost, Signature: keyless, Body: body, ContentLength: 1 << 10}), http.StatusBadRequest, CodeInvalidBody)
		}},
		{name: "an unsigned request", line: "request refused", level: "DEBUG", send: func(h *Handler) {
			requireError(t, h.Serve(ctx, Request{Method: http.MethodPost, BodyBytes: []byte(`{}`)}), http.StatusUnauthorized, CodeMissingSignature)
		}},
		{name: "a forged signature", line: "request refused", level: "DEBUG", send: func(h *Handler) {
			requireError(t, h.Serve(ctx, Request{Method: http.MethodPost, Signature: keyless, BodyBytes: []byte(`{}`)}), http.StatusUnauthorized, CodeInvalidSignature)
		}},
		{name: "Config.Observer panics", line: "Config.Observer panicked", level: "ERROR", send: func(h *Handler) {
			requireError(t, h.Serve(ctx, Request{Method: http.MethodGet}), http.StatusUnauthorized, CodeMissingSignature)
		}, cfg: Config{Observer: func(context.Context, Event) { panic("the observer's bug") }}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := newSettableClock()
			cfg := c.cfg
			cfg.Now = clock.Now
			h, logs := newHandler(t, cfg)
			for range n {
				c.send(h)
			}
			lines := logs.find(t, c.line)
			require.Equal(t, 1, len(lines), "%d requests with no valid signature log one line per interval", n)
			assert.Equal(t, c.level, lines[0]["level"])
			assert.EqualValues(t, 0, lines[0]["suppressed"])
			clock.advance(logInterval)
			c.send(h)
			lines = logs.find(t, c.line)
			require.Equal(t, 2, len(lines), "the next interval logs again")
			assert.EqualValues(t, n-1, lines[1]["suppressed"], "it counts the lines held back")
		})
	}
	t.Run("verified requests are logged each time", func(t *testing.T) {
		h, logs := newHandler(t, Config{Tools: []*Tool{echoTool(nil)}, Observer: func(_ context.Context, ev Event) {
			if ev.Code == CodeInvalidInput {
				panic("the observer's bug")
			}
		}})
		for i := range 3 {
			requireError(t, h.Serve(ctx, post(toolCall("echo", fmt.Sprint("bad_", i), `{"orderId":"not a number"}`))), http.StatusBadRequest, CodeInvalidInput)
		}
		assert.Equal(t, 3, len(logs.find(t, "request refused")))
		assert.Equal(t, 3, len(logs.find(t, "Config.Observer panicked")))
	})
}
