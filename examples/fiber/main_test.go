package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/median-go/median/examples/catalog"
	"github.com/median-go/median/examples/catalog/catalogtest"
	"github.com/median-go/median/fibermedian"
	"github.com/median-go/median/protocol"
)

// fasthttp keeps a process-wide clock goroutine, and its worker pool's
// cleaner sleeps up to 10 s before it sees the server stopped.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"))
}

// TestExample drives the app in memory through fibermedian.Do: the
// catalog, the ordinary routes and the conformance suite
// (catalogtest.RunAll).
func TestExample(t *testing.T) {
	catalogtest.RunAll(t, func(d *catalog.Demo) func(*http.Request) (*http.Response, error) {
		app := newApp(d)
		t.Cleanup(func() { _ = app.Shutdown() })
		return fibermedian.Do(app)
	})
}

// fasthttp refuses a body over fiber's limit while reading the request, so
// this test needs a real (loopback) listener: app.Test reports the error
// instead of the answer.
func TestBodyOverFibersLimitIsTheContractsJSON(t *testing.T) {
	app := newApp(catalogtest.NewDemo(t))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- app.Listener(ln) }()
	t.Cleanup(func() {
		assert.NoError(t, app.Shutdown())
		assert.NoError(t, <-served)
	})
	body := bytes.Repeat([]byte("x"), bodyLimit+1)
	for name, tc := range map[string]struct {
		sign   bool
		status int
		code   protocol.Code
	}{
		"signed":   {true, http.StatusRequestEntityTooLarge, protocol.CodeInvalidBody},
		"unsigned": {false, http.StatusUnauthorized, protocol.CodeMissingSignature},
	} {
		t.Run(name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+catalogtest.MountPath, bytes.NewReader(body))
			require.NoError(t, err)
			if tc.sign {
				req.Header.Set(catalogtest.SignatureHeader, catalogtest.MustKey(catalogtest.Key).Sign(time.Now(), body))
			}
			resp := sendReadingAtOnce(t, ln.Addr().String(), req)
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			assert.Equal(t, tc.status, resp.StatusCode, "body: %s", got)
			assert.Equal(t, catalogtest.ContentType, resp.Header.Get("Content-Type"))
			assert.True(t, strings.Contains(string(got), `"code":"`+string(tc.code)+`"`), "body: %s", got)
		})
	}
}

// sendReadingAtOnce sends req over a connection of its own to addr and
// reads the answer while the body is still being written. fasthttp answers
// a body over its limit and closes the connection at once, with the rest
// of the body unread, which resets it: net/http's client, which reads the
// answer only once it has written the body, then often sees the reset and
// not the answer, which has arrived before it.
func sendReadingAtOnce(t *testing.T, addr string, req *http.Request) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	written := make(chan struct{})
	go func() {
		defer close(written)
		_ = req.Write(conn) // a reset while writing is expected: the answer is read below
	}()
	t.Cleanup(func() { conn.Close(); <-written })
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	require.NoError(t, err)
	return resp
}

func TestNewAppSetsServerLimits(t *testing.T) {
	cfg := newApp(catalogtest.NewDemo(t)).Config()
	assert.Equal(t, bodyLimit, cfg.BodyLimit)
	assert.Greater(t, cfg.BodyLimit, coreBodyLimit)
	assert.Positive(t, cfg.ReadTimeout)
	assert.Positive(t, cfg.WriteTimeout)
	assert.Positive(t, cfg.IdleTimeout)
}
