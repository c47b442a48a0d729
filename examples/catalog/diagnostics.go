package catalog

import "context"

// Diagnostics is what the demo adds to the diagnostics report, as its
// "app" entry (protocol.Config.Diagnostics): what only the app knows. The
// report itself already holds the keys by fingerprint, the store, the
// tools and the clock.
type Diagnostics struct {
	// CancelledOrders is how many orders the demo holds as cancelled, and
	// CancelledLimit how many it can: at the limit, cancel_order fails.
	CancelledOrders int `json:"cancelledOrders"`
	CancelledLimit  int `json:"cancelledLimit"`
	// DevKey is true when the demo generated its own development key.
	DevKey bool `json:"devKey"`
}

// diagnostics is the Config.Diagnostics function of the demo.
func (d *Demo) diagnostics(context.Context) (any, error) {
	return Diagnostics{
		CancelledOrders: d.Orders.Cancelled(),
		CancelledLimit:  MaxCancelledOrders,
		DevKey:          d.DevKey,
	}, nil
}
