// Package handlerinfo lets an adapter read, when it is built, what it
// must know of a protocol.Handler's configuration to warn about its
// platform's limits (lambdamedian: the body limit, the in-memory replay
// store), without protocol exporting accessors no user needs.
//
// It is one of the adapters' run-time helpers (internal/adapt), imported by
// protocol, which sets [Of] when it is initialised, and by the adapters
// that read it; a helper here imports of this module only protocol and
// other helpers (internal/testonly/surface checks), and Go's internal rule
// keeps it from code outside the module.
package handlerinfo

import (
	"log/slog"
	"time"
)

// Info is what an adapter reads of a Handler.
type Info struct {
	Logger       *slog.Logger  // the Handler's logger (Config.Logger, or slog.Default())
	MaxBodyBytes int64         // Config.MaxBodyBytes, defaults applied
	MemoryStore  bool          // answers are kept in the in-process store (Config.Store nil, replay protection on)
	StoreTimeout time.Duration // Config.StoreTimeout, defaults applied: how long the store may take to keep an answer
}

// Of returns the Info of h, a *protocol.Handler; protocol sets it.
var Of func(h any) Info
