// Command medianload runs a bounded load test against a Median tool endpoint
// on this machine: many concurrent clients send signed lookup_order calls
// (unique toolCallIds), refusals (unverified visitor), replays and junk (bad
// signature, stale, bad JSON, unknown tool, PUT, plus signed GETs), and every
// answer is checked against the contract.
//
//	MEDIAN_KEY=... medianload -url http://127.0.0.1:8080/api/median -c 64 -d 15s -n 1000000
//
// It refuses any URL that is not on a loopback address and stops at -n
// requests or after -d, whichever comes first. It exits 1 when any request
// failed, broke the contract or got a 5xx.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"
	"time"

	"github.com/median-go/median/loadtest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "medianload:", err)
		os.Exit(1)
	}
}

func run() error {
	var opts loadtest.Options
	flag.StringVar(&opts.URL, "url", "http://127.0.0.1:8080/api/median", "endpoint URL (loopback only)")
	flag.IntVar(&opts.Concurrency, "c", 64, "concurrent clients")
	flag.IntVar(&opts.Requests, "n", 1_000_000, "maximum number of requests")
	flag.DurationVar(&opts.Duration, "d", 15*time.Second, "maximum duration")
	flag.DurationVar(&opts.Timeout, "timeout", 5*time.Second, "per-request timeout")
	wait := flag.Duration("wait", 0, "wait up to this long for the server to accept connections before starting")
	label := flag.String("label", "", "when set, also print a tab-separated summary line with this label on stdout")
	flag.Parse()
	opts.Key = os.Getenv("MEDIAN_KEY")
	if opts.Key == "" {
		return fmt.Errorf("set %s to the key the server holds", "MEDIAN_KEY")
	}
	if err := loadtest.CheckLoopback(opts.URL); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *wait > 0 {
		if err := waitForServer(ctx, opts.URL, *wait); err != nil {
			return err
		}
	}
	rep, err := loadtest.Run(ctx, opts)
	if err != nil {
		return err
	}
	rep.WriteText(os.Stderr)
	if *label != "" {
		rep.WriteSummary(os.Stdout, *label)
	}
	if rep.Errors() > 0 || rep.ServerErrors > 0 {
		return fmt.Errorf("%d errors, %d 5xx", rep.Errors(), rep.ServerErrors)
	}
	return nil
}

// waitForServer dials the URL's host until it accepts a connection.
func waitForServer(ctx context.Context, rawURL string, limit time.Duration) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	}
	deadline := time.Now().Add(limit)
	for {
		conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
		if err == nil {
			return conn.Close()
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return errors.Join(fmt.Errorf("server at %s did not accept connections within %s", addr, limit), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
