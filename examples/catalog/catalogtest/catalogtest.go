// Package catalogtest checks, over HTTP, that an example app serves the demo
// catalog as examples/catalog documents it, and holds the catalog's samples for the
// conformance suite. The four examples' tests share it, so each example's
// main_test.go only builds its app and points these checks at it.
package catalogtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/examples/catalog"
	"github.com/median-go/median/protocol"
)

// Key is the fixed Median key the examples' tests run with.
const Key = "examples-test-key-0123456789-abcdefghijklmnopqrstuv"

// MountPath is where every example mounts the Median endpoint.
const MountPath = "/api/median"

// The wire names of the contract (PROTOCOL.md §1, §3).
const (
	SignatureHeader = "Median-Signature"
	ContentType     = "application/json"
	AllowHeader     = "GET, POST"
)

// MustKey parses a key the tests know to be usable.
func MustKey(key string) protocol.Key {
	k, err := protocol.ParseKey(key)
	if err != nil {
		panic("catalogtest: " + err.Error())
	}
	return k
}

// NewDemo returns a fresh demo (empty order state) running with Key, whose
// core logs go nowhere.
func NewDemo(t testing.TB) *catalog.Demo {
	t.Helper()
	d, err := catalog.New(catalog.Options{Key: Key, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// Samples returns the catalog's samples for conformance.Target.Tools:
// lookup_order for a verified visitor (a result with its widget link), an
// anonymous one (the not_signed_in refusal) and the missing order
// (execution_failed); cancel_order marked SideEffects, so the suite only
// checks that its schema refuses bad inputs.
func Samples() []conformance.ToolSample {
	verified := conformance.Visitor{Verified: true, ExternalID: "user_7", Email: "ada@example.com", Name: "Ada"}
	bad := []json.RawMessage{json.RawMessage(`{}`), json.RawMessage(`{"orderId": 1001}`)}
	return []conformance.ToolSample{
		{Tool: catalog.LookupOrderTool, Input: json.RawMessage(`{"orderId":"A-1001"}`), Visitor: verified,
			Check: checkOrder("A-1001"), InvalidInputs: bad},
		{Tool: catalog.LookupOrderTool, Input: json.RawMessage(`{"orderId":"A-1001"}`), Expect: "refusal"},
		{Tool: catalog.LookupOrderTool, Input: json.RawMessage(`{"orderId":"missing"}`), Visitor: verified, Expect: "execution_failed"},
		// Harmless if it ran: the risk-floor cases use it without side effects.
		{Tool: catalog.CancelOrderTool, Input: json.RawMessage(`{"orderId":"missing"}`), ApprovedBy: "A test from the CLI",
			Expect: "execution_failed"},
		{Tool: catalog.CancelOrderTool, Input: json.RawMessage(`{"orderId":"C-3003"}`), ApprovedBy: "A test from the CLI",
			SideEffects: true, InvalidInputs: bad},
	}
}

// checkOrder checks a lookup_order result for id.
func checkOrder(id string) func(json.RawMessage) error {
	return func(result json.RawMessage) error {
		var got struct {
			OrderID    string `json:"orderId"`
			NavigateTo string `json:"medianNavigateTo"`
		}
		if err := json.Unmarshal(result, &got); err != nil {
			return err
		}
		if got.OrderID != id || got.NavigateTo != catalog.OrderPath(id) {
			return &checkError{want: `orderId ` + id + ` and medianNavigateTo ` + catalog.OrderPath(id), got: string(result)}
		}
		return nil
	}
}

type checkError struct{ want, got string }

func (e *checkError) Error() string { return "want " + e.want + ", got " + e.got }

// Visitor is the visitor of a call built by ToolCall.
type Visitor struct {
	Verified   bool   `json:"verified"`
	ExternalID string `json:"externalId,omitempty"`
}

// Verified is a signed-in visitor.
var Verified = Visitor{Verified: true, ExternalID: "user_7"}

// ApprovedBy is who approved the calls ToolCall builds at risk reviewed
// or high (what `median tools test` sends), so they pass the risk floor.
const ApprovedBy = "A test from the CLI"

// ToolCall returns the JSON body of a call of tool with input, approved by
// ApprovedBy when risk is reviewed or high.
func ToolCall(tool, toolCallID string, input any, v Visitor, risk protocol.Risk) []byte {
	ctx := map[string]any{
		"conversationId": "conv_" + toolCallID,
		"risk":           risk,
		"visitor":        v,
	}
	if risk == protocol.RiskReviewed || risk == protocol.RiskHigh {
		ctx["approvedBy"] = ApprovedBy
	}
	body, err := json.Marshal(map[string]any{
		"tool":       tool,
		"toolCallId": toolCallID,
		"input":      input,
		"context":    ctx,
	})
	if err != nil {
		panic(err)
	}
	return body
}

// Answer is one HTTP answer.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the answer's body.
func (a Answer) JSON(t testing.TB) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal(a.Body, &v), "answer is not a JSON object: %s", a.Body)
	return v
}

// Send sends method url with body, signed with Key now when sign is set.
func Send(t testing.TB, do func(*http.Request) (*http.Response, error), method, url string, body []byte, sign bool) Answer {
	t.Helper()
	var r io.Reader = http.NoBody
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if sign {
		req.Header.Set(SignatureHeader, MustKey(Key).Sign(time.Now(), body))
	}
	resp, err := do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return Answer{Status: resp.StatusCode, Header: resp.Header, Body: got}
}

// RunAll runs every check the four examples share against the app build
// returns for a demo, driven in memory: the catalog's behaviour ([Run]), the
// ordinary routes ([RunRoutes]) and the conformance suite with the
// catalog's samples, key-configuration cases included.
func RunAll(t *testing.T, build func(*catalog.Demo) func(*http.Request) (*http.Response, error)) {
	target := func(d *catalog.Demo) conformance.Target {
		return conformance.Target{Do: build(d), URL: "http://example.test" + MountPath, Key: Key, Replay: true}
	}
	t.Run("catalog", func(t *testing.T) { Run(t, target(NewDemo(t))) })
	t.Run("routes", func(t *testing.T) { RunRoutes(t, build(NewDemo(t)), "http://example.test") })
	t.Run("conformance", func(t *testing.T) {
		tg := target(NewDemo(t))
		tg.Tools = Samples()
		tg.BuildWithKey = func(key string) (func(*http.Request) (*http.Response, error), error) {
			demo, err := catalog.New(catalog.Options{Key: key, NoDevKey: true, Logger: slog.New(slog.DiscardHandler), Warnings: io.Discard})
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { _ = demo.Close() })
			return build(demo), nil
		}
		conformance.Run(t, tg)
	})
	t.Run("mediancheck", func(t *testing.T) { RunDeployed(t, target(NewDemo(t))) })
}

// RunDeployed checks target as mediancheck checks a deployed endpoint with
// the catalog's samples file (mediancheck -url … -samples
// examples/catalog/samples.json): every case passes or does not apply,
// none is skipped.
func RunDeployed(t *testing.T, target conformance.Target) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	samples, err := ReadSamplesFile(filepath.Join(filepath.Dir(file), "..", "samples.json"))
	require.NoError(t, err)
	target.Tools, target.Deployed = samples, true
	report, err := conformance.Check(context.Background(), target, conformance.Options{})
	require.NoError(t, err)
	passed := 0
	for _, v := range report.Verdicts {
		switch v.Status {
		case "fail", "skip":
			t.Errorf("%s %s: %s", v.Status, v.ID, v.Message)
		case "pass":
			passed++
		}
	}
	assert.Positive(t, passed)
}

// ReadSamplesFile reads the catalog's samples file (or another file of
// samples for mediancheck -samples).
func ReadSamplesFile(path string) ([]conformance.ToolSample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return conformance.ReadSamples(f)
}
