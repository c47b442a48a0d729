package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/median-go/median/conformance/internal/wire"
	"github.com/median-go/median/protocol"
)

// endpointFlags are the flags every subcommand that talks to an endpoint
// shares: -url, -key-env and -timeout.
type endpointFlags struct {
	cmd     string // the subcommand's name in messages, "mediancheck call"
	url     string
	keyEnv  string
	timeout time.Duration
}

// newFlagSet returns the flag set of cmd, writing its messages to stderr,
// with the shared endpoint flags declared: -timeout defaults to timeout
// and is described by timeoutUsage.
func newFlagSet(cmd string, stderr io.Writer, timeout time.Duration, timeoutUsage string) (*flag.FlagSet, *endpointFlags) {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	e := &endpointFlags{cmd: cmd}
	fs.StringVar(&e.url, "url", "", "the endpoint's URL, mount path included (required)")
	fs.StringVar(&e.keyEnv, "key-env", "MEDIAN_KEY", "the environment variable holding the Median key")
	fs.DurationVar(&e.timeout, "timeout", timeout, timeoutUsage)
	return fs, e
}

// parseFlags parses args into fs. When the command must stop there, it
// returns the exit code and false: 0 after -h, 2 after a bad flag (the
// flag package has said what is wrong) or an argument that is not a flag
// (it says so).
func parseFlags(fs *flag.FlagSet, args []string) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected argument %q (%s takes flags only; -h lists them)\n", fs.Name(), fs.Arg(0), fs.Name())
		return exitUsage, false
	}
	return 0, true
}

// key returns the Median key in $keyEnv, parsed; false after saying on
// stderr why there is none.
func (e *endpointFlags) key(getenv func(string) string, stderr io.Writer) (protocol.Key, bool) {
	raw, ok := keyFrom(getenv, e.keyEnv, stderr)
	if !ok {
		return protocol.Key{}, false
	}
	k, err := protocol.ParseKey(raw)
	if err != nil {
		fmt.Fprintf(stderr, "%s: the key in $%s is not usable: %v\n", e.cmd, e.keyEnv, err)
		return protocol.Key{}, false
	}
	return k, true
}

// client returns a client signing with the key in $keyEnv, bounded by
// -timeout; false after saying on stderr why there is no key.
func (e *endpointFlags) client(getenv func(string) string, stderr io.Writer) (*wire.Client, bool) {
	k, ok := e.key(getenv, stderr)
	if !ok {
		return nil, false
	}
	return &wire.Client{URL: e.url, Key: k, Timeout: e.timeout}, true
}
