package testsupport

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Process is a server process a test started (redis-server, dynalite):
// its output goes to a log file of its own each start, it is started again
// with the same command by Restart, frozen and let go by Pause and Resume,
// and killed by Kill or when the test ends, whatever happens.
type Process struct {
	t     testing.TB
	name  string        // the program, for messages
	argv  []string      // the command
	ready func() error  // nil once the server answers
	wait  time.Duration // how long Restart waits for ready
	dir   string        // the logs
	cmd   *exec.Cmd
}

// StartProcess runs argv and waits until ready returns nil, for at most
// wait (see Restart); name names the program in messages. The process is
// killed when the test ends.
func StartProcess(t testing.TB, name string, argv []string, ready func() error, wait time.Duration) *Process {
	t.Helper()
	p := &Process{t: t, name: name, argv: argv, ready: ready, wait: wait, dir: t.TempDir()}
	t.Cleanup(p.stop)
	p.Restart()
	return p
}

// FreePort returns a TCP port of 127.0.0.1 that was free a moment ago,
// for a server the test starts on it.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("no free loopback port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Restart starts the process (again, after [Process.Kill]) and waits until
// it answers, failing the test with its log when it does not in time.
func (p *Process) Restart() {
	p.t.Helper()
	if p.cmd != nil {
		p.t.Fatalf("%s: Restart while the server runs; Kill it first", p.name)
	}
	logPath := filepath.Join(p.dir, p.name+"-"+strconv.FormatInt(time.Now().UnixNano(), 10)+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		p.t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile // files: no copying goroutines
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("could not start %s: %v", p.name, err)
	}
	p.cmd = cmd
	deadline := time.Now().Add(p.wait)
	for {
		err := p.ready()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			p.t.Fatalf("%s did not answer within %s (%v); its log:\n%s", p.name, p.wait, err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Pause freezes the server (SIGSTOP): connections are accepted by the
// kernel, nothing is answered.
func (p *Process) Pause() { p.signal(syscall.SIGSTOP) }

// Resume lets a paused server run again (SIGCONT).
func (p *Process) Resume() { p.signal(syscall.SIGCONT) }

// Kill kills the server (SIGKILL) and waits for it to exit: connections
// are refused until [Process.Restart].
func (p *Process) Kill() {
	p.t.Helper()
	p.stop()
}

func (p *Process) signal(sig syscall.Signal) {
	p.t.Helper()
	if p.cmd == nil {
		p.t.Fatalf("%s is not running", p.name)
	}
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.t.Fatalf("could not send %v to %s: %v", sig, p.name, err)
	}
}

// stop kills the process, if it runs, and waits for it (a stopped process
// dies of SIGKILL too).
func (p *Process) stop() {
	if p.cmd != nil {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		p.cmd = nil
	}
}
