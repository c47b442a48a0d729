package conformance_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/conformance/internal/wire"
	"github.com/median-go/median/protocol"
)

// TestExampleCallTool runs the code ExampleCallTool shows.
func TestExampleCallTool(t *testing.T) { testLookupOrder(t) }

// recording wraps a target so the test sees each call's body.
func recording(target conformance.Target) (conformance.Target, func() []map[string]any) {
	var (
		mu     sync.Mutex
		bodies []map[string]any
	)
	inner := target.Do
	target.Do = func(r *http.Request) (*http.Response, error) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m map[string]any
			_ = json.Unmarshal(body, &m)
			mu.Lock()
			bodies = append(bodies, m)
			mu.Unlock()
		}
		return inner(r)
	}
	return target, func() []map[string]any {
		mu.Lock()
		defer mu.Unlock()
		return bodies
	}
}

func TestCallToolDecodesEachKindOfAnswer(t *testing.T) {
	target := conformance.HandlerTarget(mux(newHandler(t, testKey, nil)), mountPath, testKey)

	type echo struct{ Message string }
	r := conformance.CallTool[echo](t, target, conformance.ToolSample{Tool: "echo", Input: map[string]string{"message": "hi"}})
	require.Nil(t, r.Error)
	require.Nil(t, r.Refusal)
	assert.Equal(t, echo{Message: "hi"}, r.Result)
	assert.Equal(t, http.StatusOK, r.Status)
	assert.JSONEq(t, `{"result":{"message":"hi"}}`, string(r.Raw))
	assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
	assert.Regexp(t, `^call_[0-9a-f]{32}$`, r.ToolCallID)

	r2 := conformance.CallTool[map[string]any](t, target, conformance.ToolSample{Tool: "refuse"})
	require.Nil(t, r2.Error)
	require.NotNil(t, r2.Refusal)
	assert.Nil(t, r2.Result, "a refusal leaves Result zero")
	no := false
	assert.Equal(t, conformance.Refusal{OK: &no, Allowed: &no, Outcome: "blocked", Reason: "not_signed_in", Detail: "Sign in to see your orders."}, *r2.Refusal)

	r2 = conformance.CallTool[map[string]any](t, target, conformance.ToolSample{Tool: "refuse", Visitor: conformance.Visitor{Verified: true, ExternalID: "user_7"}})
	require.Nil(t, r2.Refusal)
	assert.Equal(t, map[string]any{"orders": []any{}}, r2.Result)

	r3 := conformance.CallTool[json.RawMessage](t, target, conformance.ToolSample{Tool: "echo", Input: json.RawMessage(`{"message":5}`)})
	require.NotNil(t, r3.Error)
	assert.Equal(t, protocol.CodeInvalidInput, r3.Error.Code)
	assert.Contains(t, r3.Error.Message, "message")
	assert.Equal(t, http.StatusBadRequest, r3.Status)

	r3 = conformance.CallTool[json.RawMessage](t, target, conformance.ToolSample{Tool: "fail", Input: []byte(`{}`)})
	require.NotNil(t, r3.Error)
	assert.Equal(t, protocol.CodeExecutionFailed, r3.Error.Code)
	assert.Equal(t, http.StatusOK, r3.Status)

	r3 = conformance.CallTool[json.RawMessage](t, target, conformance.ToolSample{Tool: "no_such_tool"})
	require.NotNil(t, r3.Error)
	assert.Equal(t, protocol.CodeUnknownTool, r3.Error.Code)
}

// TestCallToolReadsTheProductPagesRefusal: every refusal field is optional;
// the product page's own example has no outcome.
func TestCallToolReadsTheProductPagesRefusal(t *testing.T) {
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			_, _ = io.WriteString(w, `{"tools":[]}`)
			return
		}
		_, _ = io.WriteString(w, `{"result":{"ok":false,"reason":"not_signed_in","detail":"Sign in to see orders."}}`)
	})
	r := conformance.CallTool[any](t, conformance.HandlerTarget(page, mountPath, testKey), conformance.ToolSample{Tool: "lookup_order"})
	require.NotNil(t, r.Refusal)
	no := false
	assert.Equal(t, conformance.Refusal{OK: &no, Reason: "not_signed_in", Detail: "Sign in to see orders."}, *r.Refusal)
}

// TestCallToolRefusesARefusalItCannotDecode: a refusal whose field,
// matched case-insensitively, has the wrong type is not returned half
// decoded.
func TestCallToolRefusesARefusalItCannotDecode(t *testing.T) {
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			_, _ = io.WriteString(w, `{"tools":[]}`)
			return
		}
		_, _ = io.WriteString(w, `{"result":{"ok":false,"Reason":5}}`)
	})
	_, err := conformance.Call[any](t.Context(), conformance.HandlerTarget(page, mountPath, testKey), conformance.ToolSample{Tool: "lookup_order"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a refusal whose fields are not the contract's")
}

func TestCallToolSendsTheCallMedianSends(t *testing.T) {
	target, bodies := recording(conformance.HandlerTarget(mux(newHandler(t, testKey, nil)), mountPath, testKey))
	ctx := func(i int) map[string]any { return bodies()[i]["context"].(map[string]any) }

	// Defaults: the declared risk; approvedBy only where the risk needs it.
	r := conformance.CallTool[map[string]any](t, target, conformance.ToolSample{Tool: "refund", Input: map[string]string{"orderId": "A-1"}})
	require.Nil(t, r.Error)
	assert.Equal(t, map[string]any{"orderId": "A-1", "refunded": true}, r.Result)
	assert.Equal(t, "high", ctx(0)["risk"])
	assert.Equal(t, "A teammate", ctx(0)["approvedBy"])
	assert.Equal(t, map[string]any{"verified": false}, ctx(0)["visitor"])

	conformance.CallTool[any](t, target, conformance.ToolSample{Tool: "strict", Input: map[string]any{"plan": "pro", "seats": 1}})
	assert.Equal(t, "medium", ctx(1)["risk"])
	assert.NotContains(t, ctx(1), "approvedBy")

	// The sample's fields override every default.
	r = conformance.CallTool[map[string]any](t, target, conformance.ToolSample{
		Tool: "refund", Input: map[string]string{"orderId": "A-2"},
		Risk: "reviewed", Unapproved: true, ToolCallID: "test_0001", ConversationID: "conv_1",
		Visitor: conformance.Visitor{Verified: true, ExternalID: "user_7", Email: "a@b.c", Name: "Ada"},
	})
	assert.Equal(t, "test_0001", r.ToolCallID)
	b := bodies()[2]
	assert.Equal(t, "test_0001", b["toolCallId"])
	assert.Equal(t, map[string]any{"conversationId": "conv_1", "risk": "reviewed",
		"visitor": map[string]any{"verified": true, "externalId": "user_7", "email": "a@b.c", "name": "Ada"}}, b["context"])

	conformance.CallTool[any](t, target, conformance.ToolSample{Tool: "echo", Risk: "high", ApprovedBy: "Grace"})
	assert.Equal(t, "Grace", ctx(3)["approvedBy"])
	assert.Equal(t, map[string]any{}, bodies()[3]["input"], "nil input is {}")

	// The same id and body again: the stored answer, byte for byte.
	first := conformance.CallTool[map[string]any](t, target, conformance.ToolSample{Tool: "counter", ToolCallID: "call_again", ConversationID: "conv_again"})
	again := conformance.CallTool[map[string]any](t, target, conformance.ToolSample{Tool: "counter", ToolCallID: "call_again", ConversationID: "conv_again"})
	assert.Equal(t, string(first.Raw), string(again.Raw))
}

// TestCallToolBuildsTheBodyMediancheckBuilds: CallTool's body is the call
// Median sends for the sample's parts (the body wire.CallBody builds for
// mediancheck call and the inspector): the tool's declared risk and its
// approval by default, the visitor's id only when verified, and the
// conversationId defaulting to the toolCallId, as Median sends its own
// test calls. {id} in a body stands for the toolCallId CallTool chose.
func TestCallToolBuildsTheBodyMediancheckBuilds(t *testing.T) {
	target, bodies := recording(conformance.HandlerTarget(mux(newHandler(t, testKey, nil)), mountPath, testKey))
	visitor := conformance.Visitor{Verified: true, ExternalID: "user_7", Email: "a@b.c", Name: "Ada"}
	for i, c := range []struct {
		smp  conformance.ToolSample
		want string
	}{
		{conformance.ToolSample{Tool: "echo", Input: json.RawMessage(`{ "message" : "<hi>" }`), Visitor: visitor},
			`{"tool":"echo","toolCallId":"{id}","input":{"message":"<hi>"},"context":{"conversationId":"{id}","risk":"low","visitor":{"verified":true,"externalId":"user_7","email":"a@b.c","name":"Ada"}}}`},
		{conformance.ToolSample{Tool: "refund", Input: map[string]string{"orderId": "A-1"}, ToolCallID: "test_0001"},
			`{"tool":"refund","toolCallId":"test_0001","input":{"orderId":"A-1"},"context":{"conversationId":"test_0001","risk":"high","approvedBy":"A teammate","visitor":{"verified":false}}}`},
		{conformance.ToolSample{Tool: "echo", Input: map[string]string{"message": "hi"}, Risk: "high", Unapproved: true, ConversationID: "conv_9", Visitor: conformance.Visitor{ExternalID: "not_verified"}},
			`{"tool":"echo","toolCallId":"{id}","input":{"message":"hi"},"context":{"conversationId":"conv_9","risk":"high","visitor":{"verified":false}}}`},
	} {
		r := conformance.CallTool[any](t, target, c.smp)
		var want map[string]any
		require.NoError(t, json.Unmarshal([]byte(strings.ReplaceAll(c.want, "{id}", r.ToolCallID)), &want))
		assert.Equal(t, want, bodies()[i], "sample %d", i)
	}
}

// TestCallToolSendsRawInputAsItIs: a json.RawMessage input reaches the
// endpoint with its keys in their order and its numbers as written (a
// float64 would round this one).
func TestCallToolSendsRawInputAsItIs(t *testing.T) {
	const input = `{"message":"hi","n":12345678901234567890,"m":1}`
	target := conformance.HandlerTarget(mux(newHandler(t, testKey, nil)), mountPath, testKey)
	var sent []byte
	inner := target.Do
	target.Do = func(r *http.Request) (*http.Response, error) {
		if r.Method == http.MethodPost {
			sent, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(sent))
		}
		return inner(r)
	}
	conformance.CallTool[any](t, target, conformance.ToolSample{Tool: "echo", Input: json.RawMessage(input)})
	assert.Contains(t, string(sent), `"input":`+input)
}

// TestCasesSendTheBuiltBody: a case that sends a sample's call as Median
// would (a result, an invalid input, the risk floor's approved call) sends
// wire.CallBody's bytes as built, a compact input byte for byte: its key
// order (not sorted), its escapes and "<", which encoding/json would send
// as \u003c.
func TestCasesSendTheBuiltBody(t *testing.T) {
	const (
		input   = `{"orderId":"<A-1> & é \u00e9","note":"<b>"}`
		invalid = `{"orderId":"","note":"<i>"}`
	)
	target := conformance.HandlerTarget(mux(newHandler(t, testKey, nil)), mountPath, testKey)
	target.Tools = []conformance.ToolSample{{Tool: "refund", Input: json.RawMessage(input), InvalidInputs: []json.RawMessage{json.RawMessage(invalid)}}}
	var (
		mu   sync.Mutex
		sent [][]byte
	)
	inner := target.Do
	target.Do = func(r *http.Request) (*http.Response, error) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			mu.Lock()
			sent = append(sent, body)
			mu.Unlock()
		}
		return inner(r)
	}
	ids := []string{"execution/result", "input/invalid", "risk/approved-runs"}
	rep, err := conformance.Check(t.Context(), target, conformance.Options{Run: "^(" + strings.Join(ids, "|") + ")$"})
	require.NoError(t, err)
	for _, id := range ids {
		v, ok := verdict(rep, id)
		require.True(t, ok, "case %s did not run", id)
		assert.Equal(t, "pass", v.Status, "case %s: %s", id, v)
	}
	var asGiven, invalidAsGiven int
	for _, body := range sent {
		assert.NotContains(t, string(body), `\u003c`, "a body was HTML-escaped: %s", body)
		if !bytes.Contains(body, []byte(`"refund"`)) {
			continue
		}
		var c struct {
			ToolCallID string          `json:"toolCallId"`
			Input      json.RawMessage `json:"input"`
			Context    struct {
				ConversationID string `json:"conversationId"`
				Risk           string `json:"risk"`
				ApprovedBy     string `json:"approvedBy"`
			} `json:"context"`
		}
		require.NoError(t, json.Unmarshal(body, &c), "%s", body)
		want, err := wire.CallBody("refund", c.ToolCallID, c.Input, wire.Persona{Risk: c.Context.Risk, ApprovedBy: c.Context.ApprovedBy, ConversationID: c.Context.ConversationID})
		require.NoError(t, err)
		assert.Equal(t, string(want), string(body), "not the body wire.CallBody builds")
		switch string(c.Input) {
		case input:
			asGiven++
		case invalid:
			invalidAsGiven++
		}
	}
	assert.GreaterOrEqual(t, asGiven, 2, "the input was not sent byte for byte by execution/result and risk/approved-runs")
	assert.Equal(t, 1, invalidAsGiven, "the invalid input was not sent byte for byte by input/invalid")
}

// TestCallToolRepeatsWithTheReplysToolCallID: the repeat the Reply's
// ToolCallID doc describes sends the same body (the conversationId follows
// from the toolCallId), so it gets the first answer, not 409.
func TestCallToolRepeatsWithTheReplysToolCallID(t *testing.T) {
	target, bodies := recording(conformance.HandlerTarget(mux(newHandler(t, testKey, nil)), mountPath, testKey))
	call := conformance.ToolSample{Tool: "counter", Visitor: conformance.Visitor{Verified: true, ExternalID: "user_7"}}
	first := conformance.CallTool[map[string]int](t, target, call)
	require.Nil(t, first.Error, "%s", first.Raw)

	call.ToolCallID = first.ToolCallID
	again := conformance.CallTool[map[string]int](t, target, call)
	require.Nil(t, again.Error, "the repeat must get the first answer, not %s", again.Raw)
	assert.Equal(t, http.StatusOK, again.Status)
	assert.Equal(t, string(first.Raw), string(again.Raw), "the stored answer, byte for byte: the tool ran once")
	require.Len(t, bodies(), 2)
	assert.Equal(t, bodies()[0], bodies()[1], "a repeat sends the same body")

	other := conformance.CallTool[map[string]int](t, target, conformance.ToolSample{Tool: "counter"})
	assert.NotEqual(t, bodies()[0]["context"].(map[string]any)["conversationId"], bodies()[2]["context"].(map[string]any)["conversationId"],
		"another toolCallId is another conversation")
	assert.Greater(t, other.Result["run"], first.Result["run"])
}

// fakeTB records what CallTool reports instead of stopping a test.
type fakeTB struct {
	testing.TB
	fatal string
}

func (f *fakeTB) Helper()           {}
func (f *fakeTB) Fatal(args ...any) { f.fatal = fmt.Sprint(args...) }

func TestCallToolStopsTheTestWhenItCannotAnswer(t *testing.T) {
	good := conformance.HandlerTarget(mux(newHandler(t, testKey, nil)), mountPath, testKey)
	text := conformance.HandlerTarget(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "upstream timed out", http.StatusBadGateway)
	}), mountPath, testKey)
	down := good
	down.Do = func(*http.Request) (*http.Response, error) { return nil, errors.New("connection refused") }
	badKey := good
	badKey.Key = "short"

	tests := []struct {
		name   string
		call   func(tb testing.TB)
		want   string
		status int
	}{
		{"not the contract's answer", func(tb testing.TB) { conformance.CallTool[any](tb, text, conformance.ToolSample{Tool: "echo"}) }, "status 502: not the contract's answer", http.StatusBadGateway},
		{"result of another type", func(tb testing.TB) {
			conformance.CallTool[int](tb, good, conformance.ToolSample{Tool: "echo", Input: map[string]string{"message": "hi"}})
		}, "the result does not decode into int", http.StatusOK},
		{"no answer", func(tb testing.TB) { conformance.CallTool[any](tb, down, conformance.ToolSample{Tool: "echo"}) }, "no answer: connection refused", 0},
		{"unusable key", func(tb testing.TB) { conformance.CallTool[any](tb, badKey, conformance.ToolSample{Tool: "echo"}) }, "Target.Key is not usable", 0},
		{"invalid raw input", func(tb testing.TB) {
			conformance.CallTool[any](tb, good, conformance.ToolSample{Tool: "echo", Input: json.RawMessage(`{"message":`)})
		}, "the input is not valid JSON", 0},
		{"input that does not encode", func(tb testing.TB) {
			conformance.CallTool[any](tb, good, conformance.ToolSample{Tool: "echo", Input: func() {}})
		}, "encoding the input", 0},
		{"incomplete target", func(tb testing.TB) {
			conformance.CallTool[any](tb, conformance.Target{}, conformance.ToolSample{Tool: "echo"})
		}, "Target.Do is nil", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := &fakeTB{TB: t}
			tt.call(tb)
			assert.Contains(t, tb.fatal, tt.want)
			assert.NotContains(t, tb.fatal, testKey)
		})
	}

	// Call, the testing-free form, fills the reply as far as it can.
	r, err := conformance.Call[any](t.Context(), text, conformance.ToolSample{Tool: "echo"})
	require.Error(t, err)
	assert.Equal(t, http.StatusBadGateway, r.Status)
	assert.True(t, strings.HasPrefix(string(r.Raw), "upstream timed out"))
}

// TestEveryRequestCarriesTheSuitesUserAgent: the server's log tells the
// suite's calls apart by their User-Agent, for every request of a run, of
// CallTool and of the key cases' rebuilt endpoints; Target.UserAgent
// replaces it.
func TestEveryRequestCarriesTheSuitesUserAgent(t *testing.T) {
	var (
		mu     sync.Mutex
		agents = map[string]int{}
	)
	seen := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			agents[r.UserAgent()]++
			mu.Unlock()
			h.ServeHTTP(w, r)
		})
	}
	srv := httptest.NewServer(seen(mux(newHandler(t, testKey, nil))))
	defer srv.Close()
	target := fixtureTarget(t, seen(mux(newHandler(t, testKey, nil))))
	target.BuildWithKey = func(key string) (func(*http.Request) (*http.Response, error), error) {
		return inProcess(seen(mux(newHandler(t, key, nil)))), nil
	}
	rep, err := conformance.Check(t.Context(), target, conformance.Options{})
	require.NoError(t, err)
	require.NoError(t, rep.Err())
	conformance.CallTool[any](t, target, conformance.ToolSample{Tool: "echo", Input: map[string]string{"message": "hi"}})
	conformance.CallTool[any](t, conformance.URLTarget(srv.URL+mountPath, testKey), conformance.ToolSample{Tool: "echo", Input: map[string]string{"message": "hi"}})

	mu.Lock()
	require.Len(t, agents, 1, "one User-Agent on every request: %v", agents)
	for ua, n := range agents {
		assert.Regexp(t, `^median-go-conformance/\S+$`, ua)
		assert.Greater(t, n, len(conformance.Cases()), "every request of the run")
	}
	clear(agents)
	mu.Unlock()

	target.UserAgent = "mediancheck/v1.0.0"
	conformance.CallTool[any](t, target, conformance.ToolSample{Tool: "echo"})
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, map[string]int{"mediancheck/v1.0.0": 2}, agents, "the manifest GET and the call")
}

// TestSuiteIgnoresASamplesToolCallID: ToolCallID is CallTool's; each call
// the suite sends has its own id, even from a sample that names one.
func TestSuiteIgnoresASamplesToolCallID(t *testing.T) {
	target, bodies := recording(fixtureTarget(t, mux(newHandler(t, testKey, nil))))
	for i := range target.Tools {
		target.Tools[i].ToolCallID = "call_fixed"
	}
	rep, err := conformance.Check(t.Context(), target, conformance.Options{Run: "^(execution|replay)/"})
	require.NoError(t, err)
	require.NoError(t, rep.Err())
	require.NotEmpty(t, bodies())
	for _, b := range bodies() {
		assert.NotEqual(t, "call_fixed", b["toolCallId"])
	}
	assert.Equal(t, "call_fixed", target.Tools[0].ToolCallID, "the caller's samples are left as they were")
}
