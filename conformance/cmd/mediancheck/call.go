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
	case !protocol.Risk(*risk).Valid():
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

	id := "test_" + uuid()
	conv := *conversation
	if conv == "" {
		conv = id
	}
	visitor := map[string]any{"verified": *verified}
	if *verified && *externalID != "" {
		visitor["externalId"] = *externalID
	}
	if *email != "" {
		visitor["email"] = *email
	}
	if *name != "" {
		visitor["name"] = *name
	}
	ctxObj := map[string]any{"conversationId": conv, "risk": *risk, "visitor": visitor}
	if *approvedBy != "" {
		ctxObj["approvedBy"] = *approvedBy
	}
	body, err := json.Marshal(map[string]any{"tool": *tool, "toolCallId": id, "input": json.RawMessage(*input), "context": ctxObj})
	if err != nil {
		fmt.Fprintf(stderr, "mediancheck call: %v\n", err)
		return exitUsage
	}
	sig, err := protocol.Sign(key, time.Now(), body)
	if err != nil {
		fmt.Fprintf(stderr, "mediancheck call: the key in $%s is not usable: %v\n", *keyEnv, err)
		return exitUsage
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, *url, bytes.NewReader(body))
	if err != nil {
		fmt.Fprintf(stderr, "mediancheck call: %v\n", err)
		return exitUsage
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(protocol.SignatureHeader, sig)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "mediancheck call: %v\n", err)
		return exitFailed
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		fmt.Fprintf(stderr, "mediancheck call: reading the answer: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(stdout, "toolCallId: %s\nHTTP %d %s\n", id, resp.StatusCode, resp.Header.Get("Content-Type"))
	var pretty bytes.Buffer
	if json.Indent(&pretty, answer, "", "  ") == nil {
		fmt.Fprintln(stdout, pretty.String())
	} else {
		fmt.Fprintln(stdout, string(answer))
	}
	var env struct {
		Result json.RawMessage `json:"result"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(answer, &env) != nil || env.Result == nil {
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
