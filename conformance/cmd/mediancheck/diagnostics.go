package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/median-go/median/conformance/internal/wire"
	"github.com/median-go/median/internal/base/wirereport"
	"github.com/median-go/median/protocol"
)

// runDiagnostics asks the endpoint for its diagnostics report
// (docs/PROTOCOL.md §10), prints it, and reads it for a person: the clock,
// keys no longer used, refusals, the store, failing tools. It exits 0 when
// the report shows nothing wrong, 1 when it does or the answer could not be
// read, 2 on a usage error or when no answer came (as call and manifest do).
func runDiagnostics(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs, ep := newFlagSet("mediancheck diagnostics", stderr, 10*time.Second, "bound the request")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if ep.url == "" {
		fmt.Fprintln(stderr, "mediancheck diagnostics: -url is required")
		return exitUsage
	}
	client, ok := ep.client(getenv, stderr)
	if !ok {
		return exitUsage
	}
	x := client.Post(context.Background(), wire.DiagnosticsBody)
	switch {
	case errors.Is(x.Err, wire.ErrBadURL):
		fmt.Fprintf(stderr, "mediancheck diagnostics: %v\n", x.Err)
		return exitUsage
	case x.Status == 0:
		fmt.Fprintf(stderr, "mediancheck diagnostics: the endpoint did not answer: %v\n", x.Err)
		return exitUsage
	case x.Err != nil:
		fmt.Fprintf(stderr, "mediancheck diagnostics: %v\n", x.Err)
		return exitFailed
	}

	fmt.Fprintf(stdout, "HTTP %d %s in %s\n", x.Status, x.ContentType(), x.Elapsed.Round(time.Millisecond))
	printJSON(stdout, x.Answer)
	fmt.Fprintln(stdout)
	findings := readAnswer(x.Status, x.Header.Get("Date"), x.SignedAt, x.Answer, client.Key.Fingerprint(), ep.keyEnv)
	problems := 0
	for _, f := range findings {
		mark := "ok  "
		if f.problem {
			mark, problems = "!!  ", problems+1
		}
		fmt.Fprintln(stdout, mark+f.text)
	}
	if problems > 0 {
		fmt.Fprintf(stdout, "\n%d problem(s) found\n", problems)
		return exitFailed
	}
	fmt.Fprintln(stdout, "\nnothing wrong found")
	return exitOK
}

// finding is one line of the reading.
type finding struct {
	problem bool
	text    string
}

func okf(format string, a ...any) finding      { return finding{false, fmt.Sprintf(format, a...)} }
func problemf(format string, a ...any) finding { return finding{true, fmt.Sprintf(format, a...)} }

// readAnswer reads the endpoint's answer to a diagnostics request sent at
// sent, signed with the key whose fingerprint is fp.
func readAnswer(status int, date string, sent time.Time, body []byte, fp, keyEnv string) []finding {
	var a struct {
		Result json.RawMessage
		Error  *struct{ Code, Message string }
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return []finding{problemf("the answer is not JSON: this is not a Median endpoint, or not at this URL")}
	}
	if a.Error != nil {
		return readError(status, date, sent, a.Error.Code, a.Error.Message, fp, keyEnv)
	}
	var top map[string]json.RawMessage
	_ = json.Unmarshal(a.Result, &top)
	if _, ok := top["service"]; !ok {
		return []finding{okf("the endpoint answers diagnostics with a report of its own (not the one of docs/PROTOCOL.md §10): read it above")}
	}
	var r wirereport.Report
	if err := json.Unmarshal(a.Result, &r); err != nil {
		return []finding{problemf("the report does not have the shape of docs/PROTOCOL.md §10: %v", err)}
	}
	return readReport(r, fp, keyEnv)
}

// readError reads a refused diagnostics request.
func readError(status int, date string, sent time.Time, code, message, fp, keyEnv string) []finding {
	switch protocol.Code(code) {
	case protocol.CodeDiagnosticsUnsupported:
		return []finding{okf("the operator turned the diagnostics report off (diagnostics_unsupported)")}
	case protocol.CodeStaleTimestamp:
		out := []finding{problemf("the endpoint refused the request as stale_timestamp: its clock and this machine's are more than 5 min apart, so it refuses every call from Median too")}
		if at, err := http.ParseTime(date); err == nil {
			// Date has whole seconds: a second of slack.
			if skew := at.Sub(sent); skew.Abs() >= skewWarn {
				out = append(out, problemf("by its Date header, %s", clockSentence(skew.Milliseconds())))
			} else {
				out = append(out, problemf("its Date header agrees with this machine's clock: check the clock of the instance that answered, or the Config.Now it runs with"))
			}
		}
		return out
	case protocol.CodeInvalidSignature:
		return []finding{problemf("the endpoint does not hold the key in $%s (%s): it refused the request as invalid_signature; compare the fingerprints in your deployment's log", keyEnv, fp)}
	case protocol.CodeMissingSecret, protocol.CodeInvalidMedianKey:
		return []finding{problemf("the endpoint has no usable key (%s, HTTP %d): %s", code, status, message)}
	}
	return []finding{problemf("the endpoint answered HTTP %d %s: %s", status, code, message)}
}

// clockSentence says what a skew (server clock minus this machine's, in
// ms) means for a person.
func clockSentence(skewMs int64) string {
	if skewMs < 0 {
		return fmt.Sprintf("your server's clock is %s behind this machine's: check NTP on the server", humanMs(-skewMs))
	}
	return fmt.Sprintf("your server's clock is %s ahead of this machine's: check NTP on the server", humanMs(skewMs))
}

// humanMs formats a duration for a sentence: "6 min", "1 min 30 s", "2.5 s".
func humanMs(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d%time.Minute < time.Second:
		return fmt.Sprintf("%d min", d/time.Minute)
	default:
		return fmt.Sprintf("%d min %d s", d/time.Minute, (d%time.Minute)/time.Second)
	}
}

// skewWarn is the clock skew from which the reading warns: a request's
// transit is in the skew too, so a few hundred ms are nothing.
const skewWarn = 2 * time.Second

// stale is how long since a key's last verified request before the
// reading calls the key unused.
const stale = 24 * time.Hour

// readReport reads a §10 report for a person, section by section.
func readReport(r wirereport.Report, fp, keyEnv string) []finding {
	now, _ := time.Parse(time.RFC3339, r.Service.Now)
	return slices.Concat(
		[]finding{okf("%s (%s), up %s", r.Service.Library, r.Service.Go, r.Service.Uptime)},
		readClock(r),
		readKeys(r, now, fp, keyEnv),
		readRefused(r),
		readStore(r),
		readManifest(r),
		readTools(r),
		readOmitted(r),
	)
}

// readClock reads clock.skewMs, when the report has it.
func readClock(r wirereport.Report) []finding {
	if r.Clock.SkewMs == nil {
		return nil
	}
	skew := *r.Clock.SkewMs
	if time.Duration(abs(skew))*time.Millisecond >= skewWarn {
		return []finding{problemf("%s (clock.skewMs %d; beyond 5 min every call is refused stale_timestamp)", clockSentence(skew), skew)}
	}
	return []finding{okf("clocks agree (clock.skewMs %d)", skew)}
}

// readKeys reads the keys in force, each against the service's clock now,
// and the newest failed read of the keys; fp is the fingerprint of the
// key in $keyEnv, which signed the request.
func readKeys(r wirereport.Report, now time.Time, fp, keyEnv string) []finding {
	var out []finding
	signing := false
	for i, k := range r.Keys {
		which := fmt.Sprintf("key %d of %d (%s)", i+1, len(r.Keys), k.Fingerprint)
		if k.Fingerprint == fp {
			which += ", the one in $" + keyEnv
			signing = true
		}
		last, err := time.Parse(time.RFC3339, k.LastVerified)
		switch {
		case k.Verified == 0:
			out = append(out, problemf("%s has verified no request since the server started: Median does not sign with it; if it is the retired key, remove it", which))
		case err == nil && !now.IsZero() && now.Sub(last) > stale:
			out = append(out, problemf("%s last verified a request %s ago: Median seems to have stopped using it; if it is the retired key, remove it", which, now.Sub(last).Round(time.Minute)))
		default:
			out = append(out, okf("%s, verified %d requests, the last at %s", which, k.Verified, k.LastVerified))
		}
	}
	if !signing && len(r.Keys) > 0 {
		out = append(out, problemf("the key in $%s (%s) is not among the keys in force, though the request verified", keyEnv, fp))
	}
	if k := r.KeyRead; k != nil {
		out = append(out, problemf("the newest read of %s, at %s, gave no usable key (%s): the keys above stay in force until a read gives one; the server's log says what is wrong", k.Source, k.At, k.Code))
	}
	return out
}

// readRefused reads the refusals, by code.
func readRefused(r wirereport.Report) []finding {
	var out []finding
	for _, c := range slices.Sorted(maps.Keys(r.Refused)) {
		e := r.Refused[c]
		line := fmt.Sprintf("%d request(s) refused %s, the last at %s", e.Count, c, e.Last)
		switch protocol.Code(c) {
		case protocol.CodeStaleTimestamp:
			if e.MaxSkewMs != nil {
				line += fmt.Sprintf("; the furthest t was %s (maxSkewMs %d)", pastOrFuture(*e.MaxSkewMs), *e.MaxSkewMs)
			}
			out = append(out, problemf("%s: a sender's clock and the server's disagree, or requests are replayed late", line))
		case protocol.CodeInvalidSignature:
			out = append(out, problemf("%s: something signs with a key this server does not hold (a rotation Median has made and the server not yet, or a client that is not Median)", line))
		case protocol.CodeMissingSecret, protocol.CodeInvalidMedianKey:
			out = append(out, problemf("%s: the server ran without a usable key", line))
		default:
			out = append(out, okf("%s", line))
		}
	}
	return out
}

// readStore reads the replay store: whether it answers, and the calls it
// cost.
func readStore(r wirereport.Report) []finding {
	var out []finding
	s := r.Store
	switch {
	case s.Kind == "none":
		out = append(out, problemf("replay protection is off (store.kind none): a captured call can run its tool again for 5 minutes"))
	case s.Reachable == nil:
		out = append(out, okf("the replay store (%s) cannot be probed", s.Kind))
	case !*s.Reachable:
		out = append(out, problemf("the replay store (%s) is unreachable: tool calls are answered execution_failed without running (read-only tools excepted); its error is in the server's log", s.Kind))
	default:
		out = append(out, okf("the replay store (%s) answers in %d ms", s.Kind, s.LatencyMs))
	}
	if s.ClaimFailures > 0 {
		out = append(out, problemf("%d call(s) were not run because the store could not record them (store.claimFailures)", s.ClaimFailures))
	}
	if s.EvictedEarly > 0 {
		out = append(out, problemf("%d answer(s) were dropped before their time (store.evictedEarly): their calls could run again; raise Config.ReplayMaxBytes or use a shared store", s.EvictedEarly))
	}
	if s.ReadOnlyRuns > 0 {
		out = append(out, problemf("%d read-only tool call(s) ran while the store was out (store.readOnlyRuns)", s.ReadOnlyRuns))
	}
	return out
}

// readManifest reads the manifest's size, hash and last fetch.
func readManifest(r wirereport.Report) []finding {
	m := r.Manifest
	if m.LastServed == "" {
		return []finding{okf("the manifest (%d tools, sha256 %s) has not been fetched by a signed GET since the server started", m.Tools, short(m.SHA256))}
	}
	return []finding{okf("the manifest (%d tools, sha256 %s) was last fetched at %s", m.Tools, short(m.SHA256), m.LastServed)}
}

// readTools reads each tool's calls, by name.
func readTools(r wirereport.Report) []finding {
	var out []finding
	for _, n := range slices.Sorted(maps.Keys(r.Tools)) {
		t := r.Tools[n]
		if t.OffContract > 0 {
			out = append(out, problemf("tool %s: %d of %d call(s) were answered by the server's own handlers with a response they wrote themselves (offContract), which Median's agent reads as the tool not answering when its status is not 2xx (PROTOCOL.md §11): answer with Respond, and refuse with protocol.Refuse", n, t.OffContract, t.Calls))
		}
		bad := t.Failed + t.InvalidInput
		if bad == 0 {
			if t.OffContract == 0 {
				out = append(out, okf("tool %s: %d call(s), none failed (p50 %d ms, p99 %d ms)", n, t.Calls, t.P50Ms, t.P99Ms))
			}
			continue
		}
		line := fmt.Sprintf("tool %s: %d of %d call(s) failed (%d execution_failed, %d invalid_input)", n, bad, t.Calls, t.Failed, t.InvalidInput)
		if f := t.LastFailure; f != nil {
			line += fmt.Sprintf("; the last, at %s, %s: %q", f.At, f.Code, f.Message)
		}
		out = append(out, problemf("%s", line))
	}
	return out
}

// readOmitted reads how many entries the report left out, when it left
// some out.
func readOmitted(r wirereport.Report) []finding {
	if r.Omitted <= 0 {
		return nil
	}
	return []finding{okf("%d entries were left out to fit 2,000 characters; the app has them all (Handler.Report)", r.Omitted)}
}

// pastOrFuture says where a stale t was: the skew is server clock minus t.
func pastOrFuture(skewMs int64) string {
	if skewMs < 0 {
		return humanMs(-skewMs) + " in the future"
	}
	return humanMs(skewMs) + " in the past"
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12] + "…"
	}
	return sum
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
