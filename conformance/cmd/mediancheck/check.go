package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/conformance/internal/wire"
)

// runCheck runs the suite against a URL.
func runCheck(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs, ep := newFlagSet("mediancheck", stderr, 15*time.Second, "bound each request")
	var (
		list        = fs.Bool("list", false, "list the cases and exit")
		runPattern  = fs.String("run", "", "run only the cases whose id matches this regular expression")
		samples     = fs.String("samples", "", "a JSON file of tool samples; without it no tool is run")
		skipIDs     = fs.String("skip", "", "comma-separated ids of cases not to run (known gaps); they are reported as skipped")
		sideEffects = fs.Bool("side-effects", false, "also run samples marked sideEffects")
		replay      = fs.Bool("replay", true, "the endpoint has replay protection (the library's default)")
		jsonOut     = fs.String("json", "", "write the report as JSON to this file")
		junitOut    = fs.String("junit", "", "write the report as JUnit XML to this file")
		skew        = fs.Duration("clock-skew", 5*time.Second, "margin left for clock skew at the edges of the 5-minute window")
	)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mediancheck -url URL [flags]   (key from $MEDIAN_KEY)\n       mediancheck call -url URL -tool NAME -input JSON [flags]\n       mediancheck manifest -url URL\n       mediancheck diagnostics -url URL [-key-env NAME]\n       mediancheck inspect -url URL [-listen 127.0.0.1:PORT]\n(each subcommand takes -h)\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *list {
		for _, c := range conformance.Cases() {
			tag := ""
			if c.RunsTool {
				tag = " [runs a tool when samples are given]"
			}
			fmt.Fprintf(stdout, "%-40s %-6s %s%s\n", c.ID, c.Section, c.Title, tag)
		}
		return exitOK
	}
	if ep.url == "" {
		fmt.Fprintln(stderr, "mediancheck: -url is required: the endpoint's address with its mount path, e.g. https://example.com/api/median")
		return exitUsage
	}
	key, ok := keyFrom(getenv, ep.keyEnv, stderr)
	if !ok {
		return exitUsage
	}
	target := conformance.URLTarget(ep.url, key)
	target.UserAgent = wire.UserAgent()
	target.Replay = *replay
	target.AllowSideEffects = *sideEffects
	target.ClockSkew = *skew
	for id := range strings.SplitSeq(*skipIDs, ",") {
		if id = strings.TrimSpace(id); id != "" {
			target.Skip = append(target.Skip, id)
		}
	}
	if *samples != "" {
		tools, err := readSamplesFile(*samples)
		if err != nil {
			fmt.Fprintf(stderr, "mediancheck: %v\n", err)
			return exitUsage
		}
		target.Tools = tools
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := conformance.Check(ctx, target, conformance.Options{Run: *runPattern, Timeout: ep.timeout})
	if err != nil {
		fmt.Fprintf(stderr, "mediancheck: %v\n", err)
		return exitUsage
	}
	if len(rep.Verdicts) == 0 {
		fmt.Fprintf(stderr, "mediancheck: -run %q selects no case; see -list\n", *runPattern)
		return exitUsage
	}
	for _, v := range rep.Verdicts {
		fmt.Fprintln(stdout, v.String())
	}
	fail := count(rep, "fail")
	fmt.Fprintf(stdout, "\nchecked %s\n%s\n", ep.url, summary(rep))
	if na := notApplicable(rep); na != "" {
		fmt.Fprintln(stdout, na)
	}
	if fail > 0 {
		fmt.Fprintln(stdout, "The curl lines carry a signature that expires 5 minutes after the run.")
	}
	if *jsonOut != "" {
		if err := writeFile(*jsonOut, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(rep)
		}); err != nil {
			fmt.Fprintf(stderr, "mediancheck: -json: %v\n", err)
			return exitFailed
		}
	}
	if *junitOut != "" {
		if err := writeFile(*junitOut, func(w io.Writer) error { return writeJUnit(w, rep) }); err != nil {
			fmt.Fprintf(stderr, "mediancheck: -junit: %v\n", err)
			return exitFailed
		}
	}
	if fail > 0 {
		var ids []string
		for _, v := range rep.Verdicts {
			if v.Status == "fail" {
				ids = append(ids, v.ID)
			}
		}
		fmt.Fprintf(stdout, "FAILED: %s\n", strings.Join(ids, ", "))
		return exitFailed
	}
	return exitOK
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
