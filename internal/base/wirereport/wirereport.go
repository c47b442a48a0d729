// Package wirereport decodes the diagnostics report (docs/PROTOCOL.md §10)
// as a client reads it off the wire: mediancheck reads endpoints' reports
// with it, and protocol's tests check the Handler's wire form through it.
// It is not protocol.Report on purpose: a client must tell a field that is
// absent or null from a zero (nil pointers), and must not fail the whole
// report on a timestamp it cannot parse (times stay strings, as sent).
//
// It is a leaf the core and the client share (internal/base), imported by
// mediancheck and by protocol's tests; it imports no package of the module,
// so the core and every package above it can import it
// (internal/testonly/surface holds it to protocol at most).
package wirereport

import "encoding/json"

// Report is the §10 report as sent; a nil pointer is a field that was
// absent or null.
type Report struct {
	Service struct {
		Library, Go, Uptime, Now string
	}
	Clock struct {
		SkewMs *int64
	}
	Keys []struct {
		Fingerprint  string
		Verified     int64
		LastVerified string
	}
	KeyRead *struct {
		Source, Code, At string
	}
	Refused map[string]struct {
		Count     int64
		Last      string
		MaxSkewMs *int64
	}
	Store struct {
		Kind                                      string
		Reachable                                 *bool
		LatencyMs                                 int64
		ClaimFailures, EvictedEarly, ReadOnlyRuns int64
		UsedBytes, BudgetBytes                    *int64
	}
	Manifest struct {
		SHA256     string
		Tools      int
		LastServed string
	}
	Tools map[string]struct {
		Calls, Results, Refusals, Failed, InvalidInput, OffContract, P50Ms, P99Ms int64
		LastFailure                                                               *struct{ At, Code, Message string }
	}
	App     json.RawMessage
	Omitted int
}
