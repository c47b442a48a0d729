package catalog

import (
	"log/slog"
	"time"

	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/ratelimit"
)

// LookupOrderLimit caps lookup_order: 20 calls per conversation per minute
// (docs/PROTOCOL.md §9.1). The 21st call within a minute is not run; the
// agent gets the rate_limited refusal, whose detail says when the
// conversation may try again ("Try again in about 3 seconds.").
var LookupOrderLimit = ratelimit.Limit{Calls: 20, Per: time.Minute}

// newLimits returns the demo's interceptor: LookupOrderLimit on lookup, the
// lookup_order tool the Handler runs (a cap is keyed by the tool itself),
// counted per conversation in this process's memory on the clock now (nil
// for time.Now), and no cap on the other tools.
func newLimits(lookup *protocol.Tool, now func() time.Time, logger *slog.Logger) (protocol.Interceptor, error) {
	return ratelimit.New(ratelimit.Config{
		Tools:   map[*protocol.Tool]ratelimit.Limit{lookup: LookupOrderLimit},
		By:      ratelimit.PerConversation,
		Backend: ratelimit.NewMemory(ratelimit.MemoryOptions{Now: now}),
		Logger:  logger,
	})
}
