package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type bigIDInput struct {
	OrderID int64 `json:"orderId"`
}

// TestInt64InputSurvivesExactly: 2^53+1 reaches a typed tool unrounded.
func TestInt64InputSurvivesExactly(t *testing.T) {
	var got int64
	tool := NewTool("big", RiskLow, "Big ids.", func(ctx context.Context, c ToolCall[bigIDInput]) (map[string]int64, error) {
		got = c.Input.OrderID
		return map[string]int64{"orderId": c.Input.OrderID}, nil
	})
	h, _ := newHandler(t, Config{Tools: []*Tool{tool}})
	resp := h.Serve(context.Background(), post(toolCall("big", "c1", `{"orderId":9007199254740993}`)))
	res := requireResult(t, resp)
	assert.Equal(t, int64(9007199254740993), got)
	assert.Equal(t, `{"orderId":9007199254740993}`, string(res))
}

type validatedInput struct {
	From string `json:"from"`
	To   string `json:"to"`
}

func (v validatedInput) Validate() error {
	if v.From > v.To {
		return errors.New("from: must not be after to")
	}
	return nil
}

type ptrValidatedInput struct {
	N int `json:"n"`
}

func (v *ptrValidatedInput) Validate() error {
	if v.N%2 != 0 {
		return errors.New("n: must be even")
	}
	return nil
}

func TestValidateMethod(t *testing.T) {
	runs := &int64Counter{}
	a := NewTool("range", RiskLow, "Ranges.", func(ctx context.Context, c ToolCall[validatedInput]) (string, error) {
		runs.add()
		return "ok", nil
	})
	b := NewTool("even", RiskLow, "Evens.", func(ctx context.Context, c ToolCall[ptrValidatedInput]) (string, error) {
		runs.add()
		return "ok", nil
	})
	h, _ := newHandler(t, Config{Tools: []*Tool{a, b}})
	msg := requireError(t, h.Serve(context.Background(), post(toolCall("range", "c1", `{"from":"b","to":"a"}`))), http.StatusBadRequest, CodeInvalidInput)
	assert.Equal(t, "from: must not be after to", msg)
	msg = requireError(t, h.Serve(context.Background(), post(toolCall("even", "c2", `{"n":3}`))), http.StatusBadRequest, CodeInvalidInput)
	assert.Equal(t, "n: must be even", msg)
	assert.Zero(t, runs.get())
	requireResult(t, h.Serve(context.Background(), post(toolCall("range", "c3", `{"from":"a","to":"b"}`))))
	requireResult(t, h.Serve(context.Background(), post(toolCall("even", "c4", `{"n":4}`))))
	assert.Equal(t, int64(2), runs.get())
}

// panickyInput panics in Validate when Mode is "validate" and in
// UnmarshalJSON when it is "decode": user code the core runs before the tool.
type panickyInput struct {
	Mode string `json:"mode"`
}

func (p *panickyInput) Validate() error {
	if p.Mode == "validate" {
		panic("validate exploded")
	}
	return nil
}

type panickyField struct{}

func (*panickyField) UnmarshalJSON([]byte) error { panic("decode exploded") }

type panickyDecodeInput struct {
	Field *panickyField `json:"field,omitempty"`
}

// TestPanicBeforeTheToolIsAnsweredAsFailure: a panic in the input type's
// Validate or UnmarshalJSON is recovered, logged with its stack and answered
// 200 execution_failed; the tool does not run and the Handler keeps serving.
func TestPanicBeforeTheToolIsAnsweredAsFailure(t *testing.T) {
	runs := &int64Counter{}
	a := NewTool("validate_panics", RiskLow, "Panics in Validate.", func(ctx context.Context, c ToolCall[panickyInput]) (string, error) {
		runs.add()
		return "ok", nil
	})
	b := NewTool("decode_panics", RiskLow, "Panics in UnmarshalJSON.", func(ctx context.Context, c ToolCall[panickyDecodeInput]) (string, error) {
		runs.add()
		return "ok", nil
	})
	h, logs := newHandler(t, Config{Tools: []*Tool{a, b}})
	msg := requireError(t, h.Serve(context.Background(), post(toolCall("validate_panics", "p1", `{"mode":"validate"}`))), http.StatusOK, CodeExecutionFailed)
	assert.Equal(t, "tool validate_panics failed unexpectedly", msg)
	msg = requireError(t, h.Serve(context.Background(), post(toolCall("decode_panics", "p2", `{"field":{}}`))), http.StatusOK, CodeExecutionFailed)
	assert.Equal(t, "tool decode_panics failed unexpectedly", msg)
	assert.Zero(t, runs.get())
	assert.Contains(t, logs.String(), "validate exploded")
	assert.Contains(t, logs.String(), "decode exploded")
	assert.Contains(t, logs.String(), "panickyField", "the stack is logged")

	requireResult(t, h.Serve(context.Background(), post(toolCall("validate_panics", "p3", `{"mode":"fine"}`))))
	requireResult(t, h.Serve(context.Background(), post(toolCall("decode_panics", "p4", `{}`))))
	assert.Equal(t, int64(2), runs.get())
}

type richInput struct {
	OrderID string   `json:"orderId" jsonschema:"minLength=3"`
	Amount  float64  `json:"amount" jsonschema:"minimum=0"`
	Items   []string `json:"items" jsonschema:"minItems=1"`
	Kind    string   `json:"kind" jsonschema:"enum=refund,enum=exchange"`
}

// TestInvalidInputListsEveryProblem: one invalid_input answer names every
// problem with its path.
func TestInvalidInputListsEveryProblem(t *testing.T) {
	runs := &int64Counter{}
	tool := NewTool("rich", RiskMedium, "Rich input.", func(ctx context.Context, c ToolCall[richInput]) (string, error) {
		runs.add()
		return "ok", nil
	})
	h, _ := newHandler(t, Config{Tools: []*Tool{tool}})
	msg := requireError(t, h.Serve(context.Background(), post(toolCall("rich", "c1", `{"amount":"ten","items":[1],"kind":"gift"}`))), http.StatusBadRequest, CodeInvalidInput)
	for _, want := range []string{"orderId: required", "amount: expected number, got string", "items[0]", "kind"} {
		assert.Contains(t, msg, want)
	}
	assert.NotContains(t, msg, "://", "no schema URLs")
	assert.NotContains(t, msg, "urn:")
	assert.NotContains(t, msg, "richInput", "no Go type names")
	assert.Zero(t, runs.get())
	requireResult(t, h.Serve(context.Background(), post(toolCall("rich", "c2", `{"orderId":"A-1","amount":1.5,"items":["x"],"kind":"refund"}`))))
}

// Numbers written beyond the limits are answered invalid_input at once (a
// huge exponent made the validator panic on a bounded field, and math/big
// spend seconds on others; both found in review), with or without a bound,
// and the tool does not run. A whole number too large for the field is
// refused with a short message, never written out in full.
func TestWildNumberIsInvalidInput(t *testing.T) {
	runs := &int64Counter{}
	h, _ := newHandler(t, Config{Tools: []*Tool{echoTool(runs)}})
	for i, input := range []string{`{"orderId":1e1000001}`, `{"orderId":1e-1000001}`, `{"orderId":1,"extra":[2e9999999]}`, `{"orderId":1,"x":[` + strings.Repeat("1e999999,", 99) + `1]}`} {
		msg := requireError(t, h.Serve(context.Background(), post(toolCall("echo", fmt.Sprintf("wild_%d", i), input))), http.StatusBadRequest, CodeInvalidInput)
		assert.Contains(t, msg, "number out of range", input)
	}
	for i, input := range []string{`{"orderId":1e300}`, `{"orderId":1e19}`, `{"orderId":99999999999999999999999}`} {
		msg := requireError(t, h.Serve(context.Background(), post(toolCall("echo", fmt.Sprintf("big_%d", i), input))), http.StatusBadRequest, CodeInvalidInput)
		assert.Less(t, len(msg), 200, "%s: %s", input, msg)
	}
	assert.Zero(t, runs.get())
}

// A key that differs from a declared property only in case is refused:
// encoding/json would bind it to the field past the schema (found in review:
// {"ORDERID":-5} reached a tool whose orderId has minimum 1).
func TestKeyDifferingOnlyInCaseIsInvalidInput(t *testing.T) {
	runs := &int64Counter{}
	h, _ := newHandler(t, Config{Tools: []*Tool{echoTool(runs)}})
	msg := requireError(t, h.Serve(context.Background(), post(toolCall("echo", "case_1", `{"orderId":5,"ORDERID":-5,"NOTE":"this note is far longer than twenty characters"}`))), http.StatusBadRequest, CodeInvalidInput)
	assert.Equal(t, `NOTE: unknown field; property names are case-sensitive: did you mean "note"?; ORDERID: unknown field; property names are case-sensitive: did you mean "orderId"?`, msg)
	assert.Zero(t, runs.get())
}

type nestedInput struct {
	Q struct {
		N int `json:"n,omitempty" jsonschema:"minimum=0"`
	} `json:"q"`
}

// A key given twice is refused: encoding/json decodes both copies into the
// same struct while the schema sees only the last (found in review:
// {"q":{"n":-5},"q":{}} reached the tool with n = -5).
func TestDuplicateKeyIsInvalidInput(t *testing.T) {
	runs := &int64Counter{}
	tool := NewTool("nested", RiskLow, "Nested.", func(ctx context.Context, c ToolCall[nestedInput]) (int, error) {
		runs.add()
		return c.Input.Q.N, nil
	})
	h, _ := newHandler(t, Config{Tools: []*Tool{tool}})
	msg := requireError(t, h.Serve(context.Background(), post(toolCall("nested", "dup_1", `{"q":{"n":-5},"q":{}}`))), http.StatusBadRequest, CodeInvalidInput)
	assert.Equal(t, "q: given twice; each key may appear once", msg)
	assert.Zero(t, runs.get())
	requireResult(t, h.Serve(context.Background(), post(toolCall("nested", "dup_2", `{"q":{"n":5}}`))))
}

func TestUnknownTool(t *testing.T) {
	obs := &observed{}
	h, _ := newHandler(t, Config{Tools: []*Tool{echoTool(nil)}, Observer: obs.add})
	msg := requireError(t, h.Serve(context.Background(), post(toolCall("nope", "c1", `{}`))), http.StatusNotFound, CodeUnknownTool)
	assert.Contains(t, msg, `"nope"`)
	ev := obs.last(t)
	assert.Equal(t, "nope", ev.Tool)
	assert.Equal(t, "c1", ev.ToolCallID)
	assert.Equal(t, CodeUnknownTool, ev.Code)
	assert.Equal(t, http.StatusNotFound, ev.Status)
}

type funcField struct {
	F func() `json:"f"`
}

// TestNewReportsEveryToolProblem: New lists every problem in one error.
func TestNewReportsEveryToolProblem(t *testing.T) {
	ok := func(ctx context.Context, c ToolCall[echoInput]) (string, error) { return "", nil }
	tools := []*Tool{
		NewTool("bad name!", RiskLow, "Bad name.", ok),
		NewTool("twice", RiskLow, "First.", ok),
		NewTool("twice", RiskLow, "Second.", ok),
		NewTool[echoInput, string]("nilfn", RiskLow, "Nil function.", nil),
		NewTool("badschema", RiskLow, "Bad schema.", ok, WithInputSchema(json.RawMessage(`{"type":"object","properties":{"a":{"type":"nonsense"}}}`))),
		NewTool("arrayschema", RiskLow, "Array root.", ok, WithInputSchema(json.RawMessage(`{"type":"array"}`))),
		NewTool("funcfield", RiskLow, "Func field.", func(ctx context.Context, c ToolCall[funcField]) (string, error) { return "", nil }),
		NewTool("norisk", Risk("extreme"), "Bad risk.", ok),
		NewTool("nodesc", RiskLow, "", ok),
		NewTool(strings.Repeat("a", 65), RiskLow, "Long name.", ok),
		nil,
		{name: "zero"}, // not built with NewTool
	}
	h, err := New(Config{Keys: []string{testKey}, Tools: tools, Logger: discardLogger()})
	require.Error(t, err)
	assert.Nil(t, h)
	msg := err.Error()
	for _, want := range []string{`"bad name!"`, `"twice" is registered twice`, `"nilfn"`, "function is nil", `"badschema"`, `"arrayschema"`, `"funcfield"`, "func", `"norisk"`, `"nodesc"`, "description is empty", strings.Repeat("a", 65), "tool 10 is nil", `"zero" was not built with protocol.NewTool`} {
		assert.Contains(t, msg, want)
	}
	for _, tool := range tools {
		if tool != nil && tool.Name() != "twice" {
			require.Error(t, tool.Err(), "Tool.Err reports what New reports of %q", tool.Name())
			assert.Contains(t, msg, tool.Err().Error())
		}
	}
	// Each good tool alone is fine.
	_, err = New(Config{Keys: []string{testKey}, Tools: []*Tool{tools[1]}, Logger: discardLogger()})
	require.NoError(t, err)
}

// TestNewReportsToolAndKeyProblemsTogether: the doc of New promises every
// problem at once, the key included.
func TestNewReportsToolAndKeyProblemsTogether(t *testing.T) {
	_, err := New(Config{Keys: []string{"short"}, Tools: []*Tool{NewTool("bad name!", RiskLow, "x", func(ctx context.Context, c ToolCall[echoInput]) (string, error) { return "", nil })}, Logger: discardLogger()})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bad name!")
	assert.ErrorIs(t, err, CodeInvalidMedianKey)
}

func TestToolAccessors(t *testing.T) {
	tool := echoTool(nil)
	assert.Equal(t, "echo", tool.Name())
	assert.NoError(t, tool.Err())
	assert.Equal(t, RiskLow, tool.Risk())
	assert.Equal(t, "Echoes the order id.", tool.description)
	assert.JSONEq(t, `"object"`, gjson(t, tool.inputSchema, "type"))

	explicit := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)
	tool = NewTool("search", RiskLow, "Search.", func(ctx context.Context, c ToolCall[map[string]any]) (any, error) { return c.Input["q"], nil }, WithInputSchema(explicit))
	assert.Equal(t, string(explicit), string(tool.inputSchema))
	h, _ := newHandler(t, Config{Tools: []*Tool{tool, echoTool(nil)}})
	requireError(t, h.Serve(context.Background(), post(toolCall("search", "c1", `{}`))), http.StatusBadRequest, CodeInvalidInput)
	res := requireResult(t, h.Serve(context.Background(), post(toolCall("search", "c2", `{"q":"shoes"}`))))
	assert.Equal(t, `"shoes"`, string(res))
}

// gjson returns the JSON of one top-level key of raw.
func gjson(t *testing.T, raw []byte, key string) string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m))
	return string(m[key])
}

// TestToolCallFields: the typed call carries every context field.
func TestToolCallFields(t *testing.T) {
	var got ToolCall[echoInput]
	var fromCtx *Call
	tool := NewTool("echo", RiskLow, "Echo.", func(ctx context.Context, c ToolCall[echoInput]) (string, error) {
		got = c
		fromCtx, _ = CallFrom(ctx)
		return "ok", nil
	})
	h, _ := newHandler(t, Config{Tools: []*Tool{tool}})
	body := `{"tool":"echo","toolCallId":"apr_1","input":{"orderId":42,"note":"hi"},"context":{"conversationId":"conv_9","risk":"high","visitor":{"verified":true,"externalId":"u_1","email":"e@x","name":"Bo"},"approvedBy":"Ada Lovelace"}}`
	requireResult(t, h.Serve(context.Background(), post(body)))
	require.NotNil(t, got.Call)
	assert.Equal(t, echoInput{OrderID: 42, Note: "hi"}, got.Input)
	assert.Equal(t, "echo", got.Tool)
	assert.Equal(t, "apr_1", got.ToolCallID)
	assert.Equal(t, "conv_9", got.ConversationID)
	assert.Equal(t, RiskHigh, got.Risk)
	assert.Equal(t, "Ada Lovelace", got.ApprovedBy)
	id, ok := got.Visitor.ExternalID()
	assert.True(t, ok)
	assert.Equal(t, "u_1", id)
	assert.Equal(t, "e@x", got.Visitor.UnverifiedEmail)
	assert.Equal(t, "Bo", got.Visitor.UnverifiedName)
	assert.Equal(t, `{"orderId":42,"note":"hi"}`, string(got.RawInput))
	assert.Nil(t, fromCtx, "Serve does not put the call on the tool's context")
}

func TestBindInput(t *testing.T) {
	c := &Call{RawInput: json.RawMessage(`{"orderId":"x"}`)}
	var in echoInput
	err := c.BindInput(&in)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, CodeInvalidInput, e.Code)
	assert.Equal(t, "orderId: expected integer, got string", e.Message)
	c.RawInput = json.RawMessage(`{"orderId":9007199254740993}`)
	require.NoError(t, c.BindInput(&in))
	assert.Equal(t, int64(9007199254740993), in.OrderID)
}
