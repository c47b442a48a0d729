package protocol

import (
	"sync"
	"sync/atomic"
	"time"
)

// stats holds the counters of the diagnostics report (PROTOCOL.md §10).
// Its memory is fixed when the Handler is built, whatever the traffic: one
// slot per refusal code, one entry per registered tool, a ring of recent
// durations per tool and stripe. Counting is a few atomic operations per
// request, on the request's stripe (see stripes) where every call counts;
// nothing on the path of a call takes a lock, except the one taken to
// record a failure's message.
type stats struct {
	started      time.Time
	stripes      *stripes
	refused      [len(refusalCodes)]codeStats
	stale        staleSkews
	tools        map[string]*toolStats
	claimFailure atomic.Int64
	evicted      atomic.Int64
	readOnlyRuns atomic.Int64
	manifestAt   atomic.Int64 // unix ms of the last signed GET, 0 before
	checks       checkStats
}

// checkStats counts the requests of checks (PROTOCOL.md §10, "Checks are
// not traffic"; check.go): how many, when the last came, how many were
// tool calls and their refusals by code. A check's request is counted
// here only, never in the deployment's readings.
type checkStats struct {
	requests, calls atomic.Int64
	last            atomic.Int64 // unix ms
	refused         [len(refusalCodes)]atomic.Int64
}

// staleSkews keeps the stale_timestamp reading of §10 that an
// unauthenticated request can move (stale requests are refused before
// their MAC is checked, §5), so that none lasts or reads as no clock
// could: the skew of largest magnitude is kept per window of
// staleWindow, and the report reads the current window and the one
// before (a request's reading is gone after two windows at most); a skew
// beyond plausibleSkew (no drifting clock, but a t in seconds or a
// forgery) never becomes the reading and is counted in implausible.
type staleSkews struct {
	mu          sync.Mutex
	window      [2]int64 // the windows' numbers (unix ms / staleWindow), by parity
	max         [2]int64 // each window's skew of largest magnitude, signed as clock.skewMs; 0: none
	implausible atomic.Int64
}

// The bounds of the stale_timestamp reading (see staleSkews).
const (
	staleWindow   = 30 * time.Minute
	plausibleSkew = 24 * time.Hour
)

// refusalCodes are the codes §10 lists under "refused", each with its
// slot in stats.refused. execution_failed and diagnostics_unsupported are answers, not
// refusals: a tool's failures are counted with the tool.
var refusalCodes = [...]Code{
	CodeMissingSignature, CodeMalformedSignature, CodeStaleTimestamp, CodeInvalidSignature,
	CodeInvalidBody, CodeUnknownOp, CodeUnknownTool, CodeInvalidInput,
	CodeMethodNotAllowed, CodeMissingSecret, CodeInvalidMedianKey,
}

// refusalIndex is the slot of code in stats.refused, or -1 for a code that
// is not a refusal. It runs for refused requests only.
func refusalIndex(code Code) int {
	for i, c := range refusalCodes {
		if c == code {
			return i
		}
	}
	return -1
}

// codeStats counts one refusal code.
type codeStats struct {
	count atomic.Int64
	last  atomic.Int64 // unix ms
}

// latencySamples is how many recent durations each tool keeps per stripe,
// and how many of the latest of them, across the stripes, its percentiles
// are taken from.
const latencySamples = 256

// sample is what a tool's ring keeps of one call: the milliseconds from
// the stats' base to the call's end in the high 40 bits (34 years), so
// that the report can take the latest samples of all stripes (a stripe
// whose processors took no call for an hour still holds that hour's old
// durations), and the call's duration in whole milliseconds in the low
// 24 (at most 4.6 hours), which is all the percentiles report. Whole
// milliseconds, so that calls ending in the same second still come in the
// order they ended: to the second, the cut to the latest would keep the
// longest of them.
func sample(base, start time.Time, d time.Duration) int64 {
	at := min(max(start.Sub(base)+d, 0).Milliseconds(), 1<<39-1)
	return at<<sampleBits | min(max(d, 0).Milliseconds(), 1<<sampleBits-1)
}

// sampleBits is how many low bits of a sample hold the duration.
const sampleBits = 24

// toolStats counts one registered tool's answers by outcome, on one stripe
// per processor (see stripes); the report adds them up.
type toolStats struct {
	stripes []toolStripe
	base    time.Time // when the stats were made: each sample holds the milliseconds since (see sample)

	mu          sync.Mutex // guards lastFailure, written on failures only
	lastFailure failureStats
}

// toolStripe is one stripe of a tool's counters: the answers counted on it
// and a ring of its recent durations.
type toolStripe struct {
	calls, results, refusals, rateLimited, failed, invalidInput, offContract atomic.Int64

	next    atomic.Uint64                // calls sampled so far; the ring's next slot: with the counters, one cache line
	samples [latencySamples]atomic.Int64 // recent calls' end and duration (see sample)
}

func newToolStats(stripes int) *toolStats {
	return &toolStats{stripes: make([]toolStripe, stripes), base: time.Now()}
}

// toolCounts are a tool's answers by outcome, added up over the stripes.
type toolCounts struct {
	calls, results, refusals, rateLimited, failed, invalidInput, offContract int64
}

// counts adds up the stripes' answers by outcome.
func (t *toolStats) counts() toolCounts {
	var c toolCounts
	for i := range t.stripes {
		s := &t.stripes[i]
		c.calls += s.calls.Load()
		c.results += s.results.Load()
		c.refusals += s.refusals.Load()
		c.rateLimited += s.rateLimited.Load()
		c.failed += s.failed.Load()
		c.invalidInput += s.invalidInput.Load()
		c.offContract += s.offContract.Load()
	}
	return c
}

// failureStats is a tool's last execution_failed or invalid_input answer.
type failureStats struct {
	at      time.Time
	code    Code
	message string // as answered, at most maxFailureChars characters
}

// maxFailureChars bounds a failure's message in the report.
const maxFailureChars = 200

func newStats(started time.Time, tools map[string]*Tool) *stats {
	s := &stats{started: started, stripes: newStripes(), tools: make(map[string]*toolStats, len(tools))}
	for name := range tools {
		s.tools[name] = newToolStats(s.stripes.n)
	}
	return s
}

// refusal counts one refused request.
func (s *stats) refusal(code Code, now time.Time) {
	if s == nil { // the zero Handler
		return
	}
	if i := refusalIndex(code); i >= 0 {
		s.refused[i].count.Add(1)
		s.refused[i].last.Store(now.UnixMilli())
	}
}

// staleSkew records the skew (server clock minus t, in ms) of a stale
// request refused at now: the window's reading when it is plausible and
// the largest of the window, implausible otherwise (see staleSkews).
func (s *stats) staleSkew(skewMs int64, now time.Time) {
	if s == nil {
		return
	}
	if diffAbs(skewMs) > plausibleSkew.Milliseconds() {
		s.stale.implausible.Add(1)
		return
	}
	w := now.UnixMilli() / staleWindow.Milliseconds()
	i := w & 1
	k := &s.stale
	k.mu.Lock()
	if k.window[i] != w {
		k.window[i], k.max[i] = w, 0
	}
	if diffAbs(skewMs) > diffAbs(k.max[i]) {
		k.max[i] = skewMs
	}
	k.mu.Unlock()
}

// staleReading returns the stale skew of largest magnitude of the window
// of now and the one before, 0 when there is none, and how many stale
// requests were implausible.
func (s *stats) staleReading(now time.Time) (maxSkewMs, implausible int64) {
	w := now.UnixMilli() / staleWindow.Milliseconds()
	k := &s.stale
	k.mu.Lock()
	for i := range k.window {
		if (k.window[i] == w || k.window[i] == w-1) && diffAbs(k.max[i]) > diffAbs(maxSkewMs) {
			maxSkewMs = k.max[i]
		}
	}
	k.mu.Unlock()
	return maxSkewMs, k.implausible.Load()
}

// checked counts one request of a check (checkStats): code is its
// refusal's code, "" when it was not refused, and call says whether it
// was a call of a registered tool.
func (s *stats) checked(code Code, call bool, now time.Time) {
	c := &s.checks
	c.requests.Add(1)
	c.last.Store(now.UnixMilli())
	if call {
		c.calls.Add(1)
	}
	if code != "" {
		if i := refusalIndex(code); i >= 0 {
			c.refused[i].Add(1)
		}
	}
}

// claimFailed counts a call not run because the store could not record
// its claim (§8); a read-only tool run all the same is a readOnlyRun
// instead, never both.
func (s *stats) claimFailed() {
	if s != nil {
		s.claimFailure.Add(1)
	}
}

// evictedEarly counts answers the store dropped before their time.
func (s *stats) evictedEarly(n int) {
	if s != nil && n > 0 {
		s.evicted.Add(int64(n))
	}
}

// readOnlyRun counts a read-only tool run while the store could not record
// its claim (§8, store.readOnlyRuns).
func (s *stats) readOnlyRun() {
	if s != nil {
		s.readOnlyRuns.Add(1)
	}
}

// manifestServed records a signed GET of the manifest.
func (s *stats) manifestServed(now time.Time) {
	if s != nil {
		s.manifestAt.Store(now.UnixMilli())
	}
}

// rateLimitedReason is the reason of a rate limit's refusal (§9.1,
// ratelimit.Reason; TestReportCountsRateLimitedApart holds the two
// together): the report counts those refusals again in rateLimited, so
// that they read apart from the tool's own.
const rateLimitedReason = "rate_limited"

// answer counts one answer of a registered tool on stripe: its outcome,
// and, unless it came from the replay store, its duration d and when it
// ended (start+d). A failure's message is read back from the answer's
// body, as the agent got it. A response the app's handlers wrote on their
// own is what the agent got, so it is counted as offContract, never as
// the execution_failed kept for the call's repeats.
func (t *toolStats) answer(stripe int, resp Response, start time.Time, d time.Duration, now func() time.Time) {
	s := &t.stripes[stripe]
	s.calls.Add(1)
	switch {
	case resp.code == "" && resp.refusal != "":
		s.refusals.Add(1)
		if resp.refusal == rateLimitedReason {
			s.rateLimited.Add(1)
		}
	case resp.code == "":
		s.results.Add(1)
	case resp.offContract:
		s.offContract.Add(1)
	case resp.code == CodeExecutionFailed || resp.code == CodeInvalidInput:
		if resp.code == CodeExecutionFailed {
			s.failed.Add(1)
		} else {
			s.invalidInput.Add(1)
		}
		f := failureStats{at: now(), code: resp.code, message: truncateChars(errorMessage(resp.Body), maxFailureChars)}
		t.mu.Lock()
		if !f.at.Before(t.lastFailure.at) {
			t.lastFailure = f
		}
		t.mu.Unlock()
	}
	if !resp.replayed {
		n := s.next.Add(1) - 1
		s.samples[n%latencySamples].Store(sample(t.base, start, d))
	}
}
