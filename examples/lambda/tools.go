package main

import (
	"context"
	"sync"

	"github.com/median-go/median/protocol"
)

// orderInput is the input of both tools.
type orderInput struct {
	OrderID string `json:"orderId" jsonschema:"minLength=1,maxLength=64,description=The order's id as the customer gives it (for example A-1001)."`
}

// order is lookup_order's result, with the widget's "open this order" link.
type order struct {
	OrderID string `json:"orderId"`
	Status  string `json:"status"`
	protocol.Hints
}

// cancellation is cancel_order's result.
type cancellation struct {
	OrderID   string `json:"orderId"`
	Cancelled bool   `json:"cancelled"`
}

// missingOrder is the one order id the demo does not know.
const missingOrder = "missing"

// orders is the demo's order state. It lives in the instance's memory, so
// each Lambda instance has its own: a real function reads and changes its
// own database here. Every order exists and is processing until cancelled,
// except missingOrder.
type orders struct {
	mu        sync.Mutex
	cancelled map[string]bool
}

func newOrders() *orders { return &orders{cancelled: map[string]bool{}} }

// maxCancelled bounds the memory an instance's demo state takes.
const maxCancelled = 10_000

// tools returns lookup_order (read-only, for a signed-in visitor) and
// cancel_order (risk high: a teammate approves each call, and the replay
// store makes a repeated call cancel once, on any instance).
func tools(o *orders) []*protocol.Tool {
	return []*protocol.Tool{
		protocol.NewTool("lookup_order", protocol.RiskLow,
			"Look up one of the signed-in customer's orders by its id: its status and a link to open it.",
			func(ctx context.Context, call protocol.ToolCall[orderInput]) (order, error) {
				if _, ok := call.Visitor.ExternalID(); !ok {
					return order{}, protocol.Refuse("not_signed_in", "Sign in to see orders.")
				}
				id := call.Input.OrderID
				if id == missingOrder {
					return order{}, protocol.AgentErrorf("order %s not found", id)
				}
				o.mu.Lock()
				defer o.mu.Unlock()
				status := "processing"
				if o.cancelled[id] {
					status = "cancelled"
				}
				return order{OrderID: id, Status: status, Hints: protocol.Hints{NavigateTo: "/orders/" + id}}, nil
			},
			protocol.ReadOnly()), // answered through a DynamoDB outage too
		protocol.NewTool("cancel_order", protocol.RiskHigh,
			"Cancel an order by its id. A teammate approves every cancellation before it runs.",
			func(ctx context.Context, call protocol.ToolCall[orderInput]) (cancellation, error) {
				id := call.Input.OrderID
				o.mu.Lock()
				defer o.mu.Unlock()
				switch {
				case id == missingOrder:
					return cancellation{}, protocol.AgentErrorf("order %s not found", id)
				case o.cancelled[id]:
					return cancellation{}, protocol.AgentErrorf("order %s is already cancelled", id)
				case len(o.cancelled) >= maxCancelled:
					return cancellation{}, protocol.AgentErrorf("the demo cannot cancel more orders on this instance")
				}
				o.cancelled[id] = true
				return cancellation{OrderID: id, Cancelled: true}, nil
			}),
	}
}
