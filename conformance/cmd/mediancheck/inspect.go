package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/median-go/median/conformance/cmd/mediancheck/internal/inspector"
)

// interrupted is the context runInspect serves until; tests replace it.
var interrupted = func() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt)
}

// runInspect serves the inspector page on a loopback address until
// interrupted, printing the URL to open (its token included). It exits 2
// on a usage error, such as a -listen that is not a loopback address.
func runInspect(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs, ep := newFlagSet("mediancheck inspect", stderr, 30*time.Second, "bound each request to the endpoint")
	var (
		listen = fs.String("listen", inspector.DefaultListen, "the page's address: 127.0.0.1:PORT (0: a free port); only loopback addresses")
	)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	key, ok := keyFrom(getenv, ep.keyEnv, stderr)
	if !ok {
		return exitUsage
	}
	s, err := inspector.New(inspector.Config{URL: ep.url, Key: key, Timeout: ep.timeout})
	if err != nil {
		fmt.Fprintf(stderr, "mediancheck inspect: %v\n", err)
		return exitUsage
	}
	l, err := inspector.Listen(*listen)
	if err != nil {
		fmt.Fprintf(stderr, "mediancheck inspect: %v\n", err)
		return exitUsage
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := interrupted()
	defer stop()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	fmt.Fprintf(stdout, "inspecting %s\nopen %s\n(the page signs with your key: the link is for you only; Ctrl-C stops it)\n", ep.url, s.PageURL(l.Addr()))
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "mediancheck inspect: %v\n", err)
		return exitFailed
	}
	return exitOK
}
