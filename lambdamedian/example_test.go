package lambdamedian_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/lambdamedian"
	"github.com/median-go/median/protocol"
)

// exampleKey stands for MEDIAN_KEY. In production leave Config.Keys empty
// and set the environment variable (or read the key from a secret
// manager with Config.KeySource).
const exampleKey = "example-key-do-not-use-0123456789abcdef"

type OrderIn struct {
	OrderID string `json:"orderId" jsonschema:"description=The order's id, like A-1001"`
}

type Order struct {
	OrderID string `json:"orderId"`
	Status  string `json:"status"`
}

func lookupOrder(_ context.Context, call protocol.ToolCall[OrderIn]) (Order, error) {
	return Order{OrderID: call.Input.OrderID, Status: "shipped"}, nil
}

// newHandler builds the Handler of the examples, with one tool.
func newHandler() *protocol.Handler {
	h, err := protocol.New(protocol.Config{
		Keys:  []string{exampleKey},
		Tools: []*protocol.Tool{protocol.NewTool("lookup_order", protocol.RiskLow, "Looks up one of the customer's orders.", lookupOrder)},
		// On Lambda, keep answers in a store every instance shares:
		// Store: dynamostore.New(...),
	})
	if err != nil {
		log.Fatal(err)
	}
	return h
}

// Start is the whole main of a function: it serves Function URLs, API
// Gateway HTTP and REST APIs and ALB targets alike.
func ExampleStart() {
	lambdamedian.Start(newHandler())
}

// WithMargin leaves more time between the answer and Lambda's deadline,
// here for a shared store given 2 s per call (Config.StoreTimeout).
func ExampleWithMargin() {
	lambdamedian.Start(newHandler(), lambdamedian.WithMargin(3*time.Second))
}

// New is the handler Start runs; Invoke takes the event as Lambda passes
// it, here a Function URL's, and returns the answer in the same service's
// shape.
func ExampleNew() {
	fn := lambdamedian.New(newHandler())

	key, err := protocol.ParseKey(exampleKey)
	if err != nil {
		log.Fatal(err)
	}
	body := `{"tool":"lookup_order","toolCallId":"call_1","input":{"orderId":"A-1001"},
		"context":{"conversationId":"conv_1","risk":"low","visitor":{"verified":false}}}`
	event, err := json.Marshal(events.LambdaFunctionURLRequest{
		Version: "2.0",
		RawPath: "/",
		Headers: map[string]string{"content-type": "application/json", "median-signature": key.Sign(time.Now(), []byte(body))},
		RequestContext: events.LambdaFunctionURLRequestContext{
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: "POST", Path: "/"},
		},
		Body: body,
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // Lambda's deadline
	defer cancel()
	payload, err := fn.Invoke(ctx, event)
	if err != nil {
		log.Fatal(err)
	}
	var answer events.LambdaFunctionURLResponse
	if err := json.Unmarshal(payload, &answer); err != nil {
		log.Fatal(err)
	}
	fmt.Println(answer.StatusCode, answer.Headers["Content-Type"], answer.Body)
	// Output: 200 application/json {"result":{"orderId":"A-1001","status":"shipped"}}
}

// Do runs the function in memory for tests, as a Function URL invokes it:
// here the whole conformance suite checks the function, key cases
// included, with no deployment.
func ExampleDo() {
	build := func(key string) (func(*http.Request) (*http.Response, error), error) {
		h, err := protocol.New(protocol.Config{
			Keys:  []string{key},
			Tools: []*protocol.Tool{protocol.NewTool("lookup_order", protocol.RiskLow, "Looks up one of the customer's orders.", lookupOrder)},
		})
		if h == nil {
			return nil, err
		}
		return lambdamedian.Do(lambdamedian.New(h)), err // a bad key's Handler answers its 500
	}
	do, err := build(exampleKey)
	if err != nil {
		log.Fatal(err)
	}
	target := conformance.Target{
		Do: do, URL: "https://fn.example.test/", Key: exampleKey, Replay: true, BuildWithKey: build,
		Tools: []conformance.ToolSample{{Tool: "lookup_order", Input: OrderIn{OrderID: "A-1001"}}},
	}
	report, err := conformance.Check(context.Background(), target, conformance.Options{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("failed:", report.Err())
	// Output: failed: <nil>
}
