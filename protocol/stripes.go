package protocol

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// maxStripes is the most copies a Handler keeps of each counter that every
// call writes (a tool's answers and latencies, a key's verified count).
const maxStripes = 8

// stripes picks which copy of those counters a request writes, so that
// requests running on different processors write different cache lines.
// Two processors writing one counter pass its cache line back and forth
// on every call: with one copy, the counting of a call took 59 ns with
// two processors counting at once against 42 ns with one
// (BenchmarkCountingPerCall -cpu 1,2), so it did not scale at all; with
// stripes, 24 against 39. The report adds the copies up.
type stripes struct {
	n      int       // how many copies: GOMAXPROCS when the Handler was built, at most maxStripes
	tokens sync.Pool // of *int, one per processor: its stripe
	next   atomic.Uint32
}

func newStripes() *stripes {
	s := &stripes{n: min(runtime.GOMAXPROCS(0), maxStripes)}
	s.tokens.New = func() any {
		// The remainder is taken in uint32: int of the counter is negative
		// past 2³¹ where int has 32 bits.
		i := int((s.next.Add(1) - 1) % uint32(s.n))
		return &i
	}
	return s
}

// pick returns the stripe of the processor the caller runs on, in [0, n).
// sync.Pool keeps one token in each processor's own slot, so the requests
// of one processor pick the same stripe and the first n processors each
// pick their own. A token the pool drops (it may, at a garbage
// collection) is made again, round robin: two processors then share a
// stripe for a while, which is slower, never wrong.
func (s *stripes) pick() int {
	if s.n == 1 {
		return 0
	}
	t := s.tokens.Get().(*int)
	i := *t
	s.tokens.Put(t)
	return i
}

// stripedCount is one copy of a counter, alone on its cache line.
type stripedCount struct {
	atomic.Int64
	_ [56]byte
}
