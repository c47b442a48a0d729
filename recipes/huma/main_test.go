package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/protocol"
	"github.com/median-go/median/recipes/internal/recipetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start serves the recipe's app around its endpoint built with key.
func start(t testing.TB, key string) (string, error) {
	h, err := newHandler(key, slog.New(slog.DiscardHandler))
	if h == nil {
		return "", err
	}
	t.Cleanup(func() { _ = h.Close() })
	return recipetest.ServeHTTP(t, newApp(h)), err
}

// badInputs break one of huma's tags of OrderInput each (pattern,
// maxLength, the required field, the type, no other property).
var badInputs = []json.RawMessage{
	json.RawMessage(`{"orderId":"1001"}`),
	json.RawMessage(`{"orderId":"A-10010"}`),
	json.RawMessage(`{}`),
	json.RawMessage(`{"orderId":1001}`),
	json.RawMessage(`{"orderId":"A-1001","note":"x"}`),
}

// verified is a signed-in visitor.
var verified = conformance.Visitor{Verified: true, ExternalID: "user_7"}

// samples are get_order's calls for the suite.
func samples() []conformance.ToolSample {
	return []conformance.ToolSample{
		{Tool: "get_order", Input: OrderInput{OrderID: "A-1001"}, Visitor: verified, InvalidInputs: badInputs, Check: func(result json.RawMessage) error {
			var got Order
			if err := json.Unmarshal(result, &got); err != nil {
				return err
			}
			if got != (Order{OrderID: "A-1001", Status: "shipped"}) {
				return fmt.Errorf("want order A-1001 shipped, got %s", result)
			}
			return nil
		}},
		{Tool: "get_order", Input: OrderInput{OrderID: "Z-9999"}, Visitor: verified, Expect: "execution_failed"},
		{Tool: "get_order", Input: OrderInput{OrderID: "A-1001"}, Expect: "refusal"},
	}
}

// TestConformance runs the whole suite against the app over the network.
func TestConformance(t *testing.T) {
	recipetest.Run(t, start, samples())
}

// TestHumaTagsReachTheTool checks the recipe against huma's trap: huma's
// tags on the one input type constrain the Median tool as they constrain
// huma's own operation (the Handler's inferred schema would ignore them
// and run the tool).
func TestHumaTagsReachTheTool(t *testing.T) {
	base, err := start(t, recipetest.Key)
	if err != nil {
		t.Fatal(err)
	}
	target := recipetest.Target(base)
	for _, in := range badInputs {
		r := conformance.CallTool[Order](t, target, conformance.ToolSample{Tool: "get_order", Input: in, Visitor: verified})
		if r.Status != http.StatusBadRequest || r.Error == nil || r.Error.Code != protocol.CodeInvalidInput {
			t.Errorf("get_order %s: got %d %s, want 400 invalid_input", in, r.Status, r.Raw)
		}
	}
	if r := conformance.CallTool[Order](t, target, conformance.ToolSample{Tool: "get_order", Input: OrderInput{OrderID: "B-2002"}, Visitor: verified}); r.Error != nil || r.Result.Status != "processing" {
		t.Errorf("get_order B-2002: got %d %s, want its order", r.Status, r.Raw)
	}

	// huma's own operation, from the same type: its pattern refuses, a
	// good id is served.
	for path, want := range map[string]int{"/orders/1001": http.StatusUnprocessableEntity, "/orders/A-1001": http.StatusOK} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: got %d %s, want %d", path, resp.StatusCode, strings.TrimSpace(string(body)), want)
		}
	}
}
