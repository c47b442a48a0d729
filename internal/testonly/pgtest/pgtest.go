// Package pgtest starts a PostgreSQL server of its own for the module's
// tests (protocol/pgstore, the examples): initdb into a temporary
// directory, a free port of 127.0.0.1, a Unix socket in that directory, run
// as an unprivileged user when the tests run as root (PostgreSQL refuses to
// run as root), and stopped by PID when the test ends. Tests can pause,
// kill and restart it.
//
// Where PostgreSQL is not installed the test is skipped with the install
// line (apt-get install postgresql); when CI=true it fails instead, so a
// CI machine without it cannot pass by skipping.
//
// It is a harness of the module's own tests (internal/testonly): only test
// files and other harnesses import it, never shipped code
// (internal/testonly/surface checks).
package pgtest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/median-go/median/internal/testonly/testsupport"
)

// installLine is what to run when PostgreSQL is missing.
const installLine = "apt-get install postgresql"

// runAs is the unprivileged user the server runs as when the tests run as
// root.
const runAs = "nobody"

// Server is a PostgreSQL server a test started. It is killed, with every
// process it started, when the test ends, whatever happens.
type Server struct {
	// URL is a postgres:// URL of the server's postgres database, as the
	// superuser postgres (trust authentication, loopback only).
	URL string
	// Port is the server's TCP port on 127.0.0.1.
	Port int

	t    testing.TB
	bin  string // the directory holding initdb and postgres
	dir  string // data directory, socket and log
	cred *syscall.Credential
	cmd  *exec.Cmd
}

// missing skips the test with the install line, or fails it when CI=true.
func missing(t testing.TB, what string) {
	t.Helper()
	testsupport.Missing(t, "pgtest: "+what+" ("+installLine+")")
}

// binDir returns the bin directory of the newest PostgreSQL installed
// under /usr/lib/postgresql (Debian's layout), or the directory of an
// initdb on PATH, or "".
func binDir() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if isFile(filepath.Join(d, "initdb")) && isFile(filepath.Join(d, "postgres")) {
			return d
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil && isFile(filepath.Join(filepath.Dir(p), "postgres")) {
		return filepath.Dir(p)
	}
	return ""
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// Start runs initdb into a new temporary directory and starts the server
// on a free port of 127.0.0.1, then waits until it accepts connections.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := binDir()
	if bin == "" {
		missing(t, "PostgreSQL is not installed (no initdb and postgres under /usr/lib/postgresql/*/bin or on PATH)")
	}
	s := &Server{t: t, bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup(runAs)
		if err != nil {
			t.Fatalf("pgtest: PostgreSQL refuses to run as root and there is no %q user to run it as: %v", runAs, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	// Not t.TempDir: its parent directories are closed to other users.
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	s.dir = dir
	t.Cleanup(func() {
		s.stop()
		_ = os.RemoveAll(dir)
	})
	if s.cred != nil {
		if err := os.Chown(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := s.command(filepath.Join(bin, "initdb"), "-D", s.dataDir(), "-U", "postgres",
		"--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions").CombinedOutput()
	if err != nil {
		t.Fatalf("pgtest: initdb failed: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pgtest: no free loopback port: %v", err)
	}
	s.Port = l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	s.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.Port)
	s.Restart()
	return s
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }

// command builds a command that runs as the server's user.
func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = s.dir
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return cmd
}

// Restart starts the server (again, after [Server.Kill]) on the same port
// and data directory, and waits until it accepts connections.
func (s *Server) Restart() {
	s.t.Helper()
	if s.cmd != nil {
		s.t.Fatal("pgtest: Restart while the server runs; Kill it first")
	}
	logPath := filepath.Join(s.dir, "postgres-"+strconv.FormatInt(time.Now().UnixNano(), 10)+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		s.t.Fatal(err)
	}
	defer logFile.Close()
	if s.cred != nil {
		_ = logFile.Chown(int(s.cred.Uid), int(s.cred.Gid))
	}
	// fsync=off and full_page_writes=off only matter when the machine
	// itself crashes. synchronous_commit stays on: the tests kill the
	// server with SIGKILL, and with it off a commit acknowledged within the
	// last ~200 ms could be lost with the server's WAL buffers, which is
	// what the crash tests must never see.
	cmd := s.command(filepath.Join(s.bin, "postgres"), "-D", s.dataDir(), "-p", strconv.Itoa(s.Port),
		"-k", s.dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
		"-c", "full_page_writes=off", "-c", "max_connections=100",
		"-c", "shared_buffers=32MB", "-c", "log_min_messages=warning")
	cmd.Stdout, cmd.Stderr = logFile, logFile // files: no copying goroutines
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("pgtest: could not start postgres: %v", err)
	}
	s.cmd = cmd
	deadline := time.Now().Add(20 * time.Second)
	for !s.ready() {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			s.t.Fatalf("pgtest: postgres on port %d did not accept connections within 20s; its log:\n%s", s.Port, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ready reports whether the server answers pg_isready.
func (s *Server) ready() bool {
	cmd := exec.Command(filepath.Join(s.bin, "pg_isready"), "-h", "127.0.0.1", "-p", strconv.Itoa(s.Port), "-U", "postgres", "-t", "1")
	return cmd.Run() == nil
}

// Pids returns the postmaster's PID followed by those of its children (the
// backends and background workers); empty when the server is not running.
func (s *Server) Pids() []int {
	if s.cmd == nil {
		return nil
	}
	pm := s.cmd.Process.Pid
	return append([]int{pm}, children(pm)...)
}

// children returns the PIDs whose parent is pid, read from /proc.
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after
		// its closing parenthesis.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

// Pause freezes the server: SIGSTOP to the postmaster and to every one of
// its children. Each backend leads its own process group, so signalling the
// postmaster's group would leave them running. Connections are still
// accepted by the kernel; nothing is answered.
func (s *Server) Pause() { s.signalAll(syscall.SIGSTOP) }

// Resume lets a paused server run again (SIGCONT to every process).
func (s *Server) Resume() { s.signalAll(syscall.SIGCONT) }

func (s *Server) signalAll(sig syscall.Signal) {
	s.t.Helper()
	pids := s.Pids()
	if len(pids) == 0 {
		s.t.Fatal("pgtest: the server is not running")
	}
	for _, p := range pids {
		if err := syscall.Kill(p, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			s.t.Fatalf("pgtest: could not send %v to process %d: %v", sig, p, err)
		}
	}
}

// Kill kills the server with SIGKILL, the postmaster and every child, and
// waits until they are gone: connections are refused until
// [Server.Restart], which recovers the data directory as after a crash.
func (s *Server) Kill() {
	s.t.Helper()
	if s.cmd == nil {
		return
	}
	pids := s.Pids()
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	_ = s.cmd.Wait()
	s.cmd = nil
	// The children were re-parented on the postmaster's death; wait until
	// they are gone too, or a restart finds their shared memory in use.
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range pids[1:] {
		for syscall.Kill(p, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// stop ends the server when the test ends: SIGCONT (a paused server cannot
// act on SIGTERM), SIGTERM for a fast shutdown, SIGKILL to every process
// after 5 seconds.
func (s *Server) stop() {
	if s.cmd == nil {
		return
	}
	pids := s.Pids()
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGCONT)
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		_ = s.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		<-done
	}
	s.cmd = nil
}
