package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// runManifest asks for the signed manifest and prints each tool with its
// risk, description and input schema. It exits 0 when the manifest lists
// tools, 1 when the answer is not a usable manifest, 2 on a usage error or
// when no answer came.
func runManifest(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs, ep := newFlagSet("mediancheck manifest", stderr, 30*time.Second, "bound the request")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if ep.url == "" {
		fmt.Fprintln(stderr, "mediancheck manifest: -url is required")
		return exitUsage
	}
	client, ok := ep.client(getenv, stderr)
	if !ok {
		return exitUsage
	}
	tools, x, err := client.Manifest(context.Background())
	if err != nil {
		fmt.Fprintf(stderr, "mediancheck manifest: %v\n", err)
		if x.Status == 0 {
			return exitUsage
		}
		return exitFailed
	}
	fmt.Fprintf(stdout, "%d tools at %s\n", len(tools), ep.url)
	for _, t := range tools {
		fmt.Fprintf(stdout, "\n%s (risk %s)\n", t.Name, t.Risk)
		if t.Description != "" {
			fmt.Fprintf(stdout, "  %s\n", t.Description)
		}
		var pretty bytes.Buffer
		if json.Indent(&pretty, t.InputSchema, "  ", "  ") != nil {
			pretty.Reset()
			pretty.Write(t.InputSchema)
		}
		fmt.Fprintf(stdout, "  input schema: %s\n", strings.TrimSpace(pretty.String()))
	}
	return exitOK
}
