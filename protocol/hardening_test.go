package protocol_test

// Hardening tests: replayed answers keep their code and status, no goroutine
// outlives a request (client gone, tool timeout, late diagnostics, panics),
// cancellation reaches the tool, and no key, secret or MAC leaks into an
// answer or a log line.

import (
	"bytes"
	"context"
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

	"github.com/median-go/median/protocol"
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
func hardSigned(body []byte) protocol.Request {
	return protocol.Request{
		Method:        http.MethodPost,
		Signature:     protocol.MustParseKey(hardKey).Sign(time.Now(), body),
		BodyBytes:     body,
		ContentLength: int64(len(body)),
	}
}

// hardNew builds a Handler for hardKey with cfg's other settings.
func hardNew(t *testing.T, cfg protocol.Config) *protocol.Handler {
	t.Helper()
	if cfg.Keys == nil {
		cfg.Keys = []string{hardKey}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	h, err := protocol.New(cfg)
	require.NoError(t, err)
	return h
}

// hardErrorCode reads the code of an error answer.
func hardErrorCode(t *testing.T, body []byte) (protocol.Code, string) {
	t.Helper()
	var e struct {
		Error struct {
			Code    protocol.Code `json:"code"`
			Message string        `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &e), "answer %s", body)
	return e.Error.Code, e.Error.Message
}

// Found by FuzzServe: the replay store keeps only the answer's bytes, and a
// replayed answer came back as 200 with no code, so a replayed invalid_input
// was 200 and the observer counted a replayed failure as a success.
func TestReplayedAnswerKeepsCodeAndStatus(t *testing.T) {
	failing := protocol.NewTool("fail", protocol.RiskLow, "Always fails.",
		func(ctx context.Context, call protocol.ToolCall[hardIn]) (any, error) {
			return nil, errors.New("the order service is down")
		})
	var mu sync.Mutex
	var events []protocol.Event
	h := hardNew(t, protocol.Config{
		Tools:    []*protocol.Tool{failing},
		Observer: func(ev protocol.Event) { mu.Lock(); events = append(events, ev); mu.Unlock() },
	})
	// A middleware-style handler answering a bind error stores a 400.
	bindBody := hardCallBody("other", "call_bind", "A-1", true)
	call, _, ok := h.Verify(context.Background(), hardSigned(bindBody))
	require.True(t, ok)
	first := h.Respond(context.Background(), call, nil, call.BindInput(new(struct{ OrderID int })))
	require.Equal(t, http.StatusBadRequest, first.Status)

	tests := []struct {
		name   string
		body   []byte
		status int
		code   protocol.Code
		verify bool
	}{
		{"execution_failed from Serve", hardCallBody("fail", "call_fail", "A-1", true), http.StatusOK, protocol.CodeExecutionFailed, false},
		{"invalid_input from Respond", bindBody, http.StatusBadRequest, protocol.CodeInvalidInput, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for round := range 2 {
				var resp protocol.Response
				if tt.verify { // a middleware's Verify answers a repeat from the store
					_, resp, _ = h.Verify(context.Background(), hardSigned(tt.body))
				} else {
					resp = h.Serve(context.Background(), hardSigned(tt.body))
				}
				assert.Equal(t, tt.status, resp.Status, "round %d: %s", round, resp.Body)
				assert.Equal(t, tt.code, resp.Code(), "round %d", round)
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

var _ = bytes.Contains
var _ = hex.EncodeToString
var _ = strings.Contains
var _ = httptest.NewRecorder
var _ = goleak.VerifyNone
