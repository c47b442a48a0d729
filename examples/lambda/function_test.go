package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/median-go/median/internal/testonly/testsupport"
)

// What the test's Lambda environment is called.
const (
	functionName = "median-tools"
	testRegion   = "us-east-1"
	// functionTimeout is the function's timeout, as template.yaml sets it:
	// the deadline of every invocation.
	functionTimeout = 10 * time.Second
)

// buildFlags are the flags README.md gives for the bootstrap binary.
var buildFlags = []string{"build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w"}

// buildDir holds the binaries built for this test run (TestMain).
var buildDir string

var builds sync.Map // "goos/goarch" -> *build

type build struct {
	once sync.Once
	path string
	err  error
}

// bootstrap builds the example as README.md says, for linux/goarch, once
// per test run, and returns the binary's path.
func bootstrap(t testing.TB, goarch string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the bootstrap binary with the go command")
	}
	v, _ := builds.LoadOrStore(goarch, &build{})
	b := v.(*build)
	b.once.Do(func() {
		b.path = filepath.Join(buildDir, "linux_"+goarch, "bootstrap")
		cmd := exec.Command("go", append(buildFlags, "-o", b.path, ".")...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build for linux/%s: %v\n%s", goarch, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// function is one run of the bootstrap binary as a Lambda instance runs
// it: its own Runtime API, the environment Lambda sets, and its log.
type function struct {
	rt    *runtimeAPI
	cmd   *exec.Cmd
	gone  chan struct{} // closed when the process has exited
	err   error         // its exit status, once gone is closed
	log   *testsupport.Buffer
	start time.Time
}

// lambdaEnv is the environment Lambda gives a function's process
// (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html),
// nothing of the test's own: the binary sees what it would see on Lambda.
func lambdaEnv(runtimeAddr string) []string {
	return []string{
		"AWS_LAMBDA_RUNTIME_API=" + runtimeAddr,
		"AWS_LAMBDA_FUNCTION_NAME=" + functionName,
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256",
		"AWS_LAMBDA_LOG_GROUP_NAME=/aws/lambda/" + functionName,
		"AWS_LAMBDA_LOG_STREAM_NAME=2026/12/03/[$LATEST]0123456789abcdef0123456789abcdef",
		"AWS_LAMBDA_INITIALIZATION_TYPE=on-demand",
		"AWS_REGION=" + testRegion,
		"AWS_DEFAULT_REGION=" + testRegion,
		// The function role's temporary credentials; dynalite accepts any.
		"AWS_ACCESS_KEY_ID=ASIATESTTESTTESTTEST",
		"AWS_SECRET_ACCESS_KEY=test-secret",
		"AWS_SESSION_TOKEN=test-session-token",
		"LAMBDA_TASK_ROOT=/var/task",
		"LAMBDA_RUNTIME_DIR=/var/runtime",
		"_HANDLER=bootstrap",
		"TZ=:UTC",
		"LANG=en_US.UTF-8",
		"PATH=/usr/local/bin:/usr/bin/:/bin:/opt/bin",
	}
}

// startFunction starts bin as a Lambda instance with extra added to
// Lambda's environment ("MEDIAN_KEY=…"). The process is killed and waited
// for when the test ends, and its Runtime API closed.
func startFunction(t testing.TB, bin string, extra ...string) *function {
	t.Helper()
	f, err := launch(bin, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.stop)
	return f
}

// launch starts bin as startFunction does; the caller stops it.
func launch(bin string, extra ...string) (*function, error) {
	f := &function{rt: newRuntimeAPI(functionTimeout), gone: make(chan struct{}), log: &testsupport.Buffer{}}
	f.cmd = exec.Command(bin)
	f.cmd.Env = append(lambdaEnv(f.rt.Addr()), extra...)
	f.cmd.Dir = filepath.Dir(bin)
	f.cmd.Stdout, f.cmd.Stderr = f.log, f.log
	f.start = time.Now()
	if err := f.cmd.Start(); err != nil {
		f.rt.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() {
		f.err = f.cmd.Wait()
		close(f.gone)
	}()
	return f, nil
}

// stop kills the process (Lambda ends an instance with SIGKILL after its
// shutdown phase; the function registers no extension, so it has none),
// waits for it, and closes its Runtime API.
func (f *function) stop() {
	_ = f.cmd.Process.Kill()
	<-f.gone
	f.rt.Close()
}

// invoke hands payload to the function as one invocation and returns the
// response payload; when the process has exited, the error holds its log.
func (f *function) invoke(ctx context.Context, payload []byte) ([]byte, error) {
	out, err := f.rt.Invoke(ctx, payload, f.gone)
	if err != nil {
		select {
		case <-f.gone:
			return nil, fmt.Errorf("%w (exit: %v); its log:\n%s", err, f.err, f.log)
		default:
		}
	}
	return out, err
}

// waitReady waits until the process asks for its first invocation: its
// init is over. It fails the test when the process exits first.
func (f *function) waitReady(t testing.TB) {
	t.Helper()
	select {
	case <-f.rt.firstGet:
	case <-f.gone:
		t.Fatalf("the function exited during init (%v); init error %q; its log:\n%s", f.err, f.rt.InitError(), f.log)
	case <-time.After(20 * time.Second):
		t.Fatalf("the function did not ask for an invocation within 20 s; its log:\n%s", f.log)
	}
}

// thisArch is the architecture the tests run the binary on.
var thisArch = runtime.GOARCH
