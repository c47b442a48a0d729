package catalog

import (
	"context"
	"time"
)

// Diagnostics is the demo's answer to {"op": "diagnostics"}: small, and
// with the key's fingerprint, never the key.
type Diagnostics struct {
	Uptime      string `json:"uptime"`
	ToolCount   int    `json:"toolCount"`
	Key         string `json:"key"` // Demo.Fingerprint: "median key mk_…"
	ReplayStore string `json:"replayStore"`
	DevKey      bool   `json:"devKey"`
}

// diagnostics is the Config.Diagnostics function of the demo.
func (d *Demo) diagnostics(context.Context) (any, error) {
	return Diagnostics{
		Uptime:      time.Since(d.started).Round(time.Second).String(),
		ToolCount:   d.toolCount,
		Key:         d.Fingerprint,
		ReplayStore: d.store,
		DevKey:      d.DevKey,
	}, nil
}
