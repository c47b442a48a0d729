// Command huma is a shop API on huma v2 (on chi), and the Median endpoint
// beside its operations, whose tool takes the same input type as the
// operation: huma's schema of that type, tags and all, is the tool's input
// schema (docs/MOUNTING.md, "huma v2").
//
//	MEDIAN_KEY='<your key>' go run ./huma
//
// It answers Median at /api/median and listens on $HOST:$PORT (PORT 8080 by
// default; without MEDIAN_KEY, on 127.0.0.1). The key comes from MEDIAN_KEY
// (or the file MEDIAN_KEY_FILE names), read by the core: without one the
// endpoint answers every call 500 missing_secret.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"reflect"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/go-chi/chi/v5"

	"github.com/median-go/median/chimedian"
	"github.com/median-go/median/examples/catalog"
	"github.com/median-go/median/protocol"
)

// OrderInput is the input of the API's GET /orders/{id} and of the Median
// tool get_order: one type, its constraints in huma's tags.
type OrderInput struct {
	OrderID string `path:"id" json:"orderId" doc:"The order's id, as printed on the receipt" pattern:"^[A-Z]-[0-9]{4}$" maxLength:"6"`
}

// Order is what both answer.
type Order struct {
	OrderID string `json:"orderId"`
	Status  string `json:"status"`
}

// OrderOutput is the API's answer.
type OrderOutput struct {
	Body Order
}

// orders stands for the shop's order store.
var orders = map[string]string{"A-1001": "shipped", "B-2002": "processing"}

// findOrder is the lookup both the operation and the tool call.
func findOrder(in OrderInput) (Order, bool) {
	status, ok := orders[in.OrderID]
	return Order{OrderID: in.OrderID, Status: status}, ok
}

// getOrder is the API operation.
func getOrder(_ context.Context, in *OrderInput) (*OrderOutput, error) {
	order, ok := findOrder(*in)
	if !ok {
		return nil, huma.Error404NotFound("no order " + in.OrderID)
	}
	return &OrderOutput{Body: order}, nil
}

// getOrderTool is the Median tool: it shows an order to a signed-in visitor
// only.
func getOrderTool(_ context.Context, call protocol.ToolCall[OrderInput]) (Order, error) {
	if !call.Visitor.Verified {
		return Order{}, protocol.Refuse("not_signed_in", "Sign in to see orders.")
	}
	order, ok := findOrder(call.Input)
	if !ok {
		return Order{}, protocol.AgentErrorf("there is no order %s", call.Input.OrderID)
	}
	return order, nil
}

// getOrderOp is the API operation's description.
var getOrderOp = huma.Operation{
	OperationID: "get-order",
	Method:      http.MethodGet,
	Path:        "/orders/{id}",
	Summary:     "Get an order",
}

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(logger); err != nil {
		logger.Error("the recipe stopped", "error", err)
		os.Exit(1)
	}
}

// run builds the endpoint and serves the app until SIGINT or SIGTERM.
func run(logger *slog.Logger) error {
	h, err := newHandler("", logger)
	if h == nil {
		return fmt.Errorf("cannot start: %w", err)
	}
	defer h.Close()
	addr := catalog.Addr()
	logger.Info("serving", "addr", addr, "median", "/api/median")
	return catalog.Serve(context.Background(), addr, newApp(h))
}

// newHandler builds the Median endpoint with its tool get_order, whose
// input schema is huma's schema of OrderInput. With key "" the core reads
// the key from MEDIAN_KEY (or MEDIAN_KEY_FILE); a key that is not usable
// gives a Handler that answers 500, with the key error.
func newHandler(key string, logger *slog.Logger) (*protocol.Handler, error) {
	reg := huma.NewMapRegistry("#/components/schemas/", huma.DefaultSchemaNamer)
	schema, err := json.Marshal(huma.SchemaFromType(reg, reflect.TypeOf(OrderInput{})))
	if err != nil {
		return nil, err
	}
	tool := protocol.NewTool("get_order", protocol.RiskLow, "Look up an order", getOrderTool,
		protocol.ReadOnly(), protocol.WithInputSchema(schema))

	cfg := protocol.Config{Tools: []*protocol.Tool{tool}, Logger: logger}
	if key != "" {
		cfg.Keys = []string{key}
	}
	return protocol.New(cfg)
}

// newApp builds the app: huma's API on a chi router, and the Median endpoint
// h mounted on the same router beside it, not as a huma operation.
func newApp(h *protocol.Handler) http.Handler {
	router := chi.NewMux()
	api := humachi.New(router, huma.DefaultConfig("Shop", "1.0.0"))
	huma.Register(api, getOrderOp, getOrder) // your huma operations

	chimedian.Mount(router, "/api/median", h)
	return router
}
