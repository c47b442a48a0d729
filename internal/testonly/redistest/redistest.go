// Package redistest finds or starts a Redis server for the module's tests:
// [URL] for tests that need any server (protocol/redisstore, the examples),
// [Start] for tests that freeze or kill their own or read its global
// counters or state (INFO, DBSIZE, KEYS *: on a shared server other tests'
// commands are in them), and [RoundTrips] to count what a client sends.
//
// It is a harness of the module's own tests (internal/testonly): only test
// files and other harnesses import it, never shipped code
// (internal/testonly/surface checks).
package redistest

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/median-go/median/internal/testonly/testsupport"
)

// URLEnv names the environment variable that points the tests at a Redis
// server, e.g. redis://127.0.0.1:6379/0. .ci/run sets it.
const URLEnv = "MEDIAN_TEST_REDIS_URL"

// URL returns the test server's URL: $MEDIAN_TEST_REDIS_URL, else a server
// answering PING on 127.0.0.1:6379 or 127.0.0.1:6399. It skips the test
// when there is none, or fails it when CI=true.
func URL(t testing.TB) string {
	t.Helper()
	if u := os.Getenv(URLEnv); u != "" {
		return u
	}
	for _, port := range []string{"6379", "6399"} {
		addr := "127.0.0.1:" + port
		if ping(addr, 300*time.Millisecond) == nil {
			return "redis://" + addr + "/0"
		}
	}
	missing(t, "no Redis server: start one (redis-server --port 6399) or set "+URLEnv+"=redis://127.0.0.1:6379/0")
	return ""
}

// missing skips the test for want of Redis, or fails it when CI=true.
func missing(t testing.TB, msg string) {
	t.Helper()
	testsupport.Missing(t, "redistest: "+msg)
}

// ping sends PING to a Redis server at addr and expects +PONG.
func ping(addr string, timeout time.Duration) error {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return &net.AddrError{Err: "unexpected answer to PING: " + strings.TrimSpace(line), Addr: addr}
	}
	return nil
}

// Server is a redis-server process a test started on a free loopback port,
// with no persistence (see testsupport.Process for Pause, Resume, Kill and
// Restart). It is killed when the test ends, whatever happens.
type Server struct {
	// Addr is host:port, for redis.Options.Addr.
	Addr string
	*testsupport.Process
}

// Start starts redis-server on a free port of 127.0.0.1 and waits until it
// answers. It skips the test when the redis-server binary is missing
// (.ci/run installs it; apt-get install redis-server), or fails it when
// CI=true.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		missing(t, "redis-server is not installed (apt-get install redis-server): skipping a test that freezes and kills its own server")
	}
	port := strconv.Itoa(testsupport.FreePort(t))
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", port)}
	s.Process = testsupport.StartProcess(t, "redis-server",
		[]string{bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir()},
		func() error { return ping(s.Addr, 200*time.Millisecond) }, 10*time.Second)
	return s
}

// RoundTrips is a go-redis hook that counts the round trips of the client
// it is added to (client.AddHook): one per command, one per pipeline. Read
// the count before and after the calls a test measures.
type RoundTrips struct{ n atomic.Int64 }

var _ redis.Hook = (*RoundTrips)(nil)

// Load returns the round trips counted so far.
func (r *RoundTrips) Load() int64 { return r.n.Load() }

// DialHook implements redis.Hook: dials are not counted.
func (r *RoundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook: each command is one round trip.
func (r *RoundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook: a pipeline is one round trip,
// however many commands it holds.
func (r *RoundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmds)
	}
}
