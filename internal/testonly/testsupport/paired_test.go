package testsupport

import (
	"slices"
	"testing"
	"time"
)

// TestPaired: each side serves every index once, in order, in blocks; the
// order within a pair alternates; between runs before each pair, untimed,
// with the next index; each side's time goes to that side, whatever its
// place in the pair, and the report names both sides, their per-call
// times, their ratio and their mean.
func TestPaired(t *testing.T) {
	// A fake clock: side 0 ("new") takes 3 ns a call, side 1 ("old") 1 ns,
	// between 1 µs, which must not be timed; and a fake CPU clock on which
	// side 0 takes 2 ns a call, side 1 4 ns and between 1 µs.
	var elapsed, used time.Duration
	defer func(c func() time.Time, u func() time.Duration) { pairedClock, pairedCPU = c, u }(pairedClock, pairedCPU)
	pairedClock = func() time.Time { return time.Unix(0, 0).Add(elapsed) }
	pairedCPU = func() time.Duration { return used }

	var calls [2][]int
	var events []string // "b<next>" for between, "0"/"1" at each block's first call
	var betweens []int
	res := testing.Benchmark(func(b *testing.B) {
		calls, events, betweens, elapsed, used = [2][]int{}, nil, nil, 0, 0 // testing.Benchmark may run the body more than once
		serve := func(side int, cost, cpu time.Duration) func(int) {
			return func(i int) {
				if i%4 == 0 {
					events = append(events, string(rune('0'+side)))
				}
				calls[side] = append(calls[side], i)
				elapsed += cost
				used += cpu
			}
		}
		Paired(b, 4, [2]string{"new", "old"}, [2]func(int){serve(0, 3, 2), serve(1, 1, 4)}, func(next int) {
			betweens = append(betweens, next)
			events = append(events, "b")
			elapsed += time.Microsecond
			used += time.Microsecond
		})
	})
	pairs := len(betweens)
	if pairs == 0 || res.N != pairs {
		t.Fatalf("%d pairs for N = %d", pairs, res.N)
	}
	want := make([]int, 4*pairs)
	for i := range want {
		want[i] = i
	}
	for side := range 2 {
		if !slices.Equal(calls[side], want) {
			t.Fatalf("side %d served %v, want 0..%d in order", side, calls[side], len(want)-1)
		}
	}
	var wantEvents []string
	for p := range pairs {
		if betweens[p] != 4*p {
			t.Fatalf("between ran with %v, want multiples of 4", betweens)
		}
		first := p % 2
		wantEvents = append(wantEvents, "b", string(rune('0'+first)), string(rune('0'+1-first)))
	}
	if !slices.Equal(events, wantEvents) {
		t.Fatalf("ran %v, want between then both blocks, the order alternating: %v", events, wantEvents)
	}
	for unit, want := range map[string]float64{"new-ns/op": 3, "old-ns/op": 1, "new/old": 3, "ns/op": 2,
		"new-cpu-ns/op": 2, "old-cpu-ns/op": 4, "new/old-cpu": 0.5} {
		if got, ok := res.Extra[unit]; !ok || got != want {
			t.Errorf("%s = %v (reported: %t), want %v; all: %v", unit, got, ok, want, res.Extra)
		}
	}
}
