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
	maxSkewMs    atomic.Int64 // the stale skew of largest magnitude, signed as clock.skewMs
	tools        map[string]*toolStats
	claimFailure atomic.Int64
	evicted      atomic.Int64
	readOnlyRuns atomic.Int64
	manifestAt   atomic.Int64 // unix ms of the last signed GET, 0 before
}

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
	calls, results, refusals, failed, invalidInput, offContract atomic.Int64

	next    atomic.Uint64                // calls sampled so far; the ring's next slot
	_       [8]byte                      // the counters fill one cache line
	samples [latencySamples]atomic.Int64 // recent calls' end and duration (see sample)
}

func newToolStats(stripes int) *toolStats {
	return &toolStats{stripes: make([]toolStripe, stripes), base: time.Now()}
}

// counts adds up the stripes' answers by outcome.
func (t *toolStats) counts() (calls, results, refusals, failed, invalidInput, offContract int64) {
	for i := range t.stripes {
		s := &t.stripes[i]
		calls += s.calls.Load()
		results += s.results.Load()
		refusals += s.refusals.Load()
		failed += s.failed.Load()
		invalidInput += s.invalidInput.Load()
		offContract += s.offContract.Load()
	}
	return calls, results, refusals, failed, invalidInput, offContract
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

// staleSkew keeps the stale timestamp's skew (server clock minus t, in
// ms) when its magnitude is the largest seen.
func (s *stats) staleSkew(skewMs int64) {
	if s == nil {
		return
	}
	for {
		old := s.maxSkewMs.Load()
		if diffAbs(skewMs) <= diffAbs(old) || s.maxSkewMs.CompareAndSwap(old, skewMs) {
			return
		}
	}
}

// claimFailed counts a claim the store could not record (§8).
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
