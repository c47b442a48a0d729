package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/conformance/internal/wire"
)

// runCheck runs the suite against a URL: it reads the flags, builds the
// target, runs the cases, prints the verdicts, writes the reports asked
// for, and exits 1 when a case failed.
func runCheck(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs, ep := newFlagSet("mediancheck", stderr, 15*time.Second, "bound each request")
	f := defineCheckFlags(fs, stderr)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *f.list {
		listCases(stdout)
		return exitOK
	}
	target, ok := f.target(ep, getenv, stderr)
	if !ok {
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := conformance.Check(ctx, target, conformance.Options{Run: *f.run, Timeout: ep.timeout})
	if err != nil {
		fmt.Fprintf(stderr, "mediancheck: %v\n", err)
		return exitUsage
	}
	if len(rep.Verdicts) == 0 {
		fmt.Fprintf(stderr, "mediancheck: -run %q selects no case; see -list\n", *f.run)
		return exitUsage
	}
	printVerdicts(stdout, ep.url, rep)
	if !f.writeReports(rep, stderr) {
		return exitFailed
	}
	return failedCases(stdout, rep)
}

// checkFlags are the flags of the suite's run, beside the endpoint's.
type checkFlags struct {
	list, sideEffects, replay       *bool
	run, samples, skip, json, junit *string
	skew                            *time.Duration
}

// defineCheckFlags defines the suite's flags on fs, and its usage.
func defineCheckFlags(fs *flag.FlagSet, stderr io.Writer) checkFlags {
	f := checkFlags{
		list:        fs.Bool("list", false, "list the cases and exit"),
		run:         fs.String("run", "", "run only the cases whose id matches this regular expression"),
		samples:     fs.String("samples", "", "a JSON file of tool samples; without it no tool is run"),
		skip:        fs.String("skip", "", "comma-separated ids of cases not to run (known gaps); they are reported as skipped"),
		sideEffects: fs.Bool("side-effects", false, "also run samples marked sideEffects"),
		replay:      fs.Bool("replay", true, "the endpoint has replay protection (the library's default)"),
		json:        fs.String("json", "", "write the report as JSON to this file"),
		junit:       fs.String("junit", "", "write the report as JUnit XML to this file"),
		skew:        fs.Duration("clock-skew", 5*time.Second, "margin left for clock skew at the edges of the 5-minute window"),
	}
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mediancheck -url URL [flags]   (key from $MEDIAN_KEY)\n       mediancheck call -url URL -tool NAME -input JSON [flags]\n       mediancheck manifest -url URL\n       mediancheck diagnostics -url URL [-key-env NAME]\n       mediancheck inspect -url URL [-listen 127.0.0.1:PORT]\n(each subcommand takes -h)\n\n")
		fs.PrintDefaults()
	}
	return f
}

// listCases prints every case: id, section, title, and whether it runs a
// tool.
func listCases(stdout io.Writer) {
	for _, c := range conformance.Cases() {
		tag := ""
		if c.RunsTool {
			tag = " [runs a tool when samples are given]"
		}
		fmt.Fprintf(stdout, "%-40s %-6s %s%s\n", c.ID, c.Section, c.Title, tag)
	}
}

// target builds the suite's target from the flags; it reports false, the
// reason written to stderr, when a flag or the key cannot be used.
func (f checkFlags) target(ep *endpointFlags, getenv func(string) string, stderr io.Writer) (conformance.Target, bool) {
	if ep.url == "" {
		fmt.Fprintln(stderr, "mediancheck: -url is required: the endpoint's address with its mount path, e.g. https://example.com/api/median")
		return conformance.Target{}, false
	}
	key, ok := keyFrom(getenv, ep.keyEnv, stderr)
	if !ok {
		return conformance.Target{}, false
	}
	target := conformance.URLTarget(ep.url, key)
	target.UserAgent = wire.UserAgent()
	target.Replay = *f.replay
	target.AllowSideEffects = *f.sideEffects
	target.ClockSkew = *f.skew
	for id := range strings.SplitSeq(*f.skip, ",") {
		if id = strings.TrimSpace(id); id != "" {
			target.Skip = append(target.Skip, id)
		}
	}
	if *f.samples != "" {
		tools, err := readSamplesFile(*f.samples)
		if err != nil {
			fmt.Fprintf(stderr, "mediancheck: %v\n", err)
			return conformance.Target{}, false
		}
		target.Tools = tools
	}
	return target, true
}

// printVerdicts prints each verdict, then the tally and the cases that do
// not apply.
func printVerdicts(stdout io.Writer, url string, rep conformance.Report) {
	for _, v := range rep.Verdicts {
		fmt.Fprintln(stdout, v.String())
	}
	fmt.Fprintf(stdout, "\nchecked %s\n%s\n", url, summary(rep))
	if na := notApplicable(rep); na != "" {
		fmt.Fprintln(stdout, na)
	}
	if count(rep, "fail") > 0 {
		fmt.Fprintln(stdout, "The curl lines carry a signature that expires 5 minutes after the run.")
	}
}

// writeReports writes the JSON and JUnit reports the flags ask for; it
// reports false, the reason written to stderr, when one cannot be written.
func (f checkFlags) writeReports(rep conformance.Report, stderr io.Writer) bool {
	if *f.json != "" {
		if err := writeFile(*f.json, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(rep)
		}); err != nil {
			fmt.Fprintf(stderr, "mediancheck: -json: %v\n", err)
			return false
		}
	}
	if *f.junit != "" {
		if err := writeFile(*f.junit, func(w io.Writer) error { return writeJUnit(w, rep) }); err != nil {
			fmt.Fprintf(stderr, "mediancheck: -junit: %v\n", err)
			return false
		}
	}
	return true
}

// failedCases names the failed cases and returns the exit code: exitFailed
// when a case failed, else exitOK.
func failedCases(stdout io.Writer, rep conformance.Report) int {
	var ids []string
	for _, v := range rep.Verdicts {
		if v.Status == "fail" {
			ids = append(ids, v.ID)
		}
	}
	if len(ids) == 0 {
		return exitOK
	}
	fmt.Fprintf(stdout, "FAILED: %s\n", strings.Join(ids, ", "))
	return exitFailed
}

// summary is the report's tally, alone on its line: "N passed, N failed",
// and ", N skipped" when a case was skipped. Cases that do not apply are
// counted apart (notApplicable).
func summary(rep conformance.Report) string {
	s := fmt.Sprintf("%d passed, %d failed", count(rep, "pass"), count(rep, "fail"))
	if n := count(rep, "skip"); n > 0 {
		s += fmt.Sprintf(", %d skipped", n)
	}
	return s
}

// notApplicable names the cases that do not apply to the target, "" when
// every case applies.
func notApplicable(rep conformance.Report) string {
	var ids []string
	for _, v := range rep.Verdicts {
		if v.Status == "not_applicable" {
			ids = append(ids, v.ID)
		}
	}
	if len(ids) == 0 {
		return ""
	}
	return fmt.Sprintf("%d not applicable to this endpoint: %s", len(ids), strings.Join(ids, ", "))
}

// writeFile creates path and writes it with write.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// count returns how many verdicts of rep have status.
func count(rep conformance.Report, status string) int {
	n := 0
	for _, v := range rep.Verdicts {
		if v.Status == status {
			n++
		}
	}
	return n
}

// readSamplesFile reads tool samples from a JSON file; see
// conformance.ReadSamples for the format.
func readSamplesFile(path string) ([]conformance.ToolSample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	list, err := conformance.ReadSamples(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return list, nil
}
