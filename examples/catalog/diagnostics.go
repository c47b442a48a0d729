package catalog

import "context"

// Diagnostics is what the demo adds to the diagnostics report, as its
// "app" entry (protocol.Config.Diagnostics): what only the app knows. The
// report itself already holds the keys by fingerprint, the store, the
// tools and the clock.
type Diagnostics struct {
	// CancelledOrders is how many orders are cancelled, and
	// CancelledLimit how many the demo can hold in memory: at the limit,
	// cancel_order fails. The Postgres mode, which keeps them in a table,
	// has no limit (0, left out).
	CancelledOrders int `json:"cancelledOrders"`
	CancelledLimit  int `json:"cancelledLimit,omitempty"`
	// DevKey is true when the demo generated its own development key.
	DevKey bool `json:"devKey"`
}

// diagnostics is the Config.Diagnostics function of the demo. An error
// counting the orders becomes the report's "app" error entry.
func (d *Demo) diagnostics(ctx context.Context) (any, error) {
	n, limit, err := d.Orders.Cancelled(ctx)
	if err != nil {
		return nil, err
	}
	return Diagnostics{CancelledOrders: n, CancelledLimit: limit, DevKey: d.DevKey}, nil
}
