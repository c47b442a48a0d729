package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refundInput is the input of the declared refund tool; Validate refuses
// an amount over 500.
type refundInput struct {
	OrderID string `json:"orderId" jsonschema:"minLength=3"`
	Amount  int    `json:"amount" jsonschema:"minimum=1"`
}

func (r refundInput) Validate() error {
	if r.Amount > 500 {
		return errors.New("amount: at most 500 without a teammate")
	}
	return nil
}

// TestDeclaredToolInManifest: a declared tool is listed in the manifest as
// a tool built with NewTool from the same declaration is, byte for byte,
// with its schema inferred from In or given by WithInputSchema.
func TestDeclaredToolInManifest(t *testing.T) {
	explicit := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)
	declared, _ := newHandler(t, Config{Tools: []*Tool{
		DeclareTool[refundInput]("refund", RiskHigh, "Refund an order."),
		DeclareTool[map[string]any]("search", RiskLow, "Search.", WithInputSchema(explicit)),
	}})
	built, _ := newHandler(t, Config{Tools: []*Tool{
		NewTool("refund", RiskHigh, "Refund an order.", func(context.Context, ToolCall[refundInput]) (any, error) { return nil, nil }),
		NewTool("search", RiskLow, "Search.", func(context.Context, ToolCall[map[string]any]) (any, error) { return nil, nil }, WithInputSchema(explicit)),
	}})
	manifest := declared.Serve(context.Background(), get())
	require.Equal(t, http.StatusOK, manifest.Status, "body %s", manifest.Body)
	assert.Equal(t, string(built.Serve(context.Background(), get()).Body), string(manifest.Body))
	assert.Contains(t, string(manifest.Body), `"name":"refund"`)
	assert.Contains(t, string(manifest.Body), `"orderId"`, "the schema inferred from In")
	assert.Contains(t, string(manifest.Body), string(explicit), "the schema given")
}

// TestDeclaredToolBehindMiddleware: behind the middleware a declared
// tool's input is checked against its schema, its risk floor applied and
// its interceptors run before next; a call that passes reaches next,
// which answers it. In's Validate does not run there (next checks the
// input it decodes).
func TestDeclaredToolBehindMiddleware(t *testing.T) {
	var audited []string
	audit := func(_ context.Context, call *Call, _ *Tool) error {
		audited = append(audited, call.ToolCallID)
		return nil
	}
	h, _ := newHandler(t, Config{Tools: []*Tool{
		DeclareTool[refundInput]("refund", RiskLow, "Refund an order.", WithInterceptors(audit)),
		DeclareTool[refundInput]("refund_high", RiskHigh, "Refund an order, approved."),
	}})
	var reached []string
	mux := http.NewServeMux()
	h.Mount(mux, "/api/median", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call, _ := CallFrom(r.Context())
		reached = append(reached, call.ToolCallID)
		var in refundInput
		if err := call.BindInput(&in); err != nil {
			Respond(w, r, nil, err)
			return
		}
		Respond(w, r, map[string]int{"refunded": in.Amount}, nil)
	}))
	send := func(tool, id, input string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httpPost("/api/median", toolCall(tool, id, input)))
		return rec
	}

	rec := send("refund", "d1", `{"orderId":"A","amount":0}`)
	assert.Equal(t, http.StatusBadRequest, rec.Code)
	assert.Contains(t, rec.Body.String(), `"code":"invalid_input"`)
	assert.Contains(t, rec.Body.String(), "orderId")
	assert.Contains(t, rec.Body.String(), "amount")
	rec = send("refund_high", "d2", `{"orderId":"A-1","amount":5}`) // risk low, no approvedBy
	assert.Contains(t, rec.Body.String(), `"reason":"approval_required"`)
	assert.Empty(t, reached, "next runs for no call refused before it")
	assert.Empty(t, audited, "nor do the interceptors")

	rec = send("refund", "d3", `{"orderId":"A-1","amount":20}`)
	assert.Equal(t, `{"result":{"refunded":20}}`, rec.Body.String())
	rec = send("refund", "d4", `{"orderId":"A-1","amount":900}`) // Validate would refuse it
	assert.Equal(t, `{"result":{"refunded":900}}`, rec.Body.String())
	assert.Equal(t, []string{"d3", "d4"}, reached)
	assert.Equal(t, []string{"d3", "d4"}, audited, "the tool's interceptors ran before next")
}

// TestDeclaredToolServedByServe: a call of a declared tool that reaches
// Serve goes through every check, Validate included, and is then answered
// execution_failed saying no handler answers it here; it never panics. A
// warning is logged at most once per logInterval, and the answer is kept
// for the toolCallId.
func TestDeclaredToolServedByServe(t *testing.T) {
	clock := newSettableClock()
	obs := &observed{}
	h, logs := newHandler(t, Config{Tools: []*Tool{DeclareTool[refundInput]("refund", RiskLow, "Refund an order.")}, Now: clock.Now, Observer: obs.add})
	ctx := context.Background()

	msg := requireError(t, h.Serve(ctx, post(toolCall("refund", "s1", `{"orderId":"A"}`))), http.StatusBadRequest, CodeInvalidInput)
	assert.Contains(t, msg, "orderId")
	msg = requireError(t, h.Serve(ctx, post(toolCall("refund", "s2", `{"orderId":"A-1","amount":900}`))), http.StatusBadRequest, CodeInvalidInput)
	assert.Equal(t, "amount: at most 500 without a teammate", msg, "In's Validate runs in Serve")
	assert.Empty(t, logs.find(t, "DeclareTool"), "no warning for calls refused before the tool")

	const want = "tool refund has no function on this server: it is declared for handlers behind the Median middleware, and none answers it here"
	for _, id := range []string{"s3", "s4", "s5"} {
		msg = requireError(t, h.Serve(ctx, post(toolCall("refund", id, `{"orderId":"A-1","amount":20}`))), http.StatusOK, CodeExecutionFailed)
		assert.Equal(t, want, msg)
	}
	assert.Equal(t, CodeExecutionFailed, obs.last(t).Code)
	warnings := logs.find(t, "declared with DeclareTool")
	require.Len(t, warnings, 1, "one line per interval, not one per call")
	assert.Equal(t, "refund", warnings[0]["tool"])
	assert.Equal(t, "s3", warnings[0]["toolCallId"])
	assert.Equal(t, "WARN", warnings[0]["level"])
	assert.Contains(t, warnings[0]["msg"], "Mount")

	clock.advance(logInterval)
	requireError(t, h.Serve(ctx, post(toolCall("refund", "s6", `{"orderId":"A-1","amount":20}`))), http.StatusOK, CodeExecutionFailed)
	warnings = logs.find(t, "declared with DeclareTool")
	require.Len(t, warnings, 2, "a line again once the interval has passed")
	assert.EqualValues(t, 2, warnings[1]["suppressed"], "it counts the lines held back")

	// The answer is kept: a repeat gets it from the replay store.
	again := h.Serve(ctx, post(toolCall("refund", "s3", `{"orderId":"A-1","amount":20}`)))
	assert.Equal(t, want, requireError(t, again, http.StatusOK, CodeExecutionFailed))
	assert.True(t, obs.last(t).Replayed)
}

// TestNewRejectsBadDeclarations: a declared tool is checked as a tool
// built with NewTool is, and New reports every problem at once.
func TestNewRejectsBadDeclarations(t *testing.T) {
	tools := []*Tool{
		DeclareTool[echoInput]("bad name!", RiskLow, "Bad name."),
		DeclareTool[echoInput]("twice", RiskLow, "Declared."),
		NewTool("twice", RiskLow, "Built.", func(context.Context, ToolCall[echoInput]) (any, error) { return nil, nil }),
		DeclareTool[echoInput]("nodesc", RiskLow, ""),
		DeclareTool[echoInput]("norisk", Risk("extreme"), "Bad risk."),
		DeclareTool[funcField]("funcfield", RiskLow, "Func field."),
		DeclareTool[map[string]any]("arrayschema", RiskLow, "Array root.", WithInputSchema(json.RawMessage(`{"type":"array"}`))),
		DeclareTool[echoInput]("nilinterceptor", RiskLow, "Nil interceptor.", WithInterceptors(nil)),
	}
	h, err := New(Config{Keys: []string{testKey}, Tools: tools, Logger: discardLogger()})
	require.Error(t, err)
	assert.Nil(t, h)
	msg := err.Error()
	for _, want := range []string{`"bad name!" must match`, `"twice" is registered twice`, `"nodesc": description is empty`,
		`"norisk": risk "extreme"`, `"funcfield": input type`, `"arrayschema": input schema`, `"nilinterceptor": interceptor 0 is nil`} {
		assert.Contains(t, msg, want)
	}
	assert.Equal(t, 7, strings.Count(msg, "\n")+1, "one line per problem: %s", msg)

	_, err = New(Config{Keys: []string{testKey}, Tools: []*Tool{tools[1]}, Logger: discardLogger()})
	require.NoError(t, err, "a good declaration alone is fine")
}
