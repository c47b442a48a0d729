package catalog_test

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/examples/catalog"
	"github.com/median-go/median/examples/catalog/catalogtest"
	"github.com/median-go/median/internal/testonly/testsupport"
)

// otherKey is a second usable key, for a rotation.
const otherKey = "examples-other-key-ZYXWVUTSRQPONMLKJIHGFEDCBA-98765"

// keyFileEnv points MEDIAN_KEY_FILE and MEDIAN_KEY_PREVIOUS_FILE at files
// of a fresh directory and returns their paths.
func keyFileEnv(t *testing.T) (current, previous string) {
	dir := t.TempDir()
	current, previous = filepath.Join(dir, "median-key"), filepath.Join(dir, "median-key-previous")
	t.Setenv(catalog.KeyEnv, "")
	t.Setenv(catalog.PreviousKeyEnv, "")
	t.Setenv(catalog.KeyFileEnv, current)
	t.Setenv(catalog.PreviousKeyFileEnv, previous)
	return current, previous
}

// status sends a diagnostics request signed with key and returns the status.
func status(d *catalog.Demo, key string) int {
	body := []byte(`{"op":"diagnostics"}`)
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	req.Header.Set(catalogtest.SignatureHeader, catalogtest.MustKey(key).Sign(time.Now(), body))
	rec := httptest.NewRecorder()
	d.Handler.ServeHTTP(rec, req)
	return rec.Code
}

// TestKeyFilesRotateWithoutRestart: the README's rotation, on the demo.
func TestKeyFilesRotateWithoutRestart(t *testing.T) {
	current, previous := keyFileEnv(t)
	require.NoError(t, os.WriteFile(current, []byte(catalogtest.Key+"\n"), 0o600))
	opts := catalog.FromEnv(quiet)
	require.True(t, opts.KeyFiles)
	d, err := catalog.New(opts)
	require.NoError(t, err)
	defer d.Close()
	require.Equal(t, http.StatusOK, status(d, catalogtest.Key))
	assert.False(t, d.DevKey)
	assert.Empty(t, d.Fingerprint, "the keys may change: no fixed fingerprint")

	// New key current, old key previous: both verify.
	require.NoError(t, os.WriteFile(previous, []byte(catalogtest.Key), 0o600))
	require.NoError(t, os.WriteFile(current, []byte(otherKey), 0o600))
	testsupport.Eventually(t, "the new key verifies", func() bool { return status(d, otherKey) == http.StatusOK })
	assert.Equal(t, http.StatusOK, status(d, catalogtest.Key), "the old key still verifies while it is previous")

	// The old key removed.
	require.NoError(t, os.Remove(previous))
	testsupport.Eventually(t, "the old key is refused", func() bool { return status(d, catalogtest.Key) == http.StatusUnauthorized })
	assert.Equal(t, http.StatusOK, status(d, otherKey))
}

// TestKeyFileMissingIsNeverADevKey: with MEDIAN_KEY_FILE set but the file
// not there yet, the demo answers 500 missing_secret even on loopback, and
// uses the key once the file appears.
func TestKeyFileMissingIsNeverADevKey(t *testing.T) {
	current, _ := keyFileEnv(t)
	var warnings bytes.Buffer
	opts := catalog.FromEnv(quiet)
	opts.Addr, opts.Warnings = "127.0.0.1:8080", &warnings
	d, err := catalog.New(opts)
	require.NoError(t, err, "a key problem is answered, not fatal")
	defer d.Close()
	assert.False(t, d.DevKey)
	assert.Empty(t, warnings.String(), "no development key")
	rec := httptest.NewRecorder()
	d.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	assert.Equal(t, http.StatusInternalServerError, rec.Code)
	assert.Contains(t, rec.Body.String(), "missing_secret")

	require.NoError(t, os.WriteFile(current, []byte(catalogtest.Key), 0o600))
	testsupport.Eventually(t, "the key file that appeared is used", func() bool { return status(d, catalogtest.Key) == http.StatusOK })
}

func TestKeyFilesOptionNeedsTheVariables(t *testing.T) {
	t.Setenv(catalog.KeyFileEnv, "")
	t.Setenv(catalog.PreviousKeyFileEnv, "")
	assert.False(t, catalog.FromEnv(quiet).KeyFiles)
	_, err := catalog.New(catalog.Options{KeyFiles: true, Logger: quiet})
	require.ErrorContains(t, err, catalog.KeyFileEnv)
}

// TestAddrWithAKeyFile: a key file counts as a key, so the demo listens on
// every interface, as with MEDIAN_KEY.
func TestAddrWithAKeyFile(t *testing.T) {
	keyFileEnv(t)
	t.Setenv("HOST", "")
	os.Unsetenv("HOST")
	t.Setenv("PORT", "")
	host, _, err := net.SplitHostPort(catalog.Addr())
	require.NoError(t, err)
	assert.Empty(t, host)
}
