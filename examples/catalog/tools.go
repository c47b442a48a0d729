package catalog

import (
	"context"
	"fmt"

	"github.com/median-go/median/protocol"
)

// Tool names of the demo catalog.
const (
	LookupOrderTool = "lookup_order"
	CancelOrderTool = "cancel_order"
)

// NotSignedInDetail is the detail of lookup_order's refusal when the visitor
// is not verified.
const NotSignedInDetail = "Sign in to see orders."

// OrderInput is the input of both tools.
type OrderInput struct {
	OrderID string `json:"orderId" jsonschema:"minLength=1,maxLength=64,description=The order's id as the customer gives it (for example A-1001)."`
}

// Order is lookup_order's result. Its embedded Hints carry the widget's
// "open this order" button (medianNavigateTo).
type Order struct {
	OrderID string `json:"orderId"`
	Status  string `json:"status"`
	protocol.Hints
}

// Cancellation is cancel_order's result.
type Cancellation struct {
	OrderID   string `json:"orderId"`
	Cancelled bool   `json:"cancelled"`
}

// Tools returns the catalog's tools over orders, ready for
// protocol.Config.Tools.
func Tools(orders *Orders) []*protocol.Tool {
	all, _ := catalogTools(orders)
	return all
}

// catalogTools returns the catalog's tools over orders and, among them,
// lookup_order, the one the demo caps (newLimits).
func catalogTools(orders *Orders) (all []*protocol.Tool, lookup *protocol.Tool) {
	lookup = protocol.NewTool(LookupOrderTool, protocol.RiskLow,
		"Look up one of the signed-in customer's orders by its id: its status and a link to open it.",
		func(ctx context.Context, call protocol.ToolCall[OrderInput]) (Order, error) {
			return lookupOrder(ctx, orders, call.Visitor, call.Input)
		},
		// It changes nothing: when the replay store is down it still
		// answers (docs/PROTOCOL.md §8).
		protocol.ReadOnly())
	return []*protocol.Tool{
		lookup,
		protocol.NewTool(CancelOrderTool, protocol.RiskHigh,
			"Cancel an order by its id. A teammate approves every cancellation before it runs.",
			func(ctx context.Context, call protocol.ToolCall[OrderInput]) (Cancellation, error) {
				// ctx carries the call's transaction in the Postgres mode.
				if err := orders.cancel(ctx, call.Input.OrderID); err != nil {
					return Cancellation{}, err
				}
				return Cancellation{OrderID: call.Input.OrderID, Cancelled: true}, nil
			}),
	}, lookup
}

// LookupOrder is lookup_order: it refuses a visitor who is not verified
// (reason not_signed_in), fails for an unknown order, and otherwise returns
// the order with a widget link to /orders/<id>.
func LookupOrder(orders *Orders, visitor protocol.Visitor, in OrderInput) (Order, error) {
	return lookupOrder(context.Background(), orders, visitor, in)
}

// lookupOrder is LookupOrder on the tool's ctx: in the Postgres mode it
// reads through the pool (pgstore.Querier), and the call holds no
// connection while it runs.
func lookupOrder(ctx context.Context, orders *Orders, visitor protocol.Visitor, in OrderInput) (Order, error) {
	if _, ok := visitor.ExternalID(); !ok {
		return Order{}, protocol.Refuse("not_signed_in", NotSignedInDetail)
	}
	status, err := orders.status(ctx, in.OrderID)
	if err != nil {
		return Order{}, err
	}
	out := Order{OrderID: in.OrderID, Status: status}
	// An id that does not fit in a path only loses its button: the core
	// drops an invalid hint, with a warning in the log.
	out.NavigateTo = OrderPath(in.OrderID)
	return out, nil
}

// CancelOrder is cancel_order: it cancels the order once and fails when the
// order is already cancelled or unknown. Median runs it only after a
// teammate approved the call (risk high), so it does not check the visitor.
func CancelOrder(orders *Orders, in OrderInput) (Cancellation, error) {
	if err := orders.Cancel(in.OrderID); err != nil {
		return Cancellation{}, err
	}
	return Cancellation{OrderID: in.OrderID, Cancelled: true}, nil
}

// OrderPath is the page of an order on the demo shop's site.
func OrderPath(id string) string { return "/orders/" + id }

// Has reports whether the catalog offers a tool named name.
func Has(name string) bool {
	return name == LookupOrderTool || name == CancelOrderTool
}

// Dispatch runs the catalog tool the call names, for apps whose own handler
// answers verified calls (middleware mode). Handler.Verify has already
// checked the input against the tool's schema. Check Has first: for a name
// the catalog does not offer, Dispatch returns an error.
func Dispatch(orders *Orders, call *protocol.Call) (any, error) {
	if !Has(call.Tool) {
		return nil, fmt.Errorf("the demo catalog has no tool named %q", call.Tool)
	}
	var in OrderInput
	if err := call.BindInput(&in); err != nil {
		return nil, err
	}
	if call.Tool == LookupOrderTool {
		return LookupOrder(orders, call.Visitor, in)
	}
	return CancelOrder(orders, in)
}
