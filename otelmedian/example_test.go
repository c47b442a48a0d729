package otelmedian_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/median-go/median/otelmedian"
	"github.com/median-go/median/protocol"
)

// exampleKey stands in for the key from Median's dashboard; in production
// leave Config.Keys empty and set MEDIAN_KEY.
const exampleKey = "mk_example_0123456789abcdefghijklmnopqrstu"

// exampleTools is one tool that looks up an order.
func exampleTools() []*protocol.Tool {
	type input struct {
		OrderID string `json:"orderId"`
	}
	return []*protocol.Tool{protocol.NewTool("lookup_order", protocol.RiskLow, "Look up one of the visitor's orders.",
		func(_ context.Context, call protocol.ToolCall[input]) (map[string]string, error) {
			return map[string]string{"orderId": call.Input.OrderID, "status": "shipped"}, nil
		})}
}

// send makes the call Median would make to run lookup_order and returns the
// answer's status.
func send(h http.Handler) int {
	body := `{"tool":"lookup_order","toolCallId":"call_1","input":{"orderId":"A-1001"},` +
		`"context":{"conversationId":"conv_1","risk":"low","visitor":{"verified":false}}}`
	key, err := protocol.ParseKey(exampleKey)
	if err != nil {
		log.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/api/median", strings.NewReader(body))
	req.Header.Set("median-signature", key.Sign(time.Now(), []byte(body)))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

// Turn OpenTelemetry on: the Observer records with the global providers
// your OpenTelemetry setup installed (otel.SetTracerProvider,
// otel.SetMeterProvider). Serve the endpoint behind your HTTP tracing
// middleware (otelhttp.NewHandler, or your framework's) so that each tool
// span is a child of its request's span.
func ExampleNew() {
	obs, err := otelmedian.New()
	if err != nil {
		log.Fatal(err)
	}
	h, err := protocol.New(protocol.Config{
		Keys:     []string{exampleKey},
		Tools:    exampleTools(),
		Observer: obs.Observe,
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	h.Mount(mux, "/api/median")
	// In production, behind the tracing middleware and with timeouts:
	//	srv := &http.Server{Addr: ":8080", Handler: otelhttp.NewHandler(mux, "median"), ReadHeaderTimeout: 5 * time.Second}
	//	log.Fatal(srv.ListenAndServe())
	fmt.Println(send(mux))
	// Output: 200
}

// Record spans with a provider of your own; here an in-memory one, to show
// the span a tool call makes.
func ExampleWithTracerProvider() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer func() { _ = tp.Shutdown(context.Background()) }()

	obs, err := otelmedian.New(otelmedian.WithTracerProvider(tp))
	if err != nil {
		fmt.Println(err)
		return
	}
	h, err := protocol.New(protocol.Config{Keys: []string{exampleKey}, Tools: exampleTools(), Observer: obs.Observe})
	if err != nil {
		fmt.Println(err)
		return
	}
	send(h)

	span := spans.Ended()[0]
	fmt.Println(span.Name(), span.SpanKind())
	for _, kv := range span.Attributes() {
		fmt.Printf("%s=%s\n", kv.Key, kv.Value.String())
	}
	// Output:
	// execute_tool lookup_order internal
	// gen_ai.operation.name=execute_tool
	// gen_ai.tool.name=lookup_order
	// gen_ai.tool.call.id=call_1
	// median.risk=low
	// median.replayed=false
}

// Record metrics with a provider of your own; here one read by hand, to
// show what a tool call counts.
func ExampleWithMeterProvider() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()

	obs, err := otelmedian.New(otelmedian.WithMeterProvider(mp))
	if err != nil {
		fmt.Println(err)
		return
	}
	h, err := protocol.New(protocol.Config{Keys: []string{exampleKey}, Tools: exampleTools(), Observer: obs.Observe})
	if err != nil {
		fmt.Println(err)
		return
	}
	send(h)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		fmt.Println(m.Name, m.Unit)
	}
	// Output:
	// median.requests {request}
	// median.tool.call.duration s
}

// Opt in to the call's input and result on its span, where your traces may
// hold what customers typed and what your tools answered.
func ExampleWithInputAndResult() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer func() { _ = tp.Shutdown(context.Background()) }()

	obs, err := otelmedian.New(otelmedian.WithTracerProvider(tp), otelmedian.WithInputAndResult())
	if err != nil {
		fmt.Println(err)
		return
	}
	h, err := protocol.New(protocol.Config{Keys: []string{exampleKey}, Tools: exampleTools(), Observer: obs.Observe})
	if err != nil {
		fmt.Println(err)
		return
	}
	send(h)

	for _, kv := range spans.Ended()[0].Attributes() {
		if strings.HasPrefix(string(kv.Key), "gen_ai.tool.call.") && kv.Key != "gen_ai.tool.call.id" {
			fmt.Printf("%s=%s\n", kv.Key, kv.Value.String())
		}
	}
	// Output:
	// gen_ai.tool.call.arguments={"orderId":"A-1001"}
	// gen_ai.tool.call.result={"orderId":"A-1001","status":"shipped"}
}

// Observe is a plain function: call it from an observer of your own to
// record with OpenTelemetry and do something else with each event.
func ExampleObserver_Observe() {
	obs, err := otelmedian.New()
	if err != nil {
		log.Fatal(err)
	}
	h, err := protocol.New(protocol.Config{
		Keys:  []string{exampleKey},
		Tools: exampleTools(),
		Observer: func(ctx context.Context, ev protocol.Event) {
			obs.Observe(ctx, ev)
			fmt.Println(ev.Tool, ev.Status, ev.Code == "")
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	send(h)
	// Output: lookup_order 200 true
}
