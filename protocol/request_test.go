package protocol

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// spyReader records how many bytes were read and can fail every read.
type spyReader struct {
	mu    sync.Mutex
	r     io.Reader
	fail  error
	calls int
	n     int64
}

func (s *spyReader) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.fail != nil {
		return 0, s.fail
	}
	n, err := s.r.Read(p)
	s.n += int64(n)
	return n, err
}

func (s *spyReader) reads() (calls int, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls, s.n
}

// endless yields 'x' forever.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

func TestMethodNotAllowed(t *testing.T) {
	// Even without a usable key: the method is checked first.
	t.Setenv(keyEnv, "")
	hNoKey, _ := New(Config{Logger: discardLogger()})
	h, _ := newHandler(t, Config{})
	for _, method := range []string{http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodHead, http.MethodOptions, http.MethodConnect, http.MethodTrace, "post", "BREW"} {
		t.Run(method, func(t *testing.T) {
			for _, hh := range []*Handler{h, hNoKey} {
				spy := &spyReader{r: strings.NewReader("{}")}
				resp := hh.Serve(context.Background(), Request{Method: method, Signature: mustParseKey(testKey).Sign(testNow, []byte("{}")), Body: spy, ContentLength: -1})
				requireError(t, resp, http.StatusMethodNotAllowed, CodeMethodNotAllowed)
				assert.Equal(t, "GET, POST", resp.Allow)
				calls, _ := spy.reads()
				assert.Zero(t, calls, "the body is not read")
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(method, "/median", strings.NewReader("{}")))
			assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
			assert.Equal(t, "GET, POST", rec.Header().Get("Allow"))
			assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
		})
	}
	// GET and POST never carry Allow.
	assert.Empty(t, h.Serve(context.Background(), get()).Allow)
}

// TestHeaderChecksBeforeBody: a missing, malformed or stale header is refused
// without reading the body, whatever the body is.
func TestHeaderChecksBeforeBody(t *testing.T) {
	h, _ := newHandler(t, Config{MaxBodyBytes: 64})
	k := mustParseKey(testKey)
	headers := map[Code]string{
		CodeMissingSignature:   "",
		CodeMalformedSignature: "t=1767225600000,v1=nothex",
		CodeStaleTimestamp:     k.Sign(testNow.Add(-time.Hour), []byte("{}")),
	}
	bodies := map[string]func() (io.Reader, int64){
		"broken reader":         func() (io.Reader, int64) { return &spyReader{fail: errors.New("connection reset")}, -1 },
		"oversized, known":      func() (io.Reader, int64) { return &spyReader{r: endless{}}, 1 << 30 },
		"oversized, unknown":    func() (io.Reader, int64) { return &spyReader{r: endless{}}, -1 },
		"not JSON, small":       func() (io.Reader, int64) { return &spyReader{r: strings.NewReader("<html>")}, 6 },
		"valid diagnostics req": func() (io.Reader, int64) { return &spyReader{r: strings.NewReader(`{"op":"diagnostics"}`)}, 20 },
	}
	for code, header := range headers {
		for name, mk := range bodies {
			t.Run(string(code)+"/"+name, func(t *testing.T) {
				for _, method := range []string{http.MethodPost, http.MethodGet} {
					r, n := mk()
					resp := h.Serve(context.Background(), Request{Method: method, Signature: header, Body: r, ContentLength: n})
					requireError(t, resp, http.StatusUnauthorized, code)
					calls, _ := r.(*spyReader).reads()
					assert.Zero(t, calls, "the body was read before the header was checked")
				}
			})
		}
	}
}

func TestBodyLimit(t *testing.T) {
	const limit = 100
	h, _ := newHandler(t, Config{MaxBodyBytes: limit})
	k := mustParseKey(testKey)
	wrongSig := mustParseKey(otherKey).Sign(testNow, nil)

	t.Run("declared length over the limit is refused unread", func(t *testing.T) {
		spy := &spyReader{r: endless{}}
		resp := h.Serve(context.Background(), Request{Method: http.MethodPost, Signature: wrongSig, Body: spy, ContentLength: limit + 1})
		msg := requireError(t, resp, http.StatusRequestEntityTooLarge, CodeInvalidBody)
		assert.Contains(t, msg, "100-byte")
		calls, _ := spy.reads()
		assert.Zero(t, calls)
	})
	t.Run("unknown length is read at most limit+1 bytes", func(t *testing.T) {
		spy := &spyReader{r: endless{}}
		resp := h.Serve(context.Background(), Request{Method: http.MethodPost, Signature: wrongSig, Body: spy, ContentLength: -1})
		requireError(t, resp, http.StatusRequestEntityTooLarge, CodeInvalidBody)
		_, n := spy.reads()
		assert.LessOrEqual(t, n, int64(limit+1))
		assert.Greater(t, n, int64(limit))
	})
	t.Run("a lying small Content-Length is still capped", func(t *testing.T) {
		spy := &spyReader{r: endless{}}
		resp := h.Serve(context.Background(), Request{Method: http.MethodPost, Signature: wrongSig, Body: spy, ContentLength: 10})
		requireError(t, resp, http.StatusRequestEntityTooLarge, CodeInvalidBody)
		_, n := spy.reads()
		assert.LessOrEqual(t, n, int64(limit+1))
	})
	t.Run("oversized BodyBytes", func(t *testing.T) {
		body := bytes.Repeat([]byte(" "), limit+1)
		resp := h.Serve(context.Background(), Request{Method: http.MethodPost, Signature: k.Sign(testNow, body), BodyBytes: body})
		requireError(t, resp, http.StatusRequestEntityTooLarge, CodeInvalidBody)
	})
	t.Run("exactly the limit is read and checked", func(t *testing.T) {
		body := append(bytes.Repeat([]byte(" "), limit-20), `{"op":"diagnostics"}`...)
		require.Len(t, body, limit)
		for _, cl := range []int64{-1, limit} {
			resp := h.Serve(context.Background(), Request{Method: http.MethodPost, Signature: k.Sign(testNow, body), Body: bytes.NewReader(body), ContentLength: cl})
			requireReport(t, resp)
		}
	})
	t.Run("through net/http", func(t *testing.T) {
		body := bytes.Repeat([]byte("x"), limit+1)
		resp := serveHTTP(h, http.MethodPost, k.Sign(testNow, body), string(body))
		requireError(t, resp, http.StatusRequestEntityTooLarge, CodeInvalidBody)
	})
	t.Run("default limit is 1 MiB", func(t *testing.T) {
		hd, _ := newHandler(t, Config{})
		spy := &spyReader{r: endless{}}
		resp := hd.Serve(context.Background(), Request{Method: http.MethodPost, Signature: wrongSig, Body: spy, ContentLength: -1})
		requireError(t, resp, http.StatusRequestEntityTooLarge, CodeInvalidBody)
		_, n := spy.reads()
		assert.Equal(t, int64(1<<20+1), n)
	})
}

// offerReader hands out body in pieces of at most piece bytes, then fails
// with fail (nil: io.EOF), and records the most room a Read was offered
// beyond the bytes already handed out: what the reader of the body had
// reserved for it at that point.
type offerReader struct {
	body     []byte
	piece    int
	fail     error
	given    int
	reserved []int // given + len(p), per Read
}

func (o *offerReader) Read(p []byte) (int, error) {
	o.reserved = append(o.reserved, o.given+len(p))
	if o.given == len(o.body) {
		if o.fail != nil {
			return 0, o.fail
		}
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), o.piece)], o.body[o.given:])
	o.given += n
	return n, nil
}

// TestBodyMemoryFollowsArrivedBytes: the header checks need no secret
// (t=<now>,v1=<64 zeros> passes them), so the room reserved for a body
// follows the bytes that arrive, not the length declared: a client that
// declares 1 MiB and sends one byte costs a few KiB, not 1 MiB. An honest
// body still ends in one buffer of its declared length.
func TestBodyMemoryFollowsArrivedBytes(t *testing.T) {
	h, _ := newHandler(t, Config{})
	keyless := fmt.Sprintf("t=%d,v1=%s", testNow.UnixMilli(), strings.Repeat("0", 64))

	t.Run("declared 1 MiB, one byte sent", func(t *testing.T) {
		r := &offerReader{body: []byte("{"), piece: 1, fail: io.ErrUnexpectedEOF}
		resp := h.Serve(context.Background(), Request{Method: http.MethodPost, Signature: keyless, Body: r, ContentLength: 1 << 20})
		requireError(t, resp, http.StatusBadRequest, CodeInvalidBody)
		require.NotEmpty(t, r.reserved)
		assert.LessOrEqual(t, slices.Max(r.reserved), 64<<10, "room reserved for one byte sent (per Read: %v)", r.reserved)
	})
	t.Run("an honest body of the limit, sent in pieces", func(t *testing.T) {
		body := append(bytes.Repeat([]byte(" "), defaultMaxBodyBytes-20), `{"op":"diagnostics"}`...)
		r := &offerReader{body: body, piece: 1000}
		resp := h.Serve(context.Background(), Request{Method: http.MethodPost, Signature: mustParseKey(testKey).Sign(testNow, body), Body: r, ContentLength: int64(len(body))})
		requireReport(t, resp)
		given := 0
		for i, room := range r.reserved {
			if !assert.LessOrEqual(t, room, max(64<<10, 2*given), "read %d: room for %d bytes after %d arrived", i, room, given) ||
				!assert.LessOrEqual(t, room, len(body)+1, "read %d: never more than the declared length and one byte", i) {
				break
			}
			given = min(given+1000, len(body))
		}
		assert.Equal(t, len(body)+1, slices.Max(r.reserved), "the last buffer is the declared length and one byte")
	})
	t.Run("a usual body is read into one buffer", func(t *testing.T) {
		body := []byte(`{"op":"diagnostics"}`)
		r := &offerReader{body: body, piece: len(body)}
		requireReport(t, h.Serve(context.Background(), Request{Method: http.MethodPost, Signature: mustParseKey(testKey).Sign(testNow, body), Body: r, ContentLength: int64(len(body))}))
		assert.Equal(t, []int{len(body) + 1, len(body) + 1}, r.reserved, "one buffer of the declared length and one byte, to see the end")
	})
}

func TestBodyReadError(t *testing.T) {
	h, _ := newHandler(t, Config{})
	spy := &spyReader{fail: errors.New("connection reset")}
	resp := h.Serve(context.Background(), Request{Method: http.MethodPost, Signature: mustParseKey(testKey).Sign(testNow, nil), Body: spy, ContentLength: -1})
	msg := requireError(t, resp, http.StatusBadRequest, CodeInvalidBody)
	assert.Contains(t, msg, "could not be read")
}

// TestOrderOfChecks walks PROTOCOL.md §5: each request fails two checks and
// must be answered by the earlier one.
func TestOrderOfChecks(t *testing.T) {
	runs := &int64Counter{}
	h, _ := newHandler(t, Config{MaxBodyBytes: 512, Tools: []*Tool{echoTool(runs)}})
	k, wrong := mustParseKey(testKey), mustParseKey(otherKey)
	big := strings.Repeat("x", 600)
	req := func(method string, key Key, at time.Time, body string) Request {
		return Request{Method: method, Signature: key.Sign(at, []byte(body)), Body: strings.NewReader(body), ContentLength: -1}
	}
	tests := []struct {
		name string
		req  Request
		want Code
	}{
		{"method before key/signature", Request{Method: http.MethodPut}, CodeMethodNotAllowed},
		{"signature present before body size", Request{Method: http.MethodPost, Body: strings.NewReader(big), ContentLength: -1}, CodeMissingSignature},
		{"freshness before body size", req(http.MethodPost, k, testNow.Add(-time.Hour), big), CodeStaleTimestamp},
		{"body size before MAC", req(http.MethodPost, wrong, testNow, big), CodeInvalidBody},
		{"MAC before body shape", req(http.MethodPost, wrong, testNow, "not json"), CodeInvalidSignature},
		{"body shape before tool lookup", req(http.MethodPost, k, testNow, `{"tool":"nope","toolCallId":"c","input":{}}`), CodeInvalidBody},
		{"op before anything else in the body", req(http.MethodPost, k, testNow, `{"op":"reindex","tool":"echo"}`), CodeUnknownOp},
		{"tool lookup before input schema", req(http.MethodPost, k, testNow, toolCall("nope", "c1", `{"orderId":"not a number"}`)), CodeUnknownTool},
		{"input schema before run", req(http.MethodPost, k, testNow, toolCall("echo", "c2", `{"orderId":"x"}`)), CodeInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := h.Serve(context.Background(), tt.req)
			status := tt.want.status()
			if tt.name == "body size before MAC" {
				status = http.StatusRequestEntityTooLarge
			}
			requireError(t, resp, status, tt.want)
		})
	}
	assert.Zero(t, runs.get())

	// And the no-key check sits between method and signature.
	t.Setenv(keyEnv, "")
	hk, _ := New(Config{Logger: discardLogger()})
	requireError(t, hk.Serve(context.Background(), Request{Method: http.MethodPost, Signature: "garbage"}), http.StatusInternalServerError, CodeMissingSecret)
}

// TestServeHTTPMatchesServe: the http.Handler answers exactly like Serve,
// with Content-Type application/json on every answer.
func TestServeHTTPMatchesServe(t *testing.T) {
	h, _ := newHandler(t, Config{Tools: []*Tool{echoTool(nil)}, DisableReplayProtection: true})
	k := mustParseKey(testKey)
	cases := []struct{ method, sig, body string }{
		{http.MethodPost, k.Sign(testNow, []byte(toolCall("echo", "c", `{"orderId":7}`))), toolCall("echo", "c", `{"orderId":7}`)},
		{http.MethodGet, k.Sign(testNow, nil), ""},
		{http.MethodPost, "", "{}"},
		{http.MethodPost, k.Sign(testNow, []byte("[]")), "[]"},
		{http.MethodDelete, "", ""},
	}
	for _, c := range cases {
		want := h.Serve(context.Background(), Request{Method: c.method, Signature: c.sig, BodyBytes: []byte(c.body)})
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(c.method, "/median", strings.NewReader(c.body))
		if c.sig != "" {
			req.Header.Set("median-signature", c.sig)
		}
		h.ServeHTTP(rec, req)
		assert.Equal(t, want.Status, rec.Code)
		assert.Equal(t, string(want.Body), rec.Body.String())
		assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	}
}
