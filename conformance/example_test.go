package conformance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/protocol"
)

// message is the input and the result of the examples' echo tool.
type message struct {
	Message string `json:"message"`
}

// echoTool returns the message it was given.
func echoTool() *protocol.Tool {
	return protocol.NewTool("echo", protocol.RiskLow, "Returns the message it was given.",
		func(_ context.Context, c protocol.ToolCall[message]) (message, error) { return c.Input, nil })
}

// Run the suite in your app's tests: build the endpoint as your app does,
// describe it with HandlerTarget and give sample calls of your tools.
func ExampleRun() {
	// In your app's median_test.go:
	TestMedianEndpoint := func(t *testing.T) {
		const key = "mk_test_0123456789abcdef0123456789abcdef"
		h, err := protocol.New(protocol.Config{Keys: []string{key}, Tools: []*protocol.Tool{echoTool()}})
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()   // or your gin/echo/chi router with the endpoint mounted
		h.Mount(mux, "/api/median") // both paths, every method

		target := conformance.HandlerTarget(mux, "/api/median", key)
		target.Tools = []conformance.ToolSample{{
			Tool:    "echo",
			Input:   message{Message: "hello"},
			Visitor: conformance.Visitor{Verified: true, ExternalID: "user_7"},
			Check: func(result json.RawMessage) error {
				if !strings.Contains(string(result), "hello") {
					return fmt.Errorf("want the message back, got %s", result)
				}
				return nil
			},
			InvalidInputs: []json.RawMessage{json.RawMessage(`{"message":5}`)},
		}}
		conformance.Run(t, target) // subtests such as TestMedianEndpoint/signature/missing
	}
	_ = TestMedianEndpoint
}

// HandlerBuilder lets the key cases build your app with a bad key through
// its ordinary constructor, here newOrdersApp(key) (http.Handler, error),
// which returns nil and an error when the key is not usable.
func ExampleHandlerBuilder() {
	// In your app's median_test.go:
	TestMedianEndpoint := func(t *testing.T) {
		const key = "mk_test_0123456789abcdef0123456789abcdef"
		app, err := newOrdersApp(key)
		if err != nil {
			t.Fatal(err)
		}
		target := conformance.HandlerTarget(app, "/api/median", key)
		target.BuildWithKey = conformance.HandlerBuilder(newOrdersApp)
		conformance.Run(t, target) // the key cases pass on its error naming missing_secret or invalid_median_key
	}
	_ = TestMedianEndpoint
}

// Check runs the same cases without the testing package and returns a
// report, here for a protocol.Handler served in process.
func ExampleCheck() {
	const key = "mk_test_0123456789abcdef0123456789abcdef"
	h, _ := protocol.New(protocol.Config{Keys: []string{key}, Tools: []*protocol.Tool{echoTool()}, Logger: slog.New(slog.DiscardHandler)})
	target := conformance.HandlerTarget(h, "/api/median", key)
	target.Tools = []conformance.ToolSample{{Tool: "echo", Input: message{Message: "hello"}}}

	rep, err := conformance.Check(context.Background(), target, conformance.Options{Run: "^(signature|execution)/"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, v := range rep.Verdicts {
		if v.ID == "signature/missing" || v.ID == "execution/result" {
			fmt.Println(v)
		}
	}
	fmt.Println("failures:", rep.Err())
	// Output:
	// PASS signature/missing (§1.1)
	// PASS execution/result (§3)
	// failures: <nil>
}

// ReadSamples reads tool samples from JSON, the format of mediancheck's
// -samples file.
func ExampleReadSamples() {
	samples, err := conformance.ReadSamples(strings.NewReader(`{"tools": [
		{"tool": "lookup_order", "input": {"orderId": "A-1001"},
		 "visitor": {"verified": true, "externalId": "user_7"},
		 "invalidInputs": [{"orderId": 5}]},
		{"tool": "refund_order", "input": {"orderId": "A-1001"}, "sideEffects": true}
	]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range samples {
		fmt.Println(s.Tool, "side effects:", s.SideEffects)
	}
	// Output:
	// lookup_order side effects: false
	// refund_order side effects: true
}

// A Target filled in by hand checks an app that is not an http.Handler,
// such as a fiber app through fibermedian.Do; here a plain function stands
// in for it.
func ExampleTarget() {
	const key = "mk_test_0123456789abcdef0123456789abcdef"
	h, err := protocol.New(protocol.Config{Keys: []string{key}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	h.Mount(mux, "/api/median")
	do := func(r *http.Request) (*http.Response, error) { // fibermedian.Do(app) for a fiber app
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, r)
		return rec.Result(), nil
	}
	target := conformance.Target{Do: do, URL: "http://example.test/api/median", Key: key, Replay: true}
	report, err := conformance.Check(context.Background(), target, conformance.Options{})
	fmt.Println(err, report.Err())
	// Output: <nil> <nil>
}
