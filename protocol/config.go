package protocol

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"time"
)

// Defaults of [Config].
const (
	defaultMaxBodyBytes       = 1 << 20          // 1 MiB (PROTOCOL.md §2)
	defaultDiagnosticsTimeout = 7 * time.Second  // DiagnosticsReplace's: Median waits 8 s (§3.3)
	defaultReplayLease        = 12 * time.Second // or leaseStoreTimeouts store deadlines: see defaultLease
	defaultStoreTimeout       = time.Second      // §8
	defaultReplayMaxBytes     = 64 << 20         // 64 MiB
)

// leaseStoreTimeouts is how many store deadlines the default lease lasts at
// least: the claim is renewed every third of it, so each renewal has two
// store deadlines to land in before the next is due.
const leaseStoreTimeouts = 6

// defaultLease is the lease when Config.ReplayLease is not set: 12 s, or
// leaseStoreTimeouts store deadlines when that is longer.
func defaultLease(storeTimeout time.Duration) time.Duration {
	if storeTimeout > math.MaxInt64/leaseStoreTimeouts {
		return math.MaxInt64
	}
	return max(defaultReplayLease, leaseStoreTimeouts*storeTimeout)
}

// Config configures a [Handler]. The zero value is usable: the key comes
// from MEDIAN_KEY_FILE (and MEDIAN_KEY_PREVIOUS_FILE) or MEDIAN_KEY (and
// MEDIAN_KEY_PREVIOUS), no tools are offered and replay protection keeps
// answers in memory.
type Config struct {
	// Keys are the Median keys this server accepts. A request is valid when
	// it verifies under any of them: list the new key and the old one while
	// you rotate. When Keys and KeySource are both empty, the keys come
	// from the environment: when MEDIAN_KEY_FILE is set, the file it names
	// holds the current key and the file MEDIAN_KEY_PREVIOUS_FILE names,
	// when set, the one being retired; both are read again every KeyRefresh
	// (default 2 s), so a mounted secret that changes takes effect without
	// a restart. A read of the current key's file that gives no usable key
	// keeps the current key in force; a previous-key file that gives none
	// (empty, deleted, or anything else written there to revoke it) drops
	// the key being retired at that read. Otherwise MEDIAN_KEY is read
	// once, and MEDIAN_KEY_PREVIOUS too when set.
	Keys []string

	// KeySource, when set, returns the keys (the current one first, then
	// any being retired), for keys kept in a secret manager. It is called
	// by New and then every KeyRefresh (default 1 minute), under a 10 s
	// deadline that holds even when it ignores its context. A read that
	// gives no usable current key, or an error, keeps the keys in force and
	// is logged as an error, except that a key being retired that a read
	// no longer returns, or returns unusable, is dropped (logged, and shown
	// in the diagnostics report); until a first read gives a usable key
	// every request is answered 500 missing_secret or invalid_median_key.
	// Call [Handler.Close] to stop the reads.
	KeySource func(ctx context.Context) ([]string, error)

	// KeyRefresh is how often KeySource, or the files of MEDIAN_KEY_FILE
	// and MEDIAN_KEY_PREVIOUS_FILE, are read again: default 1 minute for
	// KeySource and 2 s for the files.
	KeyRefresh time.Duration

	// Tools are the tools this endpoint offers; build them with [NewTool],
	// or with [DeclareTool] for the tools your own handlers answer behind
	// [Handler.Middleware].
	Tools []*Tool

	// Interceptors run before every tool, in order, after the input is
	// validated: authorization, audit, rate limits (package
	// protocol/ratelimit). See [Interceptor].
	Interceptors []Interceptor

	// RiskFloorWarnOnly turns the risk floor (PROTOCOL.md §9) into a warning
	// in the log: calls below a tool's declared risk, or without approval
	// for a reviewed or high tool, run anyway. The default refuses them
	// with reason approval_required.
	RiskFloorWarnOnly bool

	// Diagnostics, when set, adds what your app knows to the diagnostics
	// report (PROTOCOL.md §10), which the Handler answers to
	// {"op": "diagnostics"} by itself: what it returns is the report's
	// "app" entry, inside the same 2,000 characters. It runs under
	// DiagnosticsTimeout; an error, a timeout or a panic becomes an "error"
	// entry in app (the error itself goes to the log), never a failed
	// report. Return only what may be shown: no keys, no personal data.
	Diagnostics func(ctx context.Context) (any, error)

	// DiagnosticsTimeout bounds Diagnostics; default 500 ms, and at most
	// 800 ms, so that the report answers within a second. When
	// DiagnosticsReplace is set, it bounds that instead; default 7 s
	// (Median waits 8).
	DiagnosticsTimeout time.Duration

	// DiagnosticsOff turns the report off: {"op": "diagnostics"} is
	// answered diagnostics_unsupported. [Handler.Report] still works.
	DiagnosticsOff bool

	// DiagnosticsReplace, when set, answers {"op": "diagnostics"} instead
	// of the report: its result is the answer's result, an error answers
	// execution_failed, showing Median an [AgentError]'s Message and of any
	// other error only a reference to its log line (as a tool's). Keep it under 2,000 characters (Median keeps no
	// more) and free of keys, secrets and personal data.
	DiagnosticsReplace func(ctx context.Context) (any, error)

	// MaxBodyBytes caps the request body; default 1 MiB. A larger body is
	// answered 413 invalid_body without being read past the limit.
	MaxBodyBytes int64

	// Tolerance is how far a signature's timestamp may be from Now, in
	// either direction; default 5 minutes.
	Tolerance time.Duration

	// Now is the server clock; default time.Now. Set it in tests.
	Now func() time.Time

	// Logger receives warnings (oversized results, invalid widget hints,
	// the risk floor, recovered panics with their stack, store failures)
	// and debug lines for refused requests; default slog.Default(). No key,
	// secret or computed signature is ever logged.
	Logger *slog.Logger

	// Observer, when set, is called once per answered request with the
	// request's context, for metrics and tracing (see the otelmedian
	// package). It must not block; a panic in it is logged and ignored.
	Observer func(ctx context.Context, ev Event)

	// ErrorMessage, when set, is your own policy for what the agent reads
	// of an error: it is called with every error a tool, an interceptor or
	// a handler behind the middleware answers execution_failed with
	// (never a panic), and the message it returns is answered as it is,
	// and the error logged at level Info. When it returns "", the default
	// rule answers: an [AgentError]'s Message, or else the tool's name and
	// a reference, with the error logged under that reference. Return ""
	// for every error your policy does not know, and never the text of an
	// error you did not write.
	ErrorMessage func(ctx context.Context, call *Call, err error) string

	// Store keeps answers by toolCallId for replay protection. When nil, an
	// in-memory store bounded by ReplayMaxBytes is used, unless
	// DisableReplayProtection is set. Use a shared store
	// (protocol/redisstore, protocol/pgstore, protocol/dynamostore) when
	// several instances serve one endpoint.
	Store Store

	// DisableReplayProtection runs every call, even a repeated toolCallId.
	DisableReplayProtection bool

	// ReplayMaxBytes is the in-memory store's budget, counting ids (by a
	// fixed-size digest), answers and bookkeeping; default 64 MiB, at least
	// 64 KiB. When it is full the oldest answers go first, and each one
	// dropped before ReplayTTL is logged and reported as
	// [Event.EvictedEarly], because its toolCallId could then run again.
	// Ignored when Store is set. See docs/SECURITY.md to size it.
	ReplayMaxBytes int64

	// StoreTimeout bounds each call to the Store (each claim, renewal and
	// save); default 1 s. When a claim fails or runs out of time, the tool
	// is not run and the call is answered execution_failed; when a save
	// does, the answer is still sent, the failure logged, and the answer
	// saved again in the background until it is kept or ReplayTTL has
	// passed (docs/PROTOCOL.md §8).
	StoreTimeout time.Duration

	// ReplayLease is how long a claim on a toolCallId lasts unless it is
	// renewed. The Handler renews it every third of the lease while the
	// call's tool runs (in middleware mode, until the call is answered or
	// settled) and while its answer waits to be saved again, so a tool may
	// run longer than its lease. When the instance holding the claim stops
	// renewing it (it crashed, or could not reach the store for a whole
	// lease), the lease ends and another request may run the tool: a short
	// lease makes the copies of such a call wait less. Default 12 s, or six
	// StoreTimeouts when that is longer, so that each renewal has two store
	// deadlines to land in.
	ReplayLease time.Duration

	// ReplayTTL is how long answers are kept; default twice Tolerance.
	ReplayTTL time.Duration
}

// Event describes one answered request, for [Config.Observer].
type Event struct {
	Method     string // the request's HTTP method
	Tool       string // empty when the request named no tool
	ToolCallID string // empty when the request named no call
	Risk       Risk   // the call's risk as Median sent it; empty for other requests
	// Status is the HTTP status answered: for an OffContract answer, the
	// status the app's handlers wrote.
	Status int
	// Code is the answer's error code; empty for a result (refusals
	// included) and for an OffContract answer, whose body the Handler did
	// not write.
	Code Code
	// Refusal is the reason of a refusal result ("approval_required",
	// "not_signed_in", …); empty otherwise.
	Refusal string
	// ErrorRef is the reference of an execution_failed answer that did not
	// show the tool's error (see [AgentError]): the answer's message holds
	// it, and the log line with the error carries it as errorRef. Empty
	// otherwise. A repeat's answer holds its first answer's reference.
	ErrorRef string
	// Replayed is true when the answer came from the replay store.
	Replayed bool
	// OffContract is true when, in middleware mode, the app's own handlers
	// answered the call with a response they wrote themselves instead of
	// [Respond] (an authorization check's plain 403; see "Handler chains"
	// in the package doc): that response is what was sent. Status is then
	// the status they wrote, Code and Refusal are empty, and Answer is
	// nil, as the Handler never saw the body. A handler that hijacked the
	// connection answered on it unseen: Status is then 101 Switching
	// Protocols standing for that answer (on gin and echo, which report a
	// hijack as a write, their default 200). The call's repeats get the
	// execution_failed kept for its toolCallId, and their events say so
	// (Replayed, Code execution_failed, that Answer).
	OffContract bool
	// Check is true when the request proved it is a check's (a
	// conformance run, mediancheck, the inspector, a probe that marks its
	// requests with [Key.CheckMark]), not Median's: the diagnostics report
	// counts it apart (PROTOCOL.md §10), and so may the observer.
	Check bool
	// EvictedEarly counts answers the replay store dropped before their
	// time to keep this one; their toolCallIds could run again.
	EvictedEarly int
	Start        time.Time     // when the request reached the Handler
	Duration     time.Duration // from Start to the answer
	// Input is the call's input and Answer the answer's body, exactly as
	// sent (nil for an OffContract answer). Both may hold personal data:
	// record them only when the operator asked for it. Both are read-only:
	// Input shares the request's body, and Answer is the very body being
	// written (and kept for replays), so an Observer that changes them
	// copies them first.
	Input  json.RawMessage
	Answer []byte
}
