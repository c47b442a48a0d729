package loadtest

import (
	"fmt"
	"io"
	"sort"
	"time"
)

// WriteText writes a human-readable report: throughput, latency, answers by
// status and kind, and every kind of error.
func (r Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "requests     %d in %s (%.0f req/s)\n", r.Requests, r.Elapsed.Round(time.Millisecond), r.Throughput())
	fmt.Fprintf(w, "latency      p50 %s  p90 %s  p99 %s  max %s\n", ms(r.P50), ms(r.P90), ms(r.P99), ms(r.Max))
	fmt.Fprintf(w, "statuses    ")
	for _, s := range sortedKeys(r.Statuses) {
		fmt.Fprintf(w, " %d×%d", s, r.Statuses[s])
	}
	fmt.Fprintf(w, "\nkinds       ")
	for _, k := range Kinds() {
		fmt.Fprintf(w, " %s×%d", k, r.Kinds[k])
	}
	fmt.Fprintf(w, "\nerrors       %d (transport %d, unexpected answers %d), 5xx %d\n", r.Errors(), r.TransportErrors, r.Errors()-r.TransportErrors, r.ServerErrors)
	reasons := make([]string, 0, len(r.Unexpected))
	for reason := range r.Unexpected {
		reasons = append(reasons, reason)
	}
	sort.Strings(reasons)
	for _, reason := range reasons {
		fmt.Fprintf(w, "  %6d × %s\n", r.Unexpected[reason], reason)
	}
}

// SummaryHeader is the header of the lines WriteSummary writes.
const SummaryHeader = "framework\treq/s\tp50\tp99\trequests\terrors\t5xx"

// WriteSummary writes one tab-separated line for a side-by-side table:
// label, req/s, p50, p99, requests, errors, 5xx.
func (r Report) WriteSummary(w io.Writer, label string) {
	fmt.Fprintf(w, "%s\t%.0f\t%s\t%s\t%d\t%d\t%d\n", label, r.Throughput(), ms(r.P50), ms(r.P99), r.Requests, r.Errors(), r.ServerErrors)
}

// ms renders a duration in milliseconds with two decimals.
func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

func sortedKeys(m map[int]int) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}
