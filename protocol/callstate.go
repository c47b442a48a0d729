package protocol

import (
	"context"
	"sync/atomic"
	"time"
)

// callState is the core's state for one request, from the checks to the
// answer: the method and when it arrived, then, for a tool call, the call,
// its tool, the prepared run, the replay-store claim it holds and whether
// it was answered. Behind [Handler.Middleware] and [Handler.Verify] it is
// carried on the verified call's context.
type callState struct {
	h      *Handler
	method string
	start  time.Time
	stripe int // the counters' stripe this request writes (see stripes)
	// check is set when the request proved it is a check's (check.go): it
	// is then counted in the report's checks section, not as traffic;
	// checkToken is the token its answer carries, for a signed one.
	check      bool
	checkToken string

	call     *Call
	tool     *Tool                              // the registered tool the call names
	run      func(context.Context) (any, error) // the prepared tool run (Serve only)
	held     claim                              // the replay-store claim held, if any (store nil when none)
	answered atomic.Bool                        // set by the first answer
	verified bool                               // the request's signature verified (§5 step 5)
	// answerBy and maxAnswer are Request.AnswerBy and
	// Request.MaxAnswerBytes (answerby.go); zero when not set.
	answerBy  time.Time
	maxAnswer int
}

// now returns the time now, read on the monotonic clock only (by way of
// the request's start), which costs about half of time.Now's reading of
// both clocks.
func (st *callState) now() time.Time { return st.start.Add(time.Since(st.start)) }

type callStateKey struct{}

// callStateFrom returns the verified call's state on ctx, or nil.
func callStateFrom(ctx context.Context) *callState {
	st, _ := ctx.Value(callStateKey{}).(*callState)
	return st
}

// CallFrom returns the verified call on ctx (the request's context behind
// [Handler.Middleware], or the context [Handler.Verify] returned), and false
// when there is none.
func CallFrom(ctx context.Context) (*Call, bool) {
	if st := callStateFrom(ctx); st != nil {
		return st.call, true
	}
	return nil, false
}

// unsignedCheck sets st.check for a request refused before its signature
// verified: it is a check's only when header is a check token still good
// under one of the keys in force (check.go). Without the header it costs
// nothing.
func (st *callState) unsignedCheck(header string, now time.Time, keys *keyring) {
	st.check = header != "" && keys.err == nil && validCheckToken(header, now, keys.keys)
}
