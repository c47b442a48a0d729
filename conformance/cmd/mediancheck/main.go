// Command mediancheck checks a deployed Median tool endpoint against the
// contract, with the cases of package conformance, and sends single signed
// tool calls to it.
//
// Check an endpoint (the key comes from MEDIAN_KEY, or the variable named
// by -key-env):
//
//	go run github.com/median-go/median/conformance/cmd/mediancheck -url https://example.com/api/median
//
// By default only cases that run none of your tools are run, so it is safe
// against production. Give sample calls with -samples FILE.json to run your
// tools too (tools marked sideEffects only with -side-effects). Flags:
//
//	-url URL          the endpoint, mount path included (required)
//	-key-env NAME     the environment variable holding the key (MEDIAN_KEY)
//	-list             list the cases and exit
//	-run REGEXP       run only the cases whose id matches
//	-samples FILE     tool samples: {"tools": [{"tool": "...", "input": {...}}]}
//	-side-effects     also run samples marked sideEffects
//	-skip IDS         comma-separated case ids not to run (known gaps)
//	-replay=false     the endpoint has no replay protection: skip those cases
//	-json FILE        write the report as JSON
//	-junit FILE       write the report as JUnit XML
//	-timeout D        bound each request (15s)
//
// It prints one line per case (PASS, FAIL, SKIP or N/A) and, for each
// failure, what was expected, what came back and a curl command that
// reproduces it; then the tally alone on a line, "N passed, N failed" (with
// ", N skipped" when a case was skipped), and on the next line the cases
// that cannot apply to a deployed endpoint (the key cases, which need to
// rebuild it, and those needing a tool it does not declare). A correct
// endpoint given samples for its tools reaches "N passed, 0 failed". It
// exits 0 when no selected case fails, 1 when one fails, 2 on a usage
// error.
//
// Send one signed tool call and print the answer, then what Median's agent
// gets from it (docs/PROTOCOL.md §11: the text it reads, the widget's
// button and highlight, what it is told):
//
//	mediancheck call -url URL -tool lookup_order -input '{"orderId":"A-1001"}' \
//	    -verified -external-id user_7
//
// The risk defaults to the tool's risk in the signed manifest, approvedBy
// to "A teammate" when that risk is reviewed or high. -id reuses a
// toolCallId: the body is then identical (the toolCallId defaults to
// "test_" and a random UUID, as Median names its test calls, and the
// conversationId to the toolCallId), so a second run shows the replay. -skew 6m
// signs with a clock six minutes ahead, to see the stale signature refused.
// -curl prints a command that sends the same request. call exits 0 on a
// result (a refusal included), 1 on an error answer or an answer outside
// the contract, 2 on a usage error or when no answer came.
//
// Print the tools of the signed manifest with their risks and input
// schemas (exit 0, 1 when the manifest is not usable, 2 without an answer):
//
//	mediancheck manifest -url URL
//
// Ask for the diagnostics report (docs/PROTOCOL.md §10), print it and read
// it: the clock skew ("your server's clock is 6 min ahead of this
// machine's: check NTP on the server"), keys Median no longer signs with,
// a key file or KeySource whose newest read failed, refusals, an
// unreachable store, failing tools. It exits 0 when it finds nothing
// wrong, 1 when it finds a problem or cannot read the answer, 2 on a usage
// error or when no answer came:
//
//	mediancheck diagnostics -url URL
//
// Open the inspector, a local page to list the tools, fill a form built
// from each input schema, send calls and see each answer as the agent
// reads it, replay them, export them as a -samples file, read the
// diagnostics and run this check (docs/INSPECTOR.md):
//
//	mediancheck inspect -url URL [-listen 127.0.0.1:PORT]
//
// It prints the page's URL, with a token for this run: the page signs with
// your key, so it listens on loopback only and refuses requests without
// the token or from another site.
//
// Every request carries User-Agent: mediancheck/<version>.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

// run is the whole command, testable without a process.
func run(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) > 0 {
		switch args[0] {
		case "call":
			return runCall(args[1:], stdout, stderr, getenv)
		case "manifest":
			return runManifest(args[1:], stdout, stderr, getenv)
		case "inspect":
			return runInspect(args[1:], stdout, stderr, getenv)
		case "diagnostics":
			return runDiagnostics(args[1:], stdout, stderr, getenv)
		}
	}
	return runCheck(args, stdout, stderr, getenv)
}

// keyFrom reads the key from the environment variable name.
func keyFrom(getenv func(string) string, name string, stderr io.Writer) (string, bool) {
	key := getenv(name)
	if key == "" {
		fmt.Fprintf(stderr, "mediancheck: %s is not set: export the Median key the endpoint runs with, or name another variable with -key-env\n", name)
		return "", false
	}
	return key, true
}
