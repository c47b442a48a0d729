package protocol

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/median-go/median/internal/base/chars"
	"github.com/median-go/median/internal/base/version"
)

// Report is the diagnostics report (PROTOCOL.md §10): the endpoint's
// service, clock, keys, refusals, store, manifest and tools, as counted
// since the Handler was built. The Handler answers {"op": "diagnostics"}
// with it, cut to 2,000 characters; [Handler.Report] returns it whole, for
// the app's own health check, logs or admin page. Its JSON encoding is the
// report's wire form. It never holds a key, a secret, a MAC, a visitor
// field, an input, a result or a transport detail.
type Report struct {
	// Service says which library and Go build answer, since when and the
	// server's clock.
	Service struct {
		Library string    `json:"library"` // "median-go v0.4.0", or "median-go (devel)" for a build from source
		Go      string    `json:"go"`      // the Go version the server was built with
		Uptime  string    `json:"uptime"`  // since the Handler was built, in whole seconds ("3h12m5s")
		Now     time.Time `json:"now"`     // the server clock, UTC
	} `json:"service"`

	// Clock compares the server's clock with the request's.
	Clock struct {
		// SkewMs is the server clock minus the t of the diagnostics
		// request, in milliseconds (positive: the server is ahead); 0 in
		// a report read from code, which has no request.
		SkewMs int64 `json:"skewMs"`
	} `json:"clock"`

	// Keys are the keys in force, by fingerprint, in the order configured,
	// with how many requests verified under each and when the last did.
	Keys []struct {
		Fingerprint  string    `json:"fingerprint"`
		Verified     int64     `json:"verified"`
		LastVerified time.Time `json:"lastVerified,omitzero"`
	} `json:"keys"`

	// KeyRead is set while the newest read of keys that change at run
	// time (MEDIAN_KEY_FILE, Config.KeySource) gave no usable current key
	// and the keys above stayed in force, or dropped a key being retired
	// that it could not read or use: which source (for a dropped key,
	// where it came from: MEDIAN_KEY_PREVIOUS_FILE, "Config.KeySource key
	// 2 of 2"), the code of what is wrong and when the read came. The log
	// has the detail.
	KeyRead *struct {
		Source string    `json:"source"`
		Code   Code      `json:"code"`
		At     time.Time `json:"at"`
	} `json:"keyRead,omitempty"`

	// Refused counts every refusal code answered so far to requests that
	// are not a check's, with the time of the last one. For
	// stale_timestamp, whose requests are refused before their signature
	// is checked, MaxSkewMs is the skew of largest magnitude seen in the
	// last half hour to hour, among those within a day of the server's
	// clock, signed like Clock.SkewMs (0 when there is none), and
	// Implausible counts the stale requests further off than a day, which
	// no drifting clock sends.
	Refused map[Code]struct {
		Count       int64     `json:"count"`
		Last        time.Time `json:"last"`
		MaxSkewMs   int64     `json:"maxSkewMs,omitzero"`
		Implausible int64     `json:"implausible,omitzero"`
	} `json:"refused"`

	// Store is the replay store (Config.Store): its kind, a probe's
	// result and the counts of what it could not do.
	Store struct {
		// Kind is "memory", "redis", "postgres", "dynamodb", "custom" (a
		// store without a Kind method) or "none" (replay protection
		// disabled).
		Kind string `json:"kind"`
		// Reachable is the result of a probe bounded to 500 ms; nil for a
		// store that cannot be probed. Why a probe failed goes to the log.
		Reachable *bool `json:"reachable"`
		// Problem says why the probe failed when the store names it in
		// words meant for this report: its error (or one it wraps) has a
		// Problem() string method, as pgstore's exhausted connection pool
		// does. Empty otherwise: the error itself may hold addresses, and
		// goes only to the log.
		Problem       string `json:"problem,omitempty"`
		LatencyMs     int64  `json:"latencyMs"`     // the probe's duration
		ClaimFailures int64  `json:"claimFailures"` // calls not run because the store could not record their claim
		EvictedEarly  int64  `json:"evictedEarly"`  // answers dropped before their time to make room
		ReadOnlyRuns  int64  `json:"readOnlyRuns"`  // read-only tools run all the same while the store could not record their claim; not in ClaimFailures
		UsedBytes     *int64 `json:"usedBytes,omitempty"`
		BudgetBytes   *int64 `json:"budgetBytes,omitempty"` // the in-memory store's, with UsedBytes
	} `json:"store"`

	// Manifest is the tool list GET answers (§6): its SHA-256, to compare
	// with what Median synced, and when it was last fetched.
	Manifest struct {
		SHA256     string    `json:"sha256"`              // of Bytes, in hex
		Tools      int       `json:"tools"`               // how many tools it lists
		LastServed time.Time `json:"lastServed,omitzero"` // the last signed GET; zero before the first
		// Bytes is the manifest exactly as GET answers it (§6).
		Bytes []byte `json:"-"`
	} `json:"manifest"`

	// Tools has one entry per registered tool: its calls by outcome
	// (Refusals include the risk floor's and rate limits'; RateLimited is
	// how many of them a rate limit answered, §9.1, so the tool's own are
	// Refusals - RateLimited), the 50th and 99th percentiles of
	// its recent calls' durations, and its last execution_failed or
	// invalid_input answer, as the agent got it. OffContract counts the
	// calls the app's own handlers answered outside the contract (see
	// "Handler chains" in the package doc). RateLimited and OffContract
	// are absent from the JSON while 0. A check's calls are not counted
	// here (Checks).
	Tools map[string]struct {
		Calls        int64 `json:"calls"`
		Results      int64 `json:"results"`
		Refusals     int64 `json:"refusals"`
		RateLimited  int64 `json:"rateLimited,omitzero"`
		Failed       int64 `json:"failed"`
		InvalidInput int64 `json:"invalidInput"`
		OffContract  int64 `json:"offContract,omitzero"`
		P50Ms        int64 `json:"p50Ms"`
		P99Ms        int64 `json:"p99Ms"`
		LastFailure  struct {
			At      time.Time `json:"at"`
			Code    Code      `json:"code"`
			Message string    `json:"message"`
		} `json:"lastFailure,omitzero"`
	} `json:"tools"`

	// Checks counts the requests of checks (a conformance run,
	// mediancheck, the inspector, a probe marking its requests with
	// [Key.CheckMark]), which the other sections leave out (PROTOCOL.md
	// §10, "Checks are not traffic"): how many, when the last came, how
	// many were tool calls, and their refusals by code. Absent from the
	// JSON before the first.
	Checks struct {
		Requests int64          `json:"requests"`
		Last     time.Time      `json:"last,omitzero"`
		Calls    int64          `json:"calls,omitzero"`
		Refused  map[Code]int64 `json:"refused,omitempty"`
	} `json:"checks,omitzero"`

	// App is what Config.Diagnostics returned, as JSON; when it failed,
	// ran out of time or panicked, an object with one "error" entry
	// saying so. An empty object when Config.Diagnostics is not set.
	App json.RawMessage `json:"app,omitempty"`

	// Omitted is how many entries were dropped to fit the answer in
	// 2,000 characters; always 0 in a report read from code.
	Omitted int `json:"omitted,omitzero"`
}

// Deadlines of the report: the store's probe, and Config.Diagnostics at
// most, so that the report answers within a second (§10).
const (
	probeTimeout         = 500 * time.Millisecond
	defaultAppTimeout    = 500 * time.Millisecond
	maxAppTimeout        = 800 * time.Millisecond
	maxLibraryVersionLen = 64
	libraryName          = "median-go"

	// maxReportChars is the report's budget inside {"result": …}.
	maxReportChars = maxDiagnosticsChars - len(`{"result":}`)
)

// Report returns the diagnostics report as a typed value, whole: the
// counters, a probe of the store and what Config.Diagnostics adds, all
// within a second. Use it for the app's own health check or admin page;
// Median gets the same report, cut to 2,000 characters, when it asks.
func (h *Handler) Report(ctx context.Context) Report {
	return h.report(ctx, h.cfg.Now())
}

// report builds the whole report: the probe and Config.Diagnostics run at
// the same time, each under its own deadline.
func (h *Handler) report(ctx context.Context, now time.Time) Report {
	var r Report
	var wg sync.WaitGroup
	wg.Go(func() { h.reportStore(ctx, &r) })
	wg.Go(func() { r.App = h.reportApp(ctx) })
	h.reportCounters(&r, now)
	wg.Wait()
	return r
}

// reportCounters fills everything but the probe and app from the counters.
func (h *Handler) reportCounters(r *Report, now time.Time) {
	s := h.stats
	if s == nil { // the zero Handler
		s = newStats(now, nil)
	}
	r.Service.Library = libraryVersion()
	r.Service.Go = runtime.Version()
	r.Service.Uptime = now.Sub(s.started).Round(time.Second).String()
	r.Service.Now = now.UTC().Truncate(time.Millisecond)

	ring := h.keyring()
	if ring.readErr != nil {
		r.KeyRead = &struct {
			Source string    `json:"source"`
			Code   Code      `json:"code"`
			At     time.Time `json:"at"`
		}{ring.readSource, ring.readErr.Code, ring.readAt.UTC().Truncate(time.Millisecond)}
	}
	keys := ring.keys
	r.Keys = slices.Grow(r.Keys, len(keys))[:len(keys)]
	for i, k := range keys {
		r.Keys[i].Fingerprint = k.Fingerprint()
		if k.st != nil {
			r.Keys[i].Verified = k.verifiedCount()
			r.Keys[i].LastVerified = unixMilli(k.st.lastVerified.Load())
		}
	}

	makeMap(&r.Refused, 0)
	for i := range s.refused {
		n := s.refused[i].count.Load()
		if n == 0 {
			continue
		}
		e := r.Refused[refusalCodes[i]]
		e.Count, e.Last = n, unixMilli(s.refused[i].last.Load())
		if refusalCodes[i] == CodeStaleTimestamp {
			e.MaxSkewMs, e.Implausible = s.staleReading(now)
		}
		r.Refused[refusalCodes[i]] = e
	}
	if n := s.checks.requests.Load(); n > 0 {
		c := &r.Checks
		c.Requests, c.Last, c.Calls = n, unixMilli(s.checks.last.Load()), s.checks.calls.Load()
		for i := range s.checks.refused {
			if k := s.checks.refused[i].Load(); k > 0 {
				if c.Refused == nil {
					c.Refused = make(map[Code]int64)
				}
				c.Refused[refusalCodes[i]] = k
			}
		}
	}

	r.Store.ClaimFailures = s.claimFailure.Load()
	r.Store.EvictedEarly = s.evicted.Load()
	r.Store.ReadOnlyRuns = s.readOnlyRuns.Load()

	r.Manifest.SHA256 = h.manifestSum
	r.Manifest.Tools = len(h.tools)
	r.Manifest.LastServed = unixMilli(s.manifestAt.Load())
	r.Manifest.Bytes = h.manifest

	makeMap(&r.Tools, len(s.tools))
	for name, t := range s.tools {
		e := r.Tools[name]
		c := t.counts()
		e.Calls, e.Results, e.Refusals, e.RateLimited, e.Failed, e.InvalidInput, e.OffContract = c.calls, c.results, c.refusals, c.rateLimited, c.failed, c.invalidInput, c.offContract
		e.P50Ms, e.P99Ms = t.percentiles()
		t.mu.Lock()
		f := t.lastFailure
		t.mu.Unlock()
		if !f.at.IsZero() {
			e.LastFailure.At, e.LastFailure.Code, e.LastFailure.Message = f.at.UTC().Truncate(time.Millisecond), f.code, f.message
		}
		r.Tools[name] = e
	}
}

// percentiles returns the 50th and 99th percentiles of the durations of
// the latest latencySamples calls of all stripes, in whole milliseconds.
func (t *toolStats) percentiles() (p50, p99 int64) {
	d := make([]int64, 0, len(t.stripes)*latencySamples)
	for i := range t.stripes {
		s := &t.stripes[i]
		for j := range min(s.next.Load(), latencySamples) {
			d = append(d, s.samples[j].Load())
		}
	}
	if len(d) == 0 {
		return 0, 0
	}
	slices.Sort(d) // by when the call ended (see sample)
	d = d[max(len(d)-latencySamples, 0):]
	for i := range d {
		d[i] &= 1<<sampleBits - 1 // the duration
	}
	slices.Sort(d)
	at := func(p int) int64 { return d[(len(d)-1)*p/100] }
	return at(50), at(99)
}

// reportStore fills the store's kind and a probe bounded to probeTimeout.
// The probe runs in its own goroutine so that a store that ignores its
// context cannot hold the report; that goroutine ends when Probe returns.
// A failed probe reports reachable=false; its error goes only to the log,
// since it may hold addresses (§7).
func (h *Handler) reportStore(ctx context.Context, r *Report) {
	switch s := h.cfg.Store.(type) {
	case nil:
		r.Store.Kind = "none"
		return
	case memoryStore: // in the process: always reachable, nothing to probe
		used, budget, reachable := s.s.Bytes(), s.s.MaxBytes(), true
		r.Store.Kind, r.Store.Reachable = s.Kind(), &reachable
		r.Store.UsedBytes, r.Store.BudgetBytes = &used, &budget
		return
	}
	r.Store.Kind = "custom"
	if k, ok := h.cfg.Store.(interface{ Kind() string }); ok {
		kind, err := protect(h, ctx, "the replay store's Kind", nil, func() (string, error) { return k.Kind(), nil })
		if err == nil && kind != "" {
			r.Store.Kind = truncateChars(kind, 32)
		}
	}
	p, ok := h.cfg.Store.(interface{ Probe(context.Context) error })
	if !ok {
		return
	}
	start := time.Now()
	err, late := runWithin(ctx, probeTimeout, func(ctx context.Context) error {
		_, err := protect(h, ctx, "the replay store's Probe", nil, func() (struct{}, error) { return struct{}{}, p.Probe(ctx) })
		return err
	})
	if late != nil {
		err = late
	}
	r.Store.LatencyMs = time.Since(start).Milliseconds()
	reachable := err == nil
	r.Store.Reachable = &reachable
	if err != nil {
		r.Store.Problem = storeProblem(err)
		h.cfg.Logger.WarnContext(ctx, "median: diagnostics: the replay store did not answer its probe", "kind", r.Store.Kind, "error", errorText(err))
	}
}

// storeProblem is what a store's error says of itself for the report
// (Report.Store.Problem): the Problem method of the first error in err's
// chain that has one, cut to 200 characters, or "". A store's error whose
// methods panic says nothing.
func storeProblem(err error) (problem string) {
	defer func() {
		if recover() != nil {
			problem = ""
		}
	}()
	var p interface{ Problem() string }
	if errors.As(err, &p) {
		return truncateChars(p.Problem(), 200)
	}
	return ""
}

// reportApp runs Config.Diagnostics under its deadline and returns what it
// gave as JSON. Like the probe it runs in its own goroutine, which ends
// when the function returns. Its failure, timeout or panic is an entry in
// app, never a failed report; the error itself goes only to the log.
func (h *Handler) reportApp(ctx context.Context) json.RawMessage {
	if h.cfg.Diagnostics == nil {
		return json.RawMessage(`{}`)
	}
	raw, late := runWithin(ctx, h.appTimeout, func(ctx context.Context) json.RawMessage {
		raw, err := protect(h, ctx, "Config.Diagnostics", nil, func() (json.RawMessage, error) {
			v, err := h.cfg.Diagnostics(ctx)
			if err != nil {
				h.cfg.Logger.WarnContext(ctx, "median: Config.Diagnostics failed", "error", errorText(err))
				return appError("Config.Diagnostics failed; the server's log has its error"), nil
			}
			raw, err := json.Marshal(v)
			if err != nil {
				h.cfg.Logger.WarnContext(ctx, "median: what Config.Diagnostics returned cannot be encoded as JSON", "error", errorText(err))
				return appError("what Config.Diagnostics returned cannot be encoded as JSON"), nil
			}
			return raw, nil
		})
		if err != nil {
			raw = appError("Config.Diagnostics panicked; the server's log has the stack")
		}
		return raw
	})
	switch {
	case late == nil:
		return raw
	case errors.Is(late, context.DeadlineExceeded):
		return appError("Config.Diagnostics did not finish within " + h.appTimeout.String())
	}
	return appError("the request ended before Config.Diagnostics finished")
}

func appError(msg string) json.RawMessage {
	raw, _ := json.Marshal(map[string]string{"error": msg})
	return raw
}

// encodeReport encodes r in at most maxDiagnosticsChars characters,
// dropping whole entries in §10's order when it is longer: checks, tools
// without failures or off-contract answers (fewest calls first) and app,
// then the other tools (fewest of those answers first). Should that not be enough (a great many keys), refusal
// codes (least counted first) and keys (last configured first) follow;
// service and clock always remain. Omitted says how many entries were
// dropped.
func encodeReport(r Report) []byte {
	body, err := marshalPlain(r)
	if err == nil && chars.Count(body) <= maxReportChars {
		return body
	}
	drops := dropOrder(r)
	// Dropping one more entry always shortens the answer by more than the
	// count grows, so the fewest drops that fit are found by bisection.
	fits := func(body []byte) bool { return chars.Count(body) <= maxReportChars }
	n := sort.Search(len(drops), func(n int) bool { return fits(encodeWithout(r, drops[:n])) })
	if body = encodeWithout(r, drops[:n]); fits(body) {
		return body
	}
	var least Report
	least.Service, least.Clock, least.Omitted = r.Service, r.Clock, len(drops)
	body, _ = marshalPlain(least)
	return body
}

// drop removes one entry from a report being cut.
type drop func(*Report)

// dropOrder lists the report's droppable entries, first to go first.
func dropOrder(r Report) []drop {
	type tool struct {
		name            string
		calls, failures int64 // failures: its failed, invalid_input and off-contract answers
	}
	var quiet, failing []tool
	for name, t := range r.Tools {
		if f := t.Failed + t.InvalidInput + t.OffContract; f > 0 {
			failing = append(failing, tool{name, t.Calls, f})
		} else {
			quiet = append(quiet, tool{name, t.Calls, 0})
		}
	}
	slices.SortFunc(quiet, func(a, b tool) int { return cmp.Or(cmp.Compare(a.calls, b.calls), cmp.Compare(a.name, b.name)) })
	slices.SortFunc(failing, func(a, b tool) int { return cmp.Or(cmp.Compare(a.failures, b.failures), cmp.Compare(a.name, b.name)) })
	var drops []drop
	if r.Checks.Requests > 0 {
		drops = append(drops, func(r *Report) { r.Checks = Report{}.Checks })
	}
	dropTool := func(name string) drop { return func(r *Report) { delete(r.Tools, name) } }
	for _, t := range quiet {
		drops = append(drops, dropTool(t.name))
	}
	if r.App != nil {
		drops = append(drops, func(r *Report) { r.App = nil })
	}
	for _, t := range failing {
		drops = append(drops, dropTool(t.name))
	}
	codes := make([]Code, 0, len(r.Refused))
	for c := range r.Refused {
		codes = append(codes, c)
	}
	slices.SortFunc(codes, func(a, b Code) int {
		return cmp.Or(cmp.Compare(r.Refused[a].Count, r.Refused[b].Count), cmp.Compare(a, b))
	})
	for _, c := range codes {
		drops = append(drops, func(r *Report) { delete(r.Refused, c) })
	}
	for range r.Keys {
		drops = append(drops, func(r *Report) { r.Keys = r.Keys[:len(r.Keys)-1] })
	}
	return drops
}

// encodeWithout encodes r with the given entries dropped, on copies of its
// maps and slices (r itself is left whole).
func encodeWithout(r Report, drops []drop) []byte {
	r.Tools, r.Refused, r.Keys = maps.Clone(r.Tools), maps.Clone(r.Refused), slices.Clone(r.Keys)
	for _, d := range drops {
		d(&r)
	}
	r.Omitted = len(drops)
	body, _ := marshalPlain(r)
	return body
}

// libraryVersion is the library's version as the report shows it:
// "median-go v0.4.0", or "median-go (devel)" when built from its own source
// tree or without module information.
func libraryVersion() string {
	return libraryName + " " + truncateChars(version.Module(), maxLibraryVersionLen)
}

// unixMilli is the UTC time of a unix-ms counter; zero for 0 (never).
func unixMilli(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// makeMap makes the map *m; it lets the report's sections keep their types
// unnamed.
func makeMap[M ~map[K]V, K comparable, V any](m *M, size int) { *m = make(M, size) }

// truncateChars cuts s to at most n characters, by chars' rule. It
// returns a part of s: no copy.
func truncateChars(s string, n int) string {
	return s[:len(chars.Prefix([]byte(s), n))]
}

// truncate shortens s to at most n characters for error messages, as
// truncateChars does (a character is never split), and marks a cut with
// "…".
func truncate(s string, n int) string {
	if t := truncateChars(s, n); len(t) < len(s) {
		return t + "…"
	}
	return s
}

// errorMessage reads the message of an error answer's body; "" when the
// body is not one.
func errorMessage(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return e.Error.Message
}
