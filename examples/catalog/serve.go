package catalog

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// DefaultPort is the port the examples listen on when PORT is not set.
const DefaultPort = "8080"

// The examples' server timeouts: a slow or silent client cannot hold a
// connection open for long. WriteTimeout leaves room for the diagnostics
// deadline (Median waits 8 s) and slow tools.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 15 * time.Second
	WriteTimeout      = 30 * time.Second
	IdleTimeout       = 60 * time.Second
	// ShutdownTimeout bounds how long in-flight requests may finish after
	// SIGINT or SIGTERM.
	ShutdownTimeout = 10 * time.Second
)

// loopbackHost is where the examples listen by default without a key.
const loopbackHost = "127.0.0.1"

// Addr returns the listen address from HOST and PORT (default 8080). Without
// HOST it is 127.0.0.1 when neither MEDIAN_KEY nor a key file is set (a
// development key may only be used on loopback) and every interface
// otherwise.
func Addr() string {
	port := os.Getenv("PORT")
	if port == "" {
		port = DefaultPort
	}
	host, set := os.LookupEnv("HOST")
	if !set {
		host = ""
		if strings.TrimSpace(os.Getenv(KeyEnv)) == "" && !keyFilesSet() {
			host = loopbackHost
		}
	}
	return net.JoinHostPort(host, port)
}

// LoopbackOnly reports whether a server listening on addr is reachable from
// this machine alone: its host is "localhost" or a loopback IP. An empty
// host (every interface), 0.0.0.0, :: or a name is not.
func LoopbackOnly(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Serve runs handler on an http.Server at addr, with the timeouts above,
// until ctx ends or the process receives SIGINT or SIGTERM; then it shuts
// down gracefully, letting requests in flight finish for up to
// ShutdownTimeout. It returns nil after a clean shutdown.
func Serve(ctx context.Context, addr string, handler http.Handler) error {
	srv := NewServer(addr, handler)
	return Run(ctx, func() error {
		if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}, srv.Shutdown)
}

// NewServer returns an http.Server for handler at addr with the examples'
// timeouts set.
func NewServer(addr string, handler http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           handler,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
	}
}

// Run calls serve and waits until it returns, ctx ends, or SIGINT or
// SIGTERM arrives; in the last two cases it calls shutdown with a
// ShutdownTimeout deadline and waits for serve to return. Use it for
// servers that are not an http.Server (fiber's app.Listen and
// app.ShutdownWithContext).
func Run(ctx context.Context, serve func() error, shutdown func(context.Context) error) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- serve() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	stop() // a second signal now ends the process the default way
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	err := shutdown(sctx)
	return errors.Join(err, <-done)
}
