package catalog

import (
	"context"
	"time"
)

// Diagnostics is the demo's answer to {"op": "diagnostics"}: small, and
// with the key's fingerprint, never the key.
type Diagnostics struct {
	Uptime         string `json:"uptime"`
	ToolCount      int    `json:"toolCount"`
	KeyFingerprint string `json:"keyFingerprint"`
	ReplayStore    string `json:"replayStore"`
	DevKey         bool   `json:"devKey"`
}

// diagnostics is the Config.Diagnostics function of the demo.
func (d *Demo) diagnostics(context.Context) (any, error) {
	keys := d.Handler.Keys()
	out := Diagnostics{
		Uptime:      time.Since(d.started).Round(time.Second).String(),
		ToolCount:   len(d.Handler.Tools()),
		ReplayStore: d.store,
		DevKey:      d.DevKey,
	}
	if len(keys) > 0 {
		out.KeyFingerprint = keys[0]
	}
	return out, nil
}
