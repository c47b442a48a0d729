package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/median-go/median/conformance/agent"
	"github.com/median-go/median/conformance/internal/wire"
	"github.com/median-go/median/protocol"
)

// runCall sends one signed tool call and prints the answer, then what the
// agent gets from it. It exits 0 on a result (a refusal included), 1 on an
// error answer or one outside the contract, 2 on a usage error or when no
// answer came.
func runCall(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs, ep := newFlagSet("mediancheck call", stderr, 30*time.Second, "bound each request")
	var (
		tool         = fs.String("tool", "", "the tool's name (required)")
		input        = fs.String("input", "{}", "the tool's input, a JSON object")
		verified     = fs.Bool("verified", false, "the visitor is verified")
		externalID   = fs.String("external-id", "", "the visitor's externalId (sent only with -verified)")
		email        = fs.String("email", "", "the visitor's (unverified) email")
		name         = fs.String("name", "", "the visitor's (unverified) name")
		risk         = fs.String("risk", "", "the call's risk: low, medium, reviewed or high (default: the tool's risk in the signed manifest)")
		approvedBy   = optional{value: ""}
		conversation = fs.String("conversation", "", "the conversationId (default: the toolCallId)")
		id           = fs.String("id", "", "the toolCallId; give an earlier call's to send the identical body again (a replay)")
		skew         = fs.Duration("skew", 0, "sign with a clock this far off (6m: ahead, -6m: behind), to see a stale signature refused")
		curl         = fs.Bool("curl", false, "print a curl command that sends the same request")
	)
	fs.Var(&approvedBy, "approved-by", `who approved the call (default: "A teammate" when the risk is reviewed or high, else none; "" sends none)`)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	switch {
	case ep.url == "":
		fmt.Fprintln(stderr, "mediancheck call: -url is required")
		return exitUsage
	case *tool == "":
		fmt.Fprintln(stderr, "mediancheck call: -tool is required")
		return exitUsage
	case *risk != "" && !validRisk(*risk):
		fmt.Fprintf(stderr, "mediancheck call: -risk %q is not one of low, medium, reviewed, high\n", *risk)
		return exitUsage
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(*input), &obj); err != nil || obj == nil {
		fmt.Fprintf(stderr, "mediancheck call: -input must be a JSON object: %s\n", *input)
		return exitUsage
	}
	client, ok := ep.client(getenv, stderr)
	if !ok {
		return exitUsage
	}
	client.Skew = *skew
	ctx := context.Background()

	p := wire.Persona{Risk: *risk, Verified: *verified, Email: *email, Name: *name, ConversationID: *conversation}
	if *verified {
		p.ExternalID = *externalID
	}
	declared := "low"
	if p.Risk == "" {
		tools, _, err := client.Manifest(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "mediancheck call: the manifest gives no risk for %s (%v): sending risk low\n", *tool, err)
		}
		declared = wire.DeclaredRisk(tools, *tool)
	}
	p.ApprovedBy, p.Unapproved = approvedBy.value, approvedBy.set && approvedBy.value == ""
	p = p.Approve(declared)
	if *id == "" {
		*id = "test_" + uuid() // as Median's own test calls are named
	}
	body, err := wire.CallBody(*tool, *id, json.RawMessage(*input), p)
	if err != nil {
		fmt.Fprintf(stderr, "mediancheck call: %v\n", err)
		return exitUsage
	}
	x := client.Post(ctx, body)
	fmt.Fprintf(stdout, "POST %s\ntoolCallId: %s (risk %s)\n", x.URL, *id, p.Risk)
	if *skew != 0 {
		fmt.Fprintf(stdout, "signed at %s (the clock shifted by %s)\n", x.SignedAt.UTC().Format(time.RFC3339), *skew)
	}
	if *curl {
		fmt.Fprintf(stdout, "reproduce (the signature expires 5 minutes after it was made):\n  %s\n", x.Curl())
	}
	if x.Status == 0 {
		fmt.Fprintf(stderr, "mediancheck call: no answer: %v\n", x.Err)
		return exitUsage
	}
	printAnswer(stdout, x)
	v := agent.Of(x.Status, x.ContentType(), x.Answer)
	printView(stdout, v)
	if x.Err != nil {
		fmt.Fprintf(stderr, "mediancheck call: %v\n", x.Err)
	}
	if v.Told == agent.ToldResult {
		return exitOK
	}
	return exitFailed
}

// optional is a string flag that knows whether it was given.
type optional struct {
	value string
	set   bool
}

func (o *optional) String() string     { return o.value }
func (o *optional) Set(s string) error { o.value, o.set = s, true; return nil }

// printAnswer prints the status, timing and body of x, JSON indented.
func printAnswer(w io.Writer, x wire.Exchange) {
	fmt.Fprintf(w, "HTTP %d %s (%s)\n", x.Status, x.ContentType(), x.Elapsed.Round(100*time.Microsecond))
	printJSON(w, x.Answer)
}

// printJSON prints answer indented when it is JSON, as it is when not.
func printJSON(w io.Writer, answer []byte) {
	var pretty bytes.Buffer
	if json.Indent(&pretty, answer, "", "  ") == nil {
		fmt.Fprintln(w, pretty.String())
	} else {
		fmt.Fprintln(w, string(answer))
	}
}

// told says in words what the agent is told.
var told = map[agent.Told]string{
	agent.ToldResult:       "it reads the result",
	agent.ToldFixInput:     "fix your input (it may call again); it reads the message",
	agent.ToldDoNotRetry:   "do not retry; it reads the message",
	agent.ToldNotAnswering: "the tool is not answering; it reads nothing of the answer",
	agent.ToldDiagnostics:  "Median keeps the first 2,000 characters",
	agent.ToldOutside:      "nothing defined: the answer is outside the contract",
}

// printView prints what the agent gets.
func printView(w io.Writer, v agent.View) {
	fmt.Fprintln(w, "\nwhat the agent gets (docs/PROTOCOL.md §11):")
	what := told[v.Told]
	if v.Refusal {
		what += " (a refusal)"
	}
	fmt.Fprintf(w, "  told:      %s\n", what)
	if v.Problem != "" {
		fmt.Fprintf(w, "  problem:   %s\n", v.Problem)
	}
	if v.Text != "" {
		fmt.Fprintf(w, "  reads:     %s\n", strings.ReplaceAll(v.Text, "\n", "\n             "))
	}
	if v.Button != "" {
		fmt.Fprintf(w, "  button:    a link to %s\n", v.Button)
	}
	if v.Highlight != "" {
		fmt.Fprintf(w, "  highlight: %s\n", v.Highlight)
	}
	for _, n := range v.Notes {
		fmt.Fprintf(w, "  note:      %s\n", n)
	}
}

// uuid returns a random version-4 UUID.
func uuid() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// validRisk reports whether risk is one of the contract's four levels.
func validRisk(risk string) bool {
	switch protocol.Risk(risk) {
	case protocol.RiskLow, protocol.RiskMedium, protocol.RiskReviewed, protocol.RiskHigh:
		return true
	}
	return false
}
