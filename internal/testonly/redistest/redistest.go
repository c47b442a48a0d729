// Package redistest finds or starts a Redis server for the module's tests:
// [URL] for tests that need any server (protocol/redisstore, the examples),
// [Start] for tests that freeze or kill their own, and [RoundTrips] to
// count what a client sends.
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
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
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
// with no persistence. It is killed when the test ends, whatever happens.
type Server struct {
	// Addr is host:port, for redis.Options.Addr.
	Addr string

	t   testing.TB
	bin string
	dir string
	cmd *exec.Cmd
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("no free loopback port: %v", err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	s := &Server{Addr: addr, t: t, bin: bin, dir: t.TempDir()}
	t.Cleanup(s.stop)
	s.Restart()
	return s
}

// Restart starts the server again on the same port, after [Server.Kill].
func (s *Server) Restart() {
	s.t.Helper()
	if s.cmd != nil {
		s.t.Fatal("redistest: Restart while the server runs; Kill it first")
	}
	_, port, _ := net.SplitHostPort(s.Addr)
	logFile, err := os.Create(filepath.Join(s.dir, "redis-"+strconv.FormatInt(time.Now().UnixNano(), 10)+".log"))
	if err != nil {
		s.t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(s.bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", s.dir)
	cmd.Stdout, cmd.Stderr = logFile, logFile // files: no copying goroutines
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("redistest: could not start redis-server: %v", err)
	}
	s.cmd = cmd
	deadline := time.Now().Add(10 * time.Second)
	for ping(s.Addr, 200*time.Millisecond) != nil {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logFile.Name())
			s.t.Fatalf("redistest: redis-server on %s did not answer within 10s; its log:\n%s", s.Addr, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Pause freezes the server (SIGSTOP): connections are accepted by the
// kernel, nothing is answered.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume lets a paused server run again (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

// Kill kills the server (SIGKILL) and waits for it to exit: connections
// are refused until [Server.Restart].
func (s *Server) Kill() {
	s.t.Helper()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

func (s *Server) signal(sig syscall.Signal) {
	s.t.Helper()
	if s.cmd == nil {
		s.t.Fatal("redistest: the server is not running")
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("redistest: could not send %v to redis-server: %v", sig, err)
	}
}

// stop kills the server when the test ends (a stopped process dies of
// SIGKILL too).
func (s *Server) stop() {
	if s.cmd != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
		s.cmd = nil
	}
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
