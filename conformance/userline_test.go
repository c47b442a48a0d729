package conformance_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFailuresPointAtTheUsersLine runs the failing tests of
// testdata/userline in a go test of their own and checks that go test
// reports each failure of Run and CallTool at the user's line (marked
// "want:" there), never in conformance's own files; and that the cases
// that do not apply have no subtest, only a log line.
func TestFailuresPointAtTheUsersLine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs another test binary")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	dir := filepath.Join("testdata", "userline")
	want := wantLines(t, filepath.Join(dir, "userline_test.go"))

	cmd := exec.CommandContext(t.Context(), goBin, "test", "-count=1", "-v", "./"+filepath.ToSlash(dir))
	cmd.Env = append(os.Environ(), "MEDIAN_USERLINE=1")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "the tests fail on purpose:\n%s", out)
	text := string(out)

	reported := regexp.MustCompile(`(?m)^\s+(\S+\.go):(\d+): (.*)$`)
	seen := map[string]bool{}
	for _, m := range reported.FindAllStringSubmatch(text, -1) {
		line, _ := strconv.Atoi(m[2])
		assert.Equal(t, "userline_test.go", m[1], "reported in conformance's code: %s", m[0])
		assert.Contains(t, want, line, "reported at a line not marked want: %s", m[0])
		seen[want[line]] = seen[want[line]] || strings.HasPrefix(m[3], "FAIL ") || strings.HasPrefix(m[3], "conformance:")
	}
	assert.True(t, seen["Run"], "a failure of Run was reported:\n%s", text)
	assert.True(t, seen["CallTool"], "a failure of CallTool was reported:\n%s", text)
	assert.Contains(t, text, "FAIL timestamp/past")
	assert.Contains(t, text, "the result does not decode into int")

	// Not applicable: no subtest (not a SKIP), one log line per group.
	assert.NotContains(t, text, "TestRun/key/")
	assert.NotContains(t, text, "TestRun/execution/panic")
	assert.Contains(t, text, "not applicable to this target: key/missing (the endpoint is deployed")
	assert.Contains(t, text, "not applicable to this target: execution/panic (needs a tool that panics")
	assert.Contains(t, text, "--- SKIP: TestRun/execution/result", "a case that asks for a sample is still a skip")
}

// wantLines maps the line numbers of path marked "// want: NAME" to NAME.
func wantLines(t *testing.T, path string) map[int]string {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	out := map[int]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if _, name, ok := strings.Cut(sc.Text(), "// want: "); ok {
			out[n] = strings.TrimSpace(name)
		}
	}
	require.NoError(t, sc.Err())
	require.Len(t, out, 2)
	return out
}
