package protocol

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/median-go/median/internal/testonly/testsupport"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// appTools declares tools that the app's own handler answers behind the
// middleware, as middleware mode requires: any object as input.
func appTools(names ...string) []*Tool {
	tools := make([]*Tool, len(names))
	for i, name := range names {
		tools[i] = DeclareTool[map[string]any](name, RiskLow, "Answered by the app's handler.", WithInputSchema(json.RawMessage(`{"type":"object"}`)))
	}
	return tools
}

// testKey is a usable Median key (40 visible ASCII characters).
const testKey = "mk_test_0123456789abcdefghijklmnopqrstuv"

// otherKey is a second usable key, for rotation and wrong-key cases.
const otherKey = "mk_other_ZYXWVUTSRQPONMLKJIHGFEDCBA98765"

// testNow is the fixed server clock of the tests: 2026-01-01T00:00:00Z.
var testNow = time.UnixMilli(1_767_225_600_000)

// logBuffer collects a Handler's JSON log lines; safe for concurrent use.
type logBuffer struct{ testsupport.Buffer }

// lines decodes every JSON log line.
func (b *logBuffer) lines(t testing.TB) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(b.String()) {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "log line %q", line)
		out = append(out, m)
	}
	return out
}

// find returns the log lines whose msg contains substr.
func (b *logBuffer) find(t testing.TB, substr string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range b.lines(t) {
		if msg, _ := l["msg"].(string); strings.Contains(msg, substr) {
			out = append(out, l)
		}
	}
	return out
}

// newLogger returns a Debug-level JSON logger writing to a fresh buffer.
func newLogger() (*slog.Logger, *logBuffer) {
	buf := &logBuffer{}
	return slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

// newHandler builds a Handler with testKey, the fixed clock and a captured
// logger, unless cfg sets them. It fails the test when New fails.
func newHandler(t testing.TB, cfg Config) (*Handler, *logBuffer) {
	t.Helper()
	log, buf := newLogger()
	if cfg.Keys == nil {
		cfg.Keys = []string{testKey}
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return testNow }
	}
	if cfg.Logger == nil {
		cfg.Logger = log
	}
	h, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() }) // ends the saves a failing store left to do again
	return h, buf
}

// post returns a POST signed with testKey at testNow.
func post(body string) Request {
	return Request{
		Method:        http.MethodPost,
		Signature:     mustParseKey(testKey).Sign(testNow, []byte(body)),
		BodyBytes:     []byte(body),
		ContentLength: int64(len(body)),
	}
}

// get returns a GET signed with testKey at testNow.
func get() Request {
	return Request{Method: http.MethodGet, Signature: mustParseKey(testKey).Sign(testNow, nil), ContentLength: 0}
}

// diagnosticsAt returns a diagnostics POST signed with key at at; a
// Handler answers it with the report once the signature verifies.
func diagnosticsAt(key string, at time.Time) Request {
	body := []byte(`{"op":"diagnostics"}`)
	return Request{Method: http.MethodPost, Signature: mustParseKey(key).Sign(at, body), BodyBytes: body}
}

// toolCall returns a ToolCall body for tool with input (raw JSON) and a
// low-risk, verified visitor.
func toolCall(tool, id, input string) string {
	return fmt.Sprintf(`{"tool":%q,"toolCallId":%q,"input":%s,"context":{"conversationId":"conv_42","risk":"low","visitor":{"verified":true,"externalId":"user_7","email":"a@b.c","name":"Ada"}}}`, tool, id, input)
}

// answer is a decoded answer body.
type answer struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    Code   `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// decode parses resp.Body, failing the test when it is not one of the two
// answer shapes.
func decode(t testing.TB, resp Response) answer {
	t.Helper()
	var a answer
	require.NoError(t, json.Unmarshal(resp.Body, &a), "body %s", resp.Body)
	require.True(t, (a.Result != nil) != (a.Error != nil), "exactly one of result and error: %s", resp.Body)
	return a
}

// requireError asserts that resp is the error answer code with status.
func requireError(t testing.TB, resp Response, status int, code Code) string {
	t.Helper()
	a := decode(t, resp)
	require.NotNil(t, a.Error, "want error %s, got %s", code, resp.Body)
	require.Equal(t, code, a.Error.Code, "body %s", resp.Body)
	require.Equal(t, status, resp.Status, "body %s", resp.Body)
	require.Equal(t, code, resp.code)
	require.NotEmpty(t, a.Error.Message)
	return a.Error.Message
}

// requireResult asserts a 200 result answer and returns the raw result.
func requireResult(t testing.TB, resp Response) json.RawMessage {
	t.Helper()
	a := decode(t, resp)
	require.Nil(t, a.Error, "want a result, got %s", resp.Body)
	require.Equal(t, http.StatusOK, resp.Status)
	return a.Result
}

// echoInput is the input of the echo test tool.
type echoInput struct {
	OrderID int64  `json:"orderId" jsonschema:"description=The order's number,minimum=1"`
	Note    string `json:"note,omitempty" jsonschema:"maxLength=20"`
}

// echoTool returns the input it got, counting its runs in runs (may be nil).
func echoTool(runs *int64Counter) *Tool {
	return NewTool("echo", RiskLow, "Echoes the order id.", func(ctx context.Context, c ToolCall[echoInput]) (echoInput, error) {
		if runs != nil {
			runs.add()
		}
		return c.Input, nil
	})
}

// int64Counter is a concurrency-safe counter.
type int64Counter struct {
	mu sync.Mutex
	n  int64
}

func (c *int64Counter) add() { c.mu.Lock(); c.n++; c.mu.Unlock() }

func (c *int64Counter) get() int64 { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

// settableClock is a Config.Now that starts at testNow and that a test
// moves forward with advance, safe to read from the Handler's goroutines.
type settableClock struct {
	mu  sync.Mutex
	now time.Time
}

func newSettableClock() *settableClock { return &settableClock{now: testNow} }

func (c *settableClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *settableClock) advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// discardLogger drops every line.
func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// observed collects observer events.
type observed struct {
	mu     sync.Mutex
	events []Event
}

func (o *observed) add(_ context.Context, e Event) {
	o.mu.Lock()
	o.events = append(o.events, e)
	o.mu.Unlock()
}

func (o *observed) all() []Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Event(nil), o.events...)
}

func (o *observed) last(t testing.TB) Event {
	t.Helper()
	all := o.all()
	require.NotEmpty(t, all, "no event observed")
	return all[len(all)-1]
}
