package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/protocol"
)

// runCall sends one signed tool call and prints the answer.
func runCall(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("mediancheck call", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		url          = fs.String("url", "", "the endpoint's URL, mount path included (required)")
		keyEnv       = fs.String("key-env", "MEDIAN_KEY", "the environment variable holding the Median key")
		tool         = fs.String("tool", "", "the tool's name (required)")
		input        = fs.String("input", "{}", "the tool's input, a JSON object")
		verified     = fs.Bool("verified", false, "the visitor is verified")
		externalID   = fs.String("external-id", "", "the visitor's externalId (sent only with -verified)")
		email        = fs.String("email", "", "the visitor's (unverified) email")
		name         = fs.String("name", "", "the visitor's (unverified) name")
		risk         = fs.String("risk", "low", "the call's risk: low, medium, reviewed or high")
		approvedBy   = fs.String("approved-by", "A test from the CLI", "who approved the call; empty to omit")
		conversation = fs.String("conversation", "", "the conversationId (default: the toolCallId)")
		timeout      = fs.Duration("timeout", 30*time.Second, "bound the request")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	switch {
	case *url == "":
		fmt.Fprintln(stderr, "mediancheck call: -url is required")
		return exitUsage
	case *tool == "":
		fmt.Fprintln(stderr, "mediancheck call: -tool is required")
		return exitUsage
	case !validRisk(*risk):
		fmt.Fprintf(stderr, "mediancheck call: -risk %q is not one of low, medium, reviewed, high\n", *risk)
		return exitUsage
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "mediancheck call: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(*input), &obj); err != nil || obj == nil {
		fmt.Fprintf(stderr, "mediancheck call: -input must be a JSON object: %s\n", *input)
		return exitUsage
	}
	key, ok := keyFrom(getenv, *keyEnv, stderr)
	if !ok {
		return exitUsage
	}
	if _, err := protocol.ParseKey(key); err != nil {
		fmt.Fprintf(stderr, "mediancheck call: the key in $%s is not usable: %v\n", *keyEnv, err)
		return exitUsage
	}

	id := "test_" + uuid()
	conv := *conversation
	if conv == "" {
		conv = id
	}
	visitor := conformance.Visitor{Verified: *verified, Email: *email, Name: *name}
	if *verified {
		visitor.ExternalID = *externalID
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	r, err := conformance.Call[json.RawMessage](ctx, conformance.URLTarget(*url, key), conformance.ToolSample{
		Tool: *tool, Input: json.RawMessage(*input), ToolCallID: id, ConversationID: conv,
		Risk: *risk, ApprovedBy: *approvedBy, Unapproved: *approvedBy == "", Visitor: visitor,
	})
	if r.Status == 0 {
		fmt.Fprintf(stderr, "mediancheck call: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(stdout, "toolCallId: %s\nHTTP %d %s\n", id, r.Status, r.Header.Get("Content-Type"))
	var pretty bytes.Buffer
	if json.Indent(&pretty, r.Raw, "", "  ") == nil {
		fmt.Fprintln(stdout, pretty.String())
	} else {
		fmt.Fprintln(stdout, string(r.Raw))
	}
	if err != nil {
		fmt.Fprintf(stderr, "mediancheck call: %v\n", err)
		return exitFailed
	}
	if r.Error != nil || r.Status != http.StatusOK {
		return exitFailed
	}
	return exitOK
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
