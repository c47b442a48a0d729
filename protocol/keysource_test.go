package protocol

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/median-go/median/internal/testonly/testsupport"
)

// These tests read keys that change while the server runs (PROTOCOL.md
// §1.2). They poll every few milliseconds and wait for a change with a wide
// bound (testsupport.Eventually), never for a time.

// fastRefresh is the KeyRefresh of the tests.
const fastRefresh = 5 * time.Millisecond

// codeFor returns the code h answers a request signed with key.
func codeFor(h *Handler, key string) Code {
	return h.Serve(context.Background(), diagnosticsAt(key, testNow)).code
}

// accepts reports whether h verifies a request signed with key.
func accepts(h *Handler, key string) bool {
	return h.Serve(context.Background(), diagnosticsAt(key, testNow)).Status == http.StatusOK
}

// keyFiles points MEDIAN_KEY_FILE and MEDIAN_KEY_PREVIOUS_FILE at files in
// a fresh directory (not created) and returns their paths.
func keyFiles(t *testing.T) (current, previous string) {
	dir := t.TempDir()
	current, previous = filepath.Join(dir, "key"), filepath.Join(dir, "previous")
	t.Setenv(keyEnv, "")
	t.Setenv(previousKeyEnv, "")
	t.Setenv(keyFileEnv, current)
	t.Setenv(previousKeyFileEnv, previous)
	return current, previous
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
}

// newFileHandler builds a Handler that reads its keys from the files.
func newFileHandler(t *testing.T) (*Handler, *logBuffer, error) {
	t.Helper()
	return newReadingHandler(t, nil)
}

// newSourceHandler builds a Handler that reads its keys from src.
func newSourceHandler(t *testing.T, src *source) (*Handler, *logBuffer, error) {
	t.Helper()
	return newReadingHandler(t, src.read)
}

// newReadingHandler builds a Handler that reads its keys every fastRefresh
// from keySource, or from the key files when keySource is nil, closed when
// the test ends, and returns New's error with it.
func newReadingHandler(t *testing.T, keySource func(context.Context) ([]string, error)) (*Handler, *logBuffer, error) {
	t.Helper()
	log, buf := newLogger()
	h, err := New(Config{KeySource: keySource, KeyRefresh: fastRefresh, Now: func() time.Time { return testNow }, Logger: log})
	require.NotNil(t, h, "a key problem alone still returns a Handler: %v", err)
	t.Cleanup(func() { require.NoError(t, h.Close()) })
	return h, buf, err
}

// requireNoKeyInLog fails when the log holds any of keys.
func requireNoKeyInLog(t *testing.T, log *logBuffer, keys ...string) {
	t.Helper()
	for _, k := range keys {
		require.NotContains(t, log.String(), strings.TrimSpace(k), "a key was logged")
	}
}

func TestKeyFileMissingAtStartIsPickedUp(t *testing.T) {
	current, _ := keyFiles(t)
	h, log, err := newFileHandler(t)
	require.ErrorIs(t, err, CodeMissingSecret)
	msg := requireError(t, h.Serve(context.Background(), diagnosticsAt(testKey, testNow)), http.StatusInternalServerError, CodeMissingSecret)
	assert.Contains(t, msg, keyFileEnv)
	assert.NotContains(t, msg, current, "the answer does not show the server's paths; the log does")
	lines := log.find(t, "no usable key yet")
	require.Len(t, lines, 1, "logged once, not at every poll")
	assert.Equal(t, keyFileEnv, lines[0]["source"])
	assert.Equal(t, current, lines[0]["path"])

	writeFile(t, current, testKey+"\n")
	testsupport.Eventually(t, "the key file that appeared is in force", func() bool { return accepts(h, testKey) })
	assert.Equal(t, CodeInvalidSignature, codeFor(h, otherKey), "only the file's key, never a generated one")
	requireNoKeyInLog(t, log, testKey)
}

// TestKeyFileSymlinkSwap is how Kubernetes updates a mounted secret: the
// file is a link through "..data", a link to a directory that is replaced
// by renaming a new link over it. The path is polled, not the inode.
func TestKeyFileSymlinkSwap(t *testing.T) {
	current, _ := keyFiles(t)
	dir := filepath.Dir(current)
	version := func(name, key string) {
		require.NoError(t, os.Mkdir(filepath.Join(dir, name), 0o700))
		writeFile(t, filepath.Join(dir, name, "key"), key)
	}
	version("..v1", testKey)
	require.NoError(t, os.Symlink("..v1", filepath.Join(dir, "..data")))
	require.NoError(t, os.Symlink(filepath.Join("..data", "key"), current))

	h, log, err := newFileHandler(t)
	require.NoError(t, err)
	require.True(t, accepts(h, testKey))
	start := log.find(t, "median: keys in force")
	require.Len(t, start, 1, "the keys the server starts with are logged, by fingerprint")
	assert.Equal(t, keyFileEnv, start[0]["source"])
	assert.Equal(t, []any{mustParseKey(testKey).st.fingerprint}, start[0]["keys"])

	version("..v2", otherKey)
	require.NoError(t, os.Symlink("..v2", filepath.Join(dir, "..data_tmp")))
	require.NoError(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "..v1")))

	testsupport.Eventually(t, "the swapped secret is in force", func() bool { return accepts(h, otherKey) })
	assert.Equal(t, CodeInvalidSignature, codeFor(h, testKey), "the old key left with its version")
	changed := log.find(t, "new keys in force")
	require.NotEmpty(t, changed)
	assert.Equal(t, []any{mustParseKey(otherKey).st.fingerprint}, changed[len(changed)-1]["keys"], "keys are logged by fingerprint")
	requireNoKeyInLog(t, log, testKey, otherKey)
}

func TestKeyFileWrittenInPlace(t *testing.T) {
	current, _ := keyFiles(t)
	writeFile(t, current, testKey)
	h, _, err := newFileHandler(t)
	require.NoError(t, err)
	require.True(t, accepts(h, testKey))

	f, err := os.OpenFile(current, os.O_WRONLY|os.O_TRUNC, 0)
	require.NoError(t, err)
	_, err = f.WriteString(otherKey)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	testsupport.Eventually(t, "the rewritten key is in force", func() bool { return accepts(h, otherKey) })
}

// TestKeyFileDefaultPoll: with the default period a change is in force
// within the contract's 10 seconds.
func TestKeyFileDefaultPoll(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the default poll of 2 s")
	}
	current, _ := keyFiles(t)
	writeFile(t, current, testKey)
	h, err := New(Config{Now: func() time.Time { return testNow }, Logger: discardLogger()})
	require.NoError(t, err)
	defer h.Close()
	writeFile(t, current, otherKey)
	testsupport.Eventually(t, "a change is in force with the default poll", func() bool { return accepts(h, otherKey) })
}

// TestKeyFileBadReadsKeepKeys: a read that gives no usable key keeps the
// keys in force and is logged as an error naming the source and the path,
// never the key.
func TestKeyFileBadReadsKeepKeys(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(t *testing.T, path string)
		code   Code
	}{
		{"missing", func(t *testing.T, p string) { require.NoError(t, os.Remove(p)) }, CodeMissingSecret},
		{"empty", func(t *testing.T, p string) { writeFile(t, p, "  \n") }, CodeMissingSecret},
		// Tests run as root, which reads any mode: a directory at the path
		// is a file nobody can read.
		{"unreadable", func(t *testing.T, p string) {
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Mkdir(p, 0o700))
		}, CodeMissingSecret},
		{"named pipe", func(t *testing.T, p string) {
			require.NoError(t, os.Remove(p))
			require.NoError(t, syscall.Mkfifo(p, 0o600)) // opening it would block until a writer comes
		}, CodeMissingSecret},
		{"half-written", func(t *testing.T, p string) { writeFile(t, p, otherKey[:20]) }, CodeInvalidMedianKey},
		{"unusable key", func(t *testing.T, p string) { writeFile(t, p, "mk_other key with spaces 0123456789abcdef") }, CodeInvalidMedianKey},
		{"too large", func(t *testing.T, p string) { writeFile(t, p, strings.Repeat("k", maxKeyFileBytes+1)) }, CodeMissingSecret},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			current, _ := keyFiles(t)
			writeFile(t, current, testKey)
			h, log, err := newFileHandler(t)
			require.NoError(t, err)
			c.break_(t, current)
			testsupport.Eventually(t, "the failed read is logged", func() bool {
				return len(log.find(t, "gave no usable key")) > 0
			})
			line := log.find(t, "gave no usable key")[0]
			assert.Equal(t, "ERROR", line["level"])
			assert.Equal(t, keyFileEnv, line["source"])
			assert.Equal(t, current, line["path"])
			assert.Equal(t, string(c.code), line["code"])
			assert.True(t, accepts(h, testKey), "the keys in force stay")
			report := h.Report(context.Background())
			require.NotNil(t, report.KeyRead, "diagnostics show the failed read")
			assert.Equal(t, keyFileEnv, report.KeyRead.Source)
			assert.Equal(t, c.code, report.KeyRead.Code)
			assert.Equal(t, testNow.UTC(), report.KeyRead.At)
			assert.Len(t, report.Keys, 1, "the key in force is still listed")
			requireNoKeyInLog(t, log, testKey, otherKey[:20])
			assert.Len(t, log.find(t, "gave no usable key"), 1, "an unchanged bad file is logged once")

			// Fixed: the next good read clears the failure.
			if c.name == "unreadable" || c.name == "named pipe" {
				require.NoError(t, os.Remove(current))
			}
			writeFile(t, current, otherKey)
			testsupport.Eventually(t, "the repaired file is in force", func() bool { return accepts(h, otherKey) })
			assert.Nil(t, h.Report(context.Background()).KeyRead, "a good read clears it")
		})
	}
}

// TestKeyFileBadAtStart: a server that never had a usable key answers 500
// with the code of what is wrong.
func TestKeyFileBadAtStart(t *testing.T) {
	cases := map[string]struct {
		setup func(t *testing.T, current, previous string)
		code  Code
	}{
		"empty":        {func(t *testing.T, c, _ string) { writeFile(t, c, "") }, CodeMissingSecret},
		"unreadable":   {func(t *testing.T, c, _ string) { require.NoError(t, os.Mkdir(c, 0o700)) }, CodeMissingSecret},
		"half-written": {func(t *testing.T, c, _ string) { writeFile(t, c, testKey[:31]) }, CodeInvalidMedianKey},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			current, previous := keyFiles(t)
			c.setup(t, current, previous)
			h, _, err := newFileHandler(t)
			require.ErrorIs(t, err, c.code)
			requireError(t, h.Serve(context.Background(), diagnosticsAt(testKey, testNow)), http.StatusInternalServerError, c.code)
		})
	}
	// A previous-key file that gives no usable key drops that key from the
	// start, as at any later read: the current key answers, and the log
	// and diagnostics say why the other is not accepted.
	for name, setup := range map[string]func(t *testing.T, p string){
		"unusable previous":   func(t *testing.T, p string) { writeFile(t, p, "short") },
		"unreadable previous": func(t *testing.T, p string) { require.NoError(t, os.Mkdir(p, 0o700)) },
	} {
		t.Run(name, func(t *testing.T) {
			current, previous := keyFiles(t)
			writeFile(t, current, testKey)
			setup(t, previous)
			h, log, err := newFileHandler(t)
			require.NoError(t, err, "the current key is usable")
			assert.True(t, accepts(h, testKey))
			assert.Len(t, log.find(t, "a key being retired is not usable"), 1)
			report := h.Report(context.Background())
			require.NotNil(t, report.KeyRead)
			assert.Equal(t, previousKeyFileEnv, report.KeyRead.Source)
			assert.Equal(t, CodeInvalidMedianKey, report.KeyRead.Code)
		})
	}
	t.Run("previous file alone", func(t *testing.T) {
		dir := t.TempDir()
		t.Setenv(keyFileEnv, "")
		t.Setenv(previousKeyFileEnv, filepath.Join(dir, "previous"))
		writeFile(t, filepath.Join(dir, "previous"), otherKey)
		h, _, err := newFileHandler(t)
		require.ErrorIs(t, err, CodeMissingSecret)
		assert.Contains(t, err.Error(), previousKeyFileEnv+" is set but "+keyFileEnv+" is not")
		assert.False(t, accepts(h, otherKey))
	})
}

// TestConfigKeysWinOverKeyFiles: a single key in Config.Keys is the key,
// and the key files named in the environment are not read.
func TestConfigKeysWinOverKeyFiles(t *testing.T) {
	current, _ := keyFiles(t)
	writeFile(t, current, otherKey)
	h, err := New(Config{Keys: []string{testKey}, KeyRefresh: fastRefresh, Now: func() time.Time { return testNow }, Logger: discardLogger()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, h.Close()) })
	assert.True(t, accepts(h, testKey))
	assert.False(t, accepts(h, otherKey))
}

func TestKeyFilePrevious(t *testing.T) {
	t.Run("missing or empty means none", func(t *testing.T) {
		current, previous := keyFiles(t)
		writeFile(t, current, testKey)
		h, _, err := newFileHandler(t)
		require.NoError(t, err)
		assert.Equal(t, []string{mustParseKey(testKey).st.fingerprint}, fingerprints(h))
		writeFile(t, previous, "\n")
		time.Sleep(10 * fastRefresh) // several polls: nothing may change
		assert.Equal(t, []string{mustParseKey(testKey).st.fingerprint}, fingerprints(h))
		assert.Nil(t, h.keyring().readErr)
	})
	t.Run("rotation", func(t *testing.T) {
		current, previous := keyFiles(t)
		writeFile(t, current, testKey)
		h, _, err := newFileHandler(t)
		require.NoError(t, err)
		// The new key becomes current, the old one previous.
		writeFile(t, previous, testKey)
		writeFile(t, current, otherKey)
		testsupport.Eventually(t, "both keys in force", func() bool { return accepts(h, otherKey) && accepts(h, testKey) })
		assert.Equal(t, []string{keyFileEnv, previousKeyFileEnv}, h.keyring().names)
		// The old key is removed.
		require.NoError(t, os.Remove(previous))
		testsupport.Eventually(t, "the old key is gone", func() bool { return !accepts(h, testKey) })
		assert.True(t, accepts(h, otherKey))
	})
}

// TestKeyFilePreviousRevoked: whatever an operator writes into
// MEDIAN_KEY_PREVIOUS_FILE to revoke the key being retired (garbage, an
// empty file, no file, a file that cannot be read) removes that key at the
// next read, even while the current key's file is broken too; the current
// key stays in force, and the log and diagnostics say what happened.
func TestKeyFilePreviousRevoked(t *testing.T) {
	cases := []struct {
		name   string
		revoke func(t *testing.T, path string)
		bad    bool // a file that gives no usable key, rather than no key: logged as an error, in diagnostics
	}{
		{"garbage", func(t *testing.T, p string) { writeFile(t, p, "revoked") }, true},
		{"half-written", func(t *testing.T, p string) { writeFile(t, p, testKey[:20]) }, true},
		{"unreadable", func(t *testing.T, p string) { require.NoError(t, os.Remove(p)); require.NoError(t, os.Mkdir(p, 0o700)) }, true},
		{"too large", func(t *testing.T, p string) { writeFile(t, p, strings.Repeat("k", maxKeyFileBytes+1)) }, true},
		{"empty", func(t *testing.T, p string) { writeFile(t, p, "\n") }, false},
		{"deleted", func(t *testing.T, p string) { require.NoError(t, os.Remove(p)) }, false},
	}
	for _, c := range cases {
		for _, currentBroken := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/current key file broken %v", c.name, currentBroken), func(t *testing.T) {
				current, previous := keyFiles(t)
				writeFile(t, current, otherKey)
				writeFile(t, previous, testKey)
				h, log, err := newFileHandler(t)
				require.NoError(t, err)
				require.True(t, accepts(h, testKey) && accepts(h, otherKey), "both keys in force during the rotation")

				if currentBroken {
					require.NoError(t, os.Remove(current))
				}
				c.revoke(t, previous)
				testsupport.Eventually(t, "the revoked key is no longer accepted", func() bool { return !accepts(h, testKey) })
				assert.True(t, accepts(h, otherKey), "the current key stays in force")
				assert.Equal(t, []string{mustParseKey(otherKey).st.fingerprint}, fingerprints(h))
				report := h.Report(context.Background())
				require.Len(t, report.Keys, 1, "diagnostics list the one key in force")
				dropped := log.find(t, "a key being retired is not usable")
				switch {
				case c.bad:
					require.Len(t, dropped, 1, "the dropped key is logged")
					assert.Equal(t, "ERROR", dropped[0]["level"])
					assert.Equal(t, previousKeyFileEnv, dropped[0]["source"])
					assert.Equal(t, string(CodeInvalidMedianKey), dropped[0]["code"])
				default:
					assert.Empty(t, dropped, "no key being retired is not an error")
				}
				switch {
				case currentBroken:
					require.NotNil(t, report.KeyRead, "diagnostics show the failed read of the current key")
					assert.Equal(t, keyFileEnv, report.KeyRead.Source)
					assert.Equal(t, CodeMissingSecret, report.KeyRead.Code)
				case c.bad:
					require.NotNil(t, report.KeyRead, "diagnostics show why the key being retired was dropped")
					assert.Equal(t, previousKeyFileEnv, report.KeyRead.Source)
					assert.Equal(t, CodeInvalidMedianKey, report.KeyRead.Code)
				default:
					assert.Nil(t, report.KeyRead)
					assert.NotEmpty(t, log.find(t, "new keys in force"), "the log shows the keys in force")
				}
				requireNoKeyInLog(t, log, testKey, otherKey, testKey[:20])

				// Writing the key back puts it in force again.
				if c.name == "unreadable" {
					require.NoError(t, os.Remove(previous))
				}
				writeFile(t, current, otherKey)
				writeFile(t, previous, testKey)
				testsupport.Eventually(t, "the key is back", func() bool { return accepts(h, testKey) })
				assert.Nil(t, h.Report(context.Background()).KeyRead, "a good read clears it")
			})
		}
	}
}

// TestKeyFileIgnoresKeyEnv: with MEDIAN_KEY_FILE set, MEDIAN_KEY does not
// count, and a warning says so.
func TestKeyFileIgnoresKeyEnv(t *testing.T) {
	current, _ := keyFiles(t)
	t.Setenv(keyEnv, otherKey)
	writeFile(t, current, testKey)
	h, log, err := newFileHandler(t)
	require.NoError(t, err)
	assert.False(t, accepts(h, otherKey))
	assert.Len(t, log.find(t, "MEDIAN_KEY and MEDIAN_KEY_PREVIOUS are ignored"), 1)

	// Config.KeySource with MEDIAN_KEY set: not the key files' warning.
	t.Setenv(keyFileEnv, "")
	t.Setenv(previousKeyFileEnv, "")
	src := &source{}
	src.set(nil, testKey)
	_, log, err = newSourceHandler(t, src)
	require.NoError(t, err)
	assert.Empty(t, log.find(t, "MEDIAN_KEY and MEDIAN_KEY_PREVIOUS are ignored"))
}

// source is a Config.KeySource whose answer the test sets.
type source struct {
	mu    sync.Mutex
	keys  []string
	err   error
	panic bool
	calls atomic.Int64
}

func (s *source) set(err error, keys ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys, s.err = keys, err
}

func (s *source) read(_ context.Context) ([]string, error) {
	s.calls.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.panic {
		panic("the secret manager's client panicked")
	}
	return append([]string(nil), s.keys...), s.err
}

func TestKeySource(t *testing.T) {
	src := &source{}
	src.set(nil, testKey)
	h, log, err := newSourceHandler(t, src)
	require.NoError(t, err)
	assert.True(t, accepts(h, testKey))

	src.set(nil, otherKey, testKey)
	testsupport.Eventually(t, "the new keys are in force", func() bool { return accepts(h, otherKey) })
	assert.True(t, accepts(h, testKey))

	for name, bad := range map[string]func(){
		"error":    func() { src.set(errors.New("secret manager: dial tcp 10.0.0.9:443: i/o timeout")) },
		"no key":   func() { src.set(nil) },
		"unusable": func() { src.set(nil, "short", testKey) },
		"panic": func() {
			src.mu.Lock()
			src.panic = true
			src.mu.Unlock()
		},
	} {
		t.Run(name, func(t *testing.T) {
			before := len(log.find(t, "gave no usable key")) + len(log.find(t, "panicked"))
			bad()
			testsupport.Eventually(t, "the failed read is logged", func() bool {
				return len(log.find(t, "gave no usable key"))+len(log.find(t, "panicked")) > before
			})
			assert.True(t, accepts(h, otherKey), "the keys in force stay")
			assert.True(t, accepts(h, testKey), "the keys in force stay")
			lines := log.find(t, "gave no usable key")
			require.NotEmpty(t, lines)
			assert.Equal(t, "Config.KeySource", lines[len(lines)-1]["source"])
			src.mu.Lock()
			src.panic = false
			src.mu.Unlock()
			src.set(nil, otherKey, testKey)
			testsupport.Eventually(t, "a good read clears the failure", func() bool { return h.keyring().readErr == nil })
		})
	}
	// A key being retired that the source no longer gives, or gives
	// unusable, is dropped even when the current key is unusable too.
	for name, drop := range map[string]func(){
		"unusable key being retired":                func() { src.set(nil, otherKey, "") },
		"unusable current, no key being retired":    func() { src.set(nil, "short") },
		"unusable current and key being retired":    func() { src.set(nil, "short", "mk_short") },
		"usable current, unusable and usable after": func() { src.set(nil, otherKey, "mk_short", testKey) },
	} {
		t.Run(name, func(t *testing.T) {
			src.set(nil, otherKey, testKey)
			testsupport.Eventually(t, "both keys in force", func() bool { return accepts(h, testKey) && h.keyring().readErr == nil })
			drop()
			if name == "usable current, unusable and usable after" {
				testsupport.Eventually(t, "the unusable key is reported", func() bool { return h.keyring().readErr != nil })
				assert.True(t, accepts(h, testKey), "a usable key being retired stays")
				assert.Equal(t, "Config.KeySource key 2 of 3", h.Report(context.Background()).KeyRead.Source)
			} else {
				testsupport.Eventually(t, "the key being retired is dropped", func() bool { return !accepts(h, testKey) })
			}
			assert.True(t, accepts(h, otherKey), "the current key stays in force")
			if name == "unusable key being retired" {
				lines := log.find(t, "a key being retired is not usable")
				require.NotEmpty(t, lines)
				assert.Equal(t, "Config.KeySource key 2 of 2", lines[len(lines)-1]["source"])
				assert.Equal(t, "Config.KeySource key 2 of 2", h.Report(context.Background()).KeyRead.Source)
			}
		})
	}
	assert.NotContains(t, log.String(), `"`+testKey)
	assert.NotContains(t, log.String(), otherKey)
}

func TestKeySourceNothingAtStart(t *testing.T) {
	src := &source{}
	src.set(errors.New("not reachable yet"))
	h, log, err := newSourceHandler(t, src)
	require.ErrorIs(t, err, CodeMissingSecret)
	msg := requireError(t, h.Serve(context.Background(), diagnosticsAt(testKey, testNow)), http.StatusInternalServerError, CodeMissingSecret)
	assert.NotContains(t, msg, "not reachable yet", "the source's own error goes to the log only")
	assert.Contains(t, log.String(), "not reachable yet")
	src.set(nil, testKey)
	testsupport.Eventually(t, "the first usable key is in force", func() bool { return accepts(h, testKey) })
}

func TestKeySourceConfigErrors(t *testing.T) {
	src := &source{}
	h, err := New(Config{Keys: []string{testKey}, KeySource: src.read, Logger: discardLogger()})
	assert.Nil(t, h)
	require.ErrorContains(t, err, "both Config.Keys and Config.KeySource")
	h, err = New(Config{KeySource: src.read, KeyRefresh: -time.Second, Logger: discardLogger()})
	assert.Nil(t, h)
	require.ErrorContains(t, err, "Config.KeyRefresh")
	assert.Zero(t, src.calls.Load(), "a Handler that is not built reads nothing and starts nothing")
}

// TestCloseStopsKeyReads: Close ends the background reads and waits for
// them; nothing is called after it returns.
func TestCloseStopsKeyReads(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	src := &source{}
	src.set(nil, testKey)
	h, err := New(Config{KeySource: src.read, KeyRefresh: time.Millisecond, Logger: discardLogger(), Now: func() time.Time { return testNow }})
	require.NoError(t, err)
	testsupport.Eventually(t, "the source is read again", func() bool { return src.calls.Load() > 2 })
	require.NoError(t, h.Close())
	require.NoError(t, h.Close(), "a second Close is harmless")
	calls := src.calls.Load()
	time.Sleep(20 * time.Millisecond)
	assert.Equal(t, calls, src.calls.Load(), "no read after Close")
	assert.True(t, accepts(h, testKey), "the Handler still answers under the keys in force")

	h, err = New(Config{Keys: []string{testKey}, Logger: discardLogger()})
	require.NoError(t, err)
	require.NoError(t, h.Close(), "Close of a Handler with keys read once does nothing")
}

// TestKeySwapUnderLoad: requests verify while the keys swap under them
// (run with -race). A key in every set always verifies; one that comes and
// goes is either accepted or invalid_signature, never anything else.
func TestKeySwapUnderLoad(t *testing.T) {
	src := &source{}
	src.set(nil, testKey)
	h, _, err := newSourceHandler(t, src)
	require.NoError(t, err)
	stop := make(chan struct{})
	var swapper sync.WaitGroup
	swapper.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%2 == 0 {
				src.set(nil, testKey, otherKey)
			} else {
				src.set(nil, testKey)
			}
			time.Sleep(fastRefresh / 2)
		}
	})
	var wg sync.WaitGroup
	var bad atomic.Int64
	for range 4 {
		wg.Go(func() {
			for range 300 {
				if !accepts(h, testKey) {
					bad.Add(1)
				}
				if resp := h.Serve(context.Background(), diagnosticsAt(otherKey, testNow)); resp.Status != http.StatusOK && resp.code != CodeInvalidSignature {
					bad.Add(1)
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	swapper.Wait()
	assert.Zero(t, bad.Load())
	assert.Equal(t, int64(1200), h.keyring().keys[0].verifiedCount(), "the key that stays keeps its count across every swap")
}

// TestVerifiedCounters: each key counts the requests it verified.
func TestVerifiedCounters(t *testing.T) {
	h, _ := newHandler(t, Config{Keys: []string{testKey, otherKey}})
	for range 3 {
		require.True(t, accepts(h, otherKey))
	}
	require.True(t, accepts(h, testKey))
	require.Equal(t, CodeInvalidSignature, codeFor(h, strings.Repeat("z", 40)))
	r := h.keyring()
	assert.Equal(t, []int64{1, 3}, []int64{r.keys[0].verifiedCount(), r.keys[1].verifiedCount()})
}

// TestKeyErrorsNameTheirSource: an unusable key's error names where it came
// from (the file, the previous key, a KeySource key), never MEDIAN_KEY for
// a key that did not come from MEDIAN_KEY.
func TestKeyErrorsNameTheirSource(t *testing.T) {
	t.Run("key file", func(t *testing.T) {
		current, _ := keyFiles(t)
		writeFile(t, current, testKey[:20])
		_, _, err := newFileHandler(t)
		require.ErrorIs(t, err, CodeInvalidMedianKey)
		assert.Contains(t, err.Error(), "the key in MEDIAN_KEY_FILE is not usable: it has 20 characters")
		assert.NotContains(t, err.Error(), "MEDIAN_KEY is not usable")
	})
	t.Run("previous key file", func(t *testing.T) {
		current, previous := keyFiles(t)
		writeFile(t, current, testKey)
		writeFile(t, previous, "short")
		_, log, err := newFileHandler(t)
		require.NoError(t, err, "the key being retired is dropped, and the current one answers")
		lines := log.find(t, "a key being retired is not usable")
		require.Len(t, lines, 1)
		assert.Contains(t, lines[0]["error"], "the key in MEDIAN_KEY_PREVIOUS_FILE is not usable: it has 5 characters")
	})
	t.Run("MEDIAN_KEY_PREVIOUS", func(t *testing.T) {
		t.Setenv(keyFileEnv, "")
		t.Setenv(keyEnv, testKey)
		t.Setenv(previousKeyEnv, "short")
		_, err := New(Config{Logger: discardLogger()})
		require.ErrorIs(t, err, CodeInvalidMedianKey)
		assert.Contains(t, err.Error(), "MEDIAN_KEY_PREVIOUS is not usable: it has 5 characters")
	})
	t.Run("Config.Keys", func(t *testing.T) {
		_, err := New(Config{Logger: discardLogger(), Keys: []string{"short"}})
		require.ErrorIs(t, err, CodeInvalidMedianKey)
		assert.Contains(t, err.Error(), "Config.Keys[0] is not usable: it has 5 characters")
		_, err = New(Config{Logger: discardLogger(), Keys: []string{testKey, "mk_a b"}})
		require.ErrorIs(t, err, CodeInvalidMedianKey)
		assert.Contains(t, err.Error(), "Config.Keys[1] is not usable: it has 6 characters")
		_, err = New(Config{Logger: discardLogger(), Keys: []string{""}})
		require.ErrorIs(t, err, CodeMissingSecret)
		assert.Contains(t, err.Error(), "Config.Keys[0] is empty")
	})
	t.Run("KeySource", func(t *testing.T) {
		h, err := New(Config{Logger: discardLogger(), KeySource: func(context.Context) ([]string, error) { return []string{"", testKey}, nil }})
		require.NotNil(t, h)
		t.Cleanup(func() { require.NoError(t, h.Close()) })
		require.ErrorIs(t, err, CodeMissingSecret)
		assert.Contains(t, err.Error(), "Config.KeySource key 1 of 2 is empty")
	})
}

// TestKeySourceIgnoringItsContext: a read of the keys that never looks at
// its context is given up on at the source's timeout, logged with
// missing_secret saying so, and the keys in force stay; its goroutine ends
// once the source returns (goleak checks the package).
func TestKeySourceIgnoringItsContext(t *testing.T) {
	h, log := newHandler(t, Config{})
	release := make(chan struct{})
	r := &keyReader{h: h, src: &keySource{name: "Config.KeySource", period: time.Hour, timeout: 20 * time.Millisecond,
		read: readKeySource(func(context.Context) ([]string, error) {
			<-release
			return []string{otherKey}, nil
		})}}
	t.Cleanup(func() { close(release) })
	// The read runs on its own goroutine, so that one that waits for the
	// source fails here instead of hanging the test.
	done := make(chan struct{})
	go func() { r.read(context.Background()); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the read must not wait for the source")
	}
	lines := log.find(t, "gave no usable key")
	require.Len(t, lines, 1)
	assert.Equal(t, string(CodeMissingSecret), lines[0]["code"])
	assert.Contains(t, lines[0]["error"], "Config.KeySource did not return within 20ms")
	assert.True(t, accepts(h, testKey), "the keys in force stay")
}

// TestKeyFileSizeLimit: a key file of up to 4 KiB is read whole; one byte
// more is not a key file (the limit written out, not the constant, so
// that a changed limit fails here).
func TestKeyFileSizeLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key")
	atLimit := testKey + "\n" + strings.Repeat(" ", 4096-len(testKey)-1)
	writeFile(t, path, atLimit)
	got, err := readKeyFile(path)
	require.NoError(t, err)
	assert.Equal(t, atLimit, got)

	writeFile(t, path, atLimit+" ")
	_, err = readKeyFile(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "larger than 4096 bytes")

	_, err = readKeyFile(filepath.Join(t.TempDir(), "missing"))
	assert.ErrorIs(t, err, fs.ErrNotExist, "a missing file is reported as missing, not as empty")
}

// TestReadDigestSeesEveryPart: two reads that differ in any part (a key's
// name, the failure's code, message or detail, whether keys are being
// retired, a dropped key's source, message or detail) are not taken for
// the same read, which would be neither applied nor logged.
func TestReadDigestSeesEveryPart(t *testing.T) {
	base := func() readKeys {
		return readKeys{
			keys: []string{testKey}, names: []string{keyFileEnv},
			err: newError(CodeMissingSecret, "gone"), detail: []any{"path", "/a"}, retiring: true,
			dropped: []droppedKey{{name: previousKeyFileEnv, err: newError(CodeInvalidMedianKey, "short"), detail: []any{"path", "/b"}}},
		}
	}
	want := digestRead(base())
	assert.Equal(t, want, digestRead(base()), "the same read, the same digest")
	for name, change := range map[string]func(*readKeys){
		"key":             func(r *readKeys) { r.keys[0] = otherKey },
		"key's name":      func(r *readKeys) { r.names[0] = keyEnv },
		"code":            func(r *readKeys) { r.err = newError(CodeInvalidMedianKey, "gone") },
		"message":         func(r *readKeys) { r.err = newError(CodeMissingSecret, "unreadable") },
		"detail":          func(r *readKeys) { r.detail = []any{"path", "/c"} },
		"retiring":        func(r *readKeys) { r.retiring = false },
		"dropped source":  func(r *readKeys) { r.dropped[0].name = "Config.KeySource key 2 of 2" },
		"dropped message": func(r *readKeys) { r.dropped[0].err = newError(CodeInvalidMedianKey, "revoked") },
		"dropped detail":  func(r *readKeys) { r.dropped[0].detail = []any{"path", "/d"} },
	} {
		r := base()
		change(&r)
		assert.NotEqual(t, want, digestRead(r), name)
	}
}

// TestReadEndedByCloseIsNotApplied: keys a source returns because Close
// ended its read are not put in force.
func TestReadEndedByCloseIsNotApplied(t *testing.T) {
	var calls atomic.Int64
	reading := make(chan struct{})
	read := func(ctx context.Context) ([]string, error) {
		if calls.Add(1) == 1 {
			return []string{testKey}, nil
		}
		select {
		case reading <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return []string{otherKey}, nil
	}
	log, _ := newLogger()
	h, err := New(Config{KeySource: read, KeyRefresh: fastRefresh, Now: func() time.Time { return testNow }, Logger: log})
	require.NoError(t, err)
	<-reading
	require.NoError(t, h.Close())
	assert.True(t, accepts(h, testKey))
	assert.False(t, accepts(h, otherKey), "what came back after Close is not trusted")
}

// TestUnusableKeyBeingRetired: a key after the first that is not usable,
// empty included, is invalid_median_key, not missing_secret (only the
// current key can be missing).
func TestUnusableKeyBeingRetired(t *testing.T) {
	names := []string{"Config.Keys[0]", "Config.Keys[1]"}
	for _, bad := range []string{"", " ", "short"} {
		_, err := parseNamedKeys([]string{testKey, bad}, names)
		require.NotNil(t, err, "%q", bad)
		assert.Equal(t, CodeInvalidMedianKey, err.Code, "%q", bad)
		assert.Contains(t, err.Message, "Config.Keys[1]")
	}
	_, err := parseNamedKeys([]string{"", testKey}, names)
	require.NotNil(t, err)
	assert.Equal(t, CodeMissingSecret, err.Code, "the current key missing")
}
