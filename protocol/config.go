package protocol

import (
	"context"
	"log/slog"
	"time"
)

// Defaults of [Config].
const (
	DefaultMaxBodyBytes       = 1 << 20         // 1 MiB (PROTOCOL.md §2)
	DefaultDiagnosticsTimeout = 7 * time.Second // Median waits 8 s (§3.3)
	DefaultReplayLease        = time.Minute
	MaxResultChars            = 4000 // the agent reads this many characters of a result (§3.3)
	MaxDiagnosticsChars       = 2000 // Median keeps this many characters of diagnostics (§3.3)
)

// Config configures a [Handler]. The zero value is usable: the key comes
// from MEDIAN_KEY, no tools are offered and replay protection keeps answers
// in memory.
type Config struct {
	// Keys are the Median keys this server accepts. A request is valid when
	// it verifies under any of them: list the new key and the old one while
	// you rotate. When empty, the MEDIAN_KEY environment variable is read.
	Keys []string

	// Tools are the tools this endpoint offers; build them with [NewTool].
	Tools []*Tool

	// Diagnostics, when set, answers {"op": "diagnostics"}. It runs under a
	// deadline of DiagnosticsTimeout; its result should stay under 2,000
	// characters. When nil, diagnostics answer diagnostics_unsupported.
	Diagnostics func(ctx context.Context) (any, error)

	// DiagnosticsTimeout bounds Diagnostics; default 7 s (Median waits 8).
	DiagnosticsTimeout time.Duration

	// MaxBodyBytes caps the request body; default 1 MiB. A larger body is
	// answered 413 invalid_body without being read past the limit.
	MaxBodyBytes int64

	// Tolerance is how far a signature's timestamp may be from Now, in
	// either direction; default 5 minutes.
	Tolerance time.Duration

	// Now is the server clock; default time.Now. Set it in tests.
	Now func() time.Time

	// Logger receives warnings (oversized results, invalid widget hints,
	// recovered panics with their stack, store failures) and debug lines for
	// refused requests; default slog.Default(). No key, secret or computed
	// signature is ever logged.
	Logger *slog.Logger

	// Observer, when set, is called once per request after the answer is
	// ready, for metrics and tracing. It must not block.
	Observer func(Event)

	// ErrorMessage, when set, rewrites the message of a tool's error before
	// it is answered as execution_failed, for teams that must not show
	// internals to the agent. The original error is still logged.
	ErrorMessage func(ctx context.Context, call *Call, err error) string

	// Store keeps answers by toolCallId for replay protection. When nil, an
	// in-memory store bounded by ReplayMaxBytes is used unless
	// DisableReplayProtection is set.
	Store Store

	// StoreTimeout bounds each call to the Store (each claim, each save);
	// default 1 s. When a claim fails or runs out of time, the tool is not
	// run and the call is answered execution_failed; when a save does, the
	// answer is still sent and the failure logged.
	StoreTimeout time.Duration

	// ReplayMaxBytes is the in-memory store's budget, counting ids (by a
	// fixed-size digest), answers and bookkeeping; default 64 MiB, at least
	// 64 KiB. When it is full the oldest answers go first, and each one
	// dropped before ReplayTTL is logged and reported as
	// [Event.EvictedEarly]. Ignored when Store is set. See docs/replay.md to
	// size it.
	ReplayMaxBytes int64

	// DisableReplayProtection runs every call, even a repeated toolCallId.
	DisableReplayProtection bool

	// ReplayLease is how long a claim on a toolCallId lasts while its tool
	// runs; when it ends without an answer (a crashed instance), another
	// request may run the tool. Default 1 minute, or the tool's timeout plus
	// 10 s when that is longer.
	ReplayLease time.Duration

	// ReplayTTL is how long answers are kept; default twice Tolerance.
	ReplayTTL time.Duration
}

// Event describes one answered request, for [Config.Observer].
type Event struct {
	Method     string        // the request's HTTP method
	Tool       string        // empty when the request named no tool
	ToolCallID string        // empty when the request named no call
	Code       Code          // empty when the answer is a result (refusals included)
	Status     int           // the HTTP status answered
	Duration   time.Duration // from the start of Serve (or Respond) to the answer
	Replayed   bool          // the answer came from the replay store
	// EvictedEarly counts the answers the replay store dropped before their
	// TTL to make room for this call's answer (or earlier calls' claims):
	// their toolCallIds would run again if replayed. Above 0, the store is
	// too small for the traffic (Config.ReplayMaxBytes).
	EvictedEarly int
}
