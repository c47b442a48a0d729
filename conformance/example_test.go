package conformance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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

// event and reply stand for the request and response types of a platform
// whose app is not an http.Handler: a serverless function's event
// (aws-lambda-go's APIGatewayProxyRequest), a Hertz or go-zero context.
type event struct {
	Method  string
	Headers map[string]string // lower-case names
	Body    string
}

type reply struct {
	Status  int
	Headers map[string]string
	Body    string
}

// newFunction is such an app's constructor: its handler hands each event
// to the core with Handler.Serve and turns the answer into a reply.
func newFunction(key string) (func(context.Context, event) reply, error) {
	h, err := protocol.New(protocol.Config{Keys: []string{key}, Tools: []*protocol.Tool{echoTool()}, Logger: slog.New(slog.DiscardHandler)})
	if h == nil {
		return nil, err
	}
	return func(ctx context.Context, e event) reply {
		resp := h.Serve(ctx, protocol.Request{Method: e.Method, Signature: e.Headers["median-signature"], Check: e.Headers["median-check"],
			BodyBytes: []byte(e.Body), ContentLength: int64(len(e.Body))})
		headers := map[string]string{"Content-Type": "application/json"}
		if resp.Allow != "" {
			headers["Allow"] = resp.Allow
		}
		if resp.CheckToken != "" {
			headers["Median-Check-Token"] = resp.CheckToken
		}
		return reply{Status: resp.Status, Headers: headers, Body: string(resp.Body)}
	}, err // the key's error with the Handler that answers 500, as protocol.New returns them
}

// serve is a Target's Do for such an app: it turns the suite's request
// into the app's event, and the app's reply into the response.
func serve(fn func(context.Context, event) reply) func(*http.Request) (*http.Response, error) {
	return func(r *http.Request) (*http.Response, error) {
		e := event{Method: r.Method, Headers: map[string]string{}}
		for name, values := range r.Header { // a repeated header joined with ",", as API Gateway's payload 2.0 does
			e.Headers[strings.ToLower(name)] = strings.Join(values, ",")
		}
		if r.Body != nil {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				return nil, err
			}
			e.Body = string(body)
		}
		out := fn(r.Context(), e)
		resp := &http.Response{StatusCode: out.Status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(out.Body)), Request: r}
		for name, value := range out.Headers {
			resp.Header.Set(name, value)
		}
		return resp, nil
	}
}

// The suite against an app that is not an http.Handler: a Target whose Do
// serves each request with the app itself, here a serverless function.
// Every case's requests, the key cases' too, go to Target.URL through the
// function Do (or BuildWithKey) returns, so URL names the endpoint as the
// app routes it; here the function is the endpoint, whatever the path.
func ExampleTarget_notAHandler() {
	const key = "mk_test_0123456789abcdef0123456789abcdef"
	fn, err := newFunction(key)
	if err != nil {
		panic(err)
	}
	target := conformance.Target{Do: serve(fn), URL: "https://fn.example.test/median", Key: key, Replay: true}
	target.BuildWithKey = func(key string) (func(*http.Request) (*http.Response, error), error) {
		fn, err := newFunction(key)
		if fn == nil {
			return nil, err
		}
		return serve(fn), err
	}
	target.Tools = []conformance.ToolSample{{Tool: "echo", Input: message{Message: "hello"}}}
	report, err := conformance.Check(context.Background(), target, conformance.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println("failed:", report.Err())
	for _, v := range report.Verdicts {
		if v.Group == "key" || v.ID == "execution/result" {
			fmt.Println(v.ID, v.Status)
		}
	}
	// Output:
	// failed: <nil>
	// key/missing pass
	// key/too-short pass
	// key/not-visible-ascii pass
	// execution/result pass
}
