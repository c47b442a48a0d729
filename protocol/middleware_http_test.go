package protocol

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// httpPost returns a signed net/http POST of body to path.
func httpPost(path, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	r.Header.Set(signatureHeader, mustParseKey(testKey).Sign(testNow, []byte(body)))
	return r
}

// TestMiddleware: next sees the call and the body as sent, answers with
// Respond; everything else is answered before next.
func TestMiddleware(t *testing.T) {
	h, _ := newHandler(t, Config{Tools: appTools("mine")})
	var seenBody string
	reached := 0
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached++
		b, _ := io.ReadAll(r.Body)
		seenBody = string(b)
		call, ok := CallFrom(r.Context())
		require.True(t, ok)
		Respond(w, r, map[string]string{"tool": call.Tool}, nil)
	})
	mw := h.Middleware(app)
	body := toolCall("mine", "mw_1", `{"a":1}`)
	rec := httptest.NewRecorder()
	mw.ServeHTTP(rec, httpPost("/", body))
	assert.Equal(t, `{"result":{"tool":"mine"}}`, rec.Body.String())
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	assert.Equal(t, body, seenBody, "the body is given back as sent")

	rec = httptest.NewRecorder()
	mw.ServeHTTP(rec, httpPost("/", body))
	assert.Equal(t, `{"result":{"tool":"mine"}}`, rec.Body.String(), "a repeat gets the kept answer")
	assert.Equal(t, 1, reached, "and next does not run again")

	rec = httptest.NewRecorder()
	mw.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body)))
	assert.Equal(t, http.StatusUnauthorized, rec.Code)
	assert.Equal(t, 1, reached)
}

// TestMiddlewarePanicIsAnsweredFirstTime: a panic in the app's handler is
// the contract's execution_failed on the first answer, even under an outer
// recovery middleware; ErrAbortHandler is passed on.
func TestMiddlewarePanicIsAnsweredFirstTime(t *testing.T) {
	h, logs := newHandler(t, Config{Tools: appTools("mine")})
	outerRecovered := false
	outer := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				if p := recover(); p != nil {
					outerRecovered = true
					http.Error(w, "Internal Server Error", http.StatusInternalServerError)
				}
			}()
			next.ServeHTTP(w, r)
		})
	}
	srv := outer(h.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		panic("app bug")
	})))
	body := toolCall("mine", "panic_1", `{}`)
	for range 2 {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httpPost("/", body))
		assert.Equal(t, http.StatusOK, rec.Code)
		assert.JSONEq(t, `{"error":{"code":"execution_failed","message":"tool mine failed unexpectedly"}}`, rec.Body.String())
	}
	assert.False(t, outerRecovered, "the panic does not reach the app's recovery")
	assert.Len(t, logs.find(t, "your handler panicked"), 1)

	abort := h.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) }))
	assert.PanicsWithValue(t, http.ErrAbortHandler, func() {
		abort.ServeHTTP(httptest.NewRecorder(), httpPost("/", toolCall("mine", "abort_1", `{}`)))
	})
	rec := httptest.NewRecorder()
	abort.ServeHTTP(rec, httpPost("/", toolCall("mine", "abort_1", `{}`)))
	assert.Contains(t, rec.Body.String(), "did not answer", "an aborted call is settled")
}

// TestMountOnServeMux: both paths and every method reach the Handler;
// nothing below the path does. (Mount's chain of handlers is
// chain_test.go's.)
func TestMountOnServeMux(t *testing.T) {
	h, _ := newHandler(t, Config{})
	mux := http.NewServeMux()
	h.Mount(mux, "api/median/")
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/api/median", 200},
		{http.MethodGet, "/api/median/", 200},
		{http.MethodPost, "/api/median/", 200},
		{http.MethodPut, "/api/median", 405},
		{http.MethodDelete, "/api/median/", 405},
		{"PURGE", "/api/median", 405},
		{http.MethodGet, "/api/median/x", 404},
	} {
		body := ""
		if tc.method == http.MethodPost {
			body = `{"op":"diagnostics"}`
		}
		r := httptest.NewRequest(tc.method, tc.path, strings.NewReader(body))
		r.Header.Set(signatureHeader, mustParseKey(testKey).Sign(testNow, []byte(body)))
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, r)
		assert.Equal(t, tc.status, rec.Code, "%s %s: %s", tc.method, tc.path, rec.Body)
		if tc.status == 405 {
			assert.Equal(t, "GET, POST", rec.Header().Get("Allow"))
		}
	}
}

// failingReader fails like a connection that timed out.
type failingReader struct{}

func (failingReader) Read([]byte) (int, error) {
	return 0, errors.New("read tcp 127.0.0.1:41489->127.0.0.1:35546: i/o timeout")
}

// TestBodyReadErrorHasNoTransportDetails: PROTOCOL.md §7.
func TestBodyReadErrorHasNoTransportDetails(t *testing.T) {
	h, logs := newHandler(t, Config{})
	req := post(`{"op":"diagnostics"}`)
	req.Body, req.BodyBytes, req.ContentLength = failingReader{}, nil, -1
	msg := requireError(t, h.Serve(context.Background(), req), http.StatusBadRequest, CodeInvalidBody)
	assert.NotContains(t, msg, "127.0.0.1")
	assert.NotContains(t, msg, "tcp")
	assert.NotContains(t, msg, "timeout")
	assert.Contains(t, msg, "could not be read")
	assert.Contains(t, logs.String(), "i/o timeout", "the log keeps the detail")
}

// TestObserverGetsTheRequestContext: the observer can join the request's
// span, and sees what the answer was.
func TestObserverGetsTheRequestContext(t *testing.T) {
	type key struct{}
	var got context.Context
	var ev Event
	tool := NewTool("t", RiskLow, "T.", func(ctx context.Context, c ToolCall[noInput]) (string, error) { return "x", nil })
	h, _ := newHandler(t, Config{Tools: []*Tool{tool}, Observer: func(ctx context.Context, e Event) { got, ev = ctx, e }})
	ctx := context.WithValue(context.Background(), key{}, "span")
	h.Serve(ctx, post(toolCall("t", "o1", `{"a":1}`)))
	require.NotNil(t, got)
	assert.Equal(t, "span", got.Value(key{}))
	assert.Equal(t, "t", ev.Tool)
	assert.Equal(t, RiskLow, ev.Risk)
	assert.Equal(t, `{"a":1}`, string(ev.Input))
	assert.Equal(t, `{"result":"x"}`, string(ev.Answer))
	assert.False(t, ev.Start.IsZero())
	assert.Less(t, ev.Duration, time.Minute)

	h.Serve(ctx, post(toolCall("t", "o1", `{"a":1}`)))
	assert.True(t, ev.Replayed)
}

// TestMiddlewareAnswersACallLeftUnanswered: a handler that writes nothing
// gets the contract's execution_failed on the first answer as on the
// repeat; a handler that wrote its own response keeps it.
func TestMiddlewareAnswersACallLeftUnanswered(t *testing.T) {
	h, _ := newHandler(t, Config{ReplayLease: time.Hour, Tools: appTools("mine")})
	silent := h.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	body := toolCall("mine", "nothing_1", `{}`)
	first := httptest.NewRecorder()
	silent.ServeHTTP(first, httpPost("/", body))
	assert.Equal(t, http.StatusOK, first.Code)
	assert.JSONEq(t, `{"error":{"code":"execution_failed","message":"the server's handler did not answer this call"}}`, first.Body.String())
	again := httptest.NewRecorder()
	silent.ServeHTTP(again, httpPost("/", body))
	assert.Equal(t, first.Body.String(), again.Body.String())

	own := h.Middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	rec := httptest.NewRecorder()
	own.ServeHTTP(rec, httpPost("/", toolCall("mine", "nothing_2", `{}`)))
	assert.Equal(t, http.StatusNoContent, rec.Code, "the handler's own answer stands")
	assert.Empty(t, rec.Body.String())
}

// TestMiddlewareOffContractEvent: the observer is told what went out when
// the app's handler writes its own response instead of Respond: the status
// it wrote, no code, no answer; a body written before a panic too. The
// repeat's event is the execution_failed kept for the toolCallId, as the
// repeat gets it.
func TestMiddlewareOffContractEvent(t *testing.T) {
	obs := &observed{}
	h, _ := newHandler(t, Config{Tools: appTools("mine"), Observer: obs.add})
	forbid := h.Middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "forbidden", http.StatusForbidden)
	}))
	rec := httptest.NewRecorder()
	forbid.ServeHTTP(rec, httpPost("/", toolCall("mine", "off_1", `{"a":1}`)))
	require.Equal(t, http.StatusForbidden, rec.Code)
	ev := obs.last(t)
	assert.True(t, ev.OffContract)
	assert.Equal(t, http.StatusForbidden, ev.Status, "the status the handler wrote")
	assert.Empty(t, ev.Code, "no contract code went out")
	assert.Empty(t, ev.Refusal)
	assert.Nil(t, ev.Answer, "the Handler did not see what the handler wrote")
	assert.False(t, ev.Replayed)
	assert.Equal(t, "mine", ev.Tool)
	assert.Equal(t, "off_1", ev.ToolCallID)
	assert.Equal(t, `{"a":1}`, string(ev.Input))

	rec = httptest.NewRecorder()
	forbid.ServeHTTP(rec, httpPost("/", toolCall("mine", "off_1", `{"a":1}`)))
	ev = obs.last(t)
	assert.False(t, ev.OffContract, "the repeat is answered from the replay store")
	assert.True(t, ev.Replayed)
	assert.Equal(t, http.StatusOK, ev.Status)
	assert.Equal(t, CodeExecutionFailed, ev.Code)
	assert.Equal(t, rec.Body.String(), string(ev.Answer), "the kept answer, as the repeat got it")

	broke := h.Middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte("half an answer"))
		panic("app bug")
	}))
	rec = httptest.NewRecorder()
	broke.ServeHTTP(rec, httpPost("/", toolCall("mine", "off_2", `{}`)))
	require.Equal(t, "half an answer", rec.Body.String())
	ev = obs.last(t)
	assert.True(t, ev.OffContract, "a response written before a panic is what went out")
	assert.Equal(t, http.StatusAccepted, ev.Status)
	assert.Empty(t, ev.Code)
	assert.Nil(t, ev.Answer)

	respond := h.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { Respond(w, r, "ok", nil) }))
	respond.ServeHTTP(httptest.NewRecorder(), httpPost("/", toolCall("mine", "off_3", `{}`)))
	ev = obs.last(t)
	assert.False(t, ev.OffContract, "Respond answers within the contract")
	assert.Equal(t, `{"result":"ok"}`, string(ev.Answer))

	silent := h.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	silent.ServeHTTP(httptest.NewRecorder(), httpPost("/", toolCall("mine", "off_4", `{}`)))
	ev = obs.last(t)
	assert.False(t, ev.OffContract, "a call left unanswered is answered by the Handler")
	assert.Equal(t, CodeExecutionFailed, ev.Code)
	assert.Equal(t, http.StatusOK, ev.Status)
}

// TestMiddlewareDropsTheQuery: Median signs no part of the URL, so next
// gets the request without its query string, and without a form a handler
// before the middleware parsed from it; the headers stay as they arrived.
func TestMiddlewareDropsTheQuery(t *testing.T) {
	h, _ := newHandler(t, Config{Tools: appTools("mine")})
	var target, rawQuery, tenant, user string
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target, rawQuery, tenant, user = r.RequestURI, r.URL.RawQuery, r.FormValue("tenant"), r.Header.Get("X-User")
		Respond(w, r, "ok", nil)
	})
	parseFirst := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			require.NoError(t, r.ParseForm()) // as a handler before the middleware might
			require.Equal(t, "other", r.Form.Get("tenant"))
			next.ServeHTTP(w, r)
		})
	}
	srv := parseFirst(h.Middleware(app))
	for i, path := range []string{"/median?tenant=other", "/median?tenant=other&x=1#frag"} {
		req := httpPost(path, toolCall("mine", fmt.Sprint("query_", i), `{}`))
		req.Header.Set("X-User", "admin")
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		assert.Equal(t, `{"result":"ok"}`, rec.Body.String())
		assert.Equal(t, "/median", target)
		assert.Empty(t, rawQuery)
		assert.Empty(t, tenant, "no query parameter reaches next, parsed before or not")
		assert.Equal(t, "admin", user, "headers are not signed, and reach next as they arrived")
		assert.True(t, strings.HasPrefix(req.URL.RawQuery, "tenant=other"), "the caller's request is left as it was")
	}
}
