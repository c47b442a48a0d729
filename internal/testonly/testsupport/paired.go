package testsupport

import (
	"testing"
	"time"
)

// pairedClock is Paired's clock, and pairedCPU the process's CPU time;
// TestPaired replaces them to check what Paired attributes to each side.
var (
	pairedClock = time.Now
	pairedCPU   = processCPU
)

// Paired is the body of a benchmark that compares two ways of serving the
// same calls, serve[0] and serve[1], as a paired measurement: they run in
// alternating blocks of block calls, each block timed on its own and the
// order within each pair alternating too, so that what other jobs and the
// processor's clock do to a shared machine falls on both alike within a
// few milliseconds. One b.Loop iteration is one block of each, and serve
// gets the index of the call it serves, counted from 0 for each side.
// between, when not nil, runs before each pair of blocks, untimed, with
// the index of the next call (to give a store a fresh start, say).
//
// It reports each side's time per call as <name>-ns/op, the ratio of
// their totals as <names[0]>/<names[1]> (what to read, across counts, with
// benchstat), and their mean as ns/op. Sequential sub-benchmarks on this
// project's shared machine spread widely per sample; the ratio of a pair
// spreads far less (docs/PERFORMANCE.md, Method, gives both). It also
// reports the process's CPU time per call of each side,
// <name>-cpu-ns/op, and their ratio, <names[0]>/<names[1]>-cpu: on a
// machine so loaded that the process waits for a processor for most of a
// block, wall time measures the waiting and CPU time still measures the
// work (where the platform gives no CPU time, these are left out).
// Allocations, which -benchmem would count per pair of blocks and for both
// sides together, are for the sequential benchmarks to give.
func Paired(b *testing.B, block int, names [2]string, serve [2]func(i int), between func(next int)) {
	b.Helper()
	var took, cpu [2]time.Duration
	next, pair := 0, 0
	for b.Loop() {
		if between != nil {
			between(next)
		}
		for k := range 2 {
			side := (k + pair) % 2 // 0 then 1, then 1 then 0
			startCPU := pairedCPU()
			start := pairedClock()
			for i := next; i < next+block; i++ {
				serve[side](i)
			}
			took[side] += pairedClock().Sub(start)
			cpu[side] += pairedCPU() - startCPU
		}
		next += block
		pair++
	}
	if next == 0 {
		return
	}
	b.ReportMetric(float64(took[0])/float64(next), names[0]+"-ns/op")
	b.ReportMetric(float64(took[1])/float64(next), names[1]+"-ns/op")
	b.ReportMetric(float64(took[0])/float64(took[1]), names[0]+"/"+names[1])
	b.ReportMetric(float64(took[0]+took[1])/float64(2*next), "ns/op")
	if cpu[0] > 0 && cpu[1] > 0 {
		b.ReportMetric(float64(cpu[0])/float64(next), names[0]+"-cpu-ns/op")
		b.ReportMetric(float64(cpu[1])/float64(next), names[1]+"-cpu-ns/op")
		b.ReportMetric(float64(cpu[0])/float64(cpu[1]), names[0]+"/"+names[1]+"-cpu")
	}
}
