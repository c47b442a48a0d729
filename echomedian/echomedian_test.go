package echomedian_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/median-go/median/echomedian"
	"github.com/median-go/median/internal/testonly/adaptertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The shared adapter table and the conformance suite run against
// echomedian in internal/testonly/adapters.

// signed returns a signed POST of body to adaptertest.Path on ctx.
func signed(ctx context.Context, body []byte) *http.Request {
	return adaptertest.NewSignedRequest(http.MethodPost, adaptertest.Path, body).WithContext(ctx)
}

// TestReturnedErrorIsTheAnswer checks that an error the handler returns
// is answered through the core, so echo's error handler never writes its
// own page on the Median path, and that the answer is kept for replays.
func TestReturnedErrorIsTheAnswer(t *testing.T) {
	h, _ := adaptertest.NewHandler()
	e := echo.New()
	errorHandlerRan := false
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		errorHandlerRan = true
		_ = c.String(http.StatusTeapot, "echo's page")
	}
	runs := 0
	echomedian.Mount(e, adaptertest.Path, h, func(c echo.Context) error {
		runs++
		return errors.New("the order service is down")
	})

	body := adaptertest.ToolCall(adaptertest.ToolCustom, "call_err", `{}`)
	var first string
	for i := range 2 {
		w := httptest.NewRecorder()
		e.ServeHTTP(w, signed(context.Background(), body))
		assert.Equal(t, http.StatusOK, w.Code)
		// Not meant for the agent: it reads the tool's name and a reference.
		adaptertest.RequireHiddenFailure(t, adaptertest.ToolCustom, w.Body.Bytes())
		if i == 0 {
			first = w.Body.String()
		}
		assert.Equal(t, first, w.Body.String(), "the repeat gets the kept answer")
	}
	assert.Equal(t, 1, runs, "the repeat gets the kept answer")
	assert.False(t, errorHandlerRan)
}

// TestToolSeesTheRequestsDeadline checks that the tool's ctx keeps the
// request context's deadline while it falls back to echo's store.
func TestToolSeesTheRequestsDeadline(t *testing.T) {
	h, runs := adaptertest.NewHandler()
	e := echo.New()
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			c.Set(adaptertest.ValueKey, "from-echo")
			return next(c)
		}
	})
	echomedian.Mount(e, adaptertest.Path, h)

	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	w := httptest.NewRecorder()
	e.ServeHTTP(w, signed(ctx, adaptertest.ToolCall(adaptertest.ToolValue, "call_deadline", `{}`)))
	assert.JSONEq(t, `{"result":{"value":"from-echo"}}`, w.Body.String())

	ctxs := runs.Contexts()
	require.Len(t, ctxs, 1)
	want, _ := ctx.Deadline()
	got, ok := ctxs[0].Deadline()
	assert.True(t, ok)
	assert.Equal(t, want, got)
	cancel()
	assert.ErrorIs(t, ctxs[0].Err(), context.Canceled, "the tool's ctx is cancelled with the request's")
}

// TestFlusherAssertionStillWorks: behind Middleware, the writer under
// echo's response still satisfies http.Flusher for a handler that asserts
// it, as net/http's did, and that flush ends the chain.
func TestFlusherAssertionStillWorks(t *testing.T) {
	h, _ := adaptertest.NewHandler()
	e := echo.New()
	dispatched := false
	flush := func(c echo.Context) error {
		f, ok := c.Response().Writer.(http.Flusher)
		require.True(t, ok, "the writer under echo's response is a %T, not an http.Flusher", c.Response().Writer)
		f.Flush()
		return nil
	}
	dispatch := func(c echo.Context) error { dispatched = true; return echomedian.Respond(c, "late", nil) }
	echomedian.Mount(e, adaptertest.Path, h, flush, dispatch)
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, signed(context.Background(), adaptertest.ToolCall(adaptertest.ToolCustom, "flusher_1", `{}`)))
	assert.True(t, rec.Flushed)
	assert.False(t, dispatched, "nothing runs after the handler that flushed")
	assert.Empty(t, rec.Body.String())
}

// TestQueryReadBeforeIsDropped: echo keeps the query parameters a handler
// read before the middleware (c.QueryParams); the handlers behind it find
// none of them, as the query is not signed.
func TestQueryReadBeforeIsDropped(t *testing.T) {
	h, _ := adaptertest.NewHandler()
	e := echo.New()
	var before string
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			before = c.QueryParams().Get("tenant") // echo keeps the parsed query on c
			return next(c)
		}
	})
	var tenant, all string
	echomedian.Mount(e, adaptertest.Path, h, func(c echo.Context) error {
		tenant, all = c.QueryParam("tenant"), c.QueryParams().Encode()
		return echomedian.Respond(c, "ok", nil)
	})
	body := adaptertest.ToolCall(adaptertest.ToolCustom, "query_before", `{}`)
	req := adaptertest.NewSignedRequest(http.MethodPost, adaptertest.Path+"?tenant=other", body)
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	assert.JSONEq(t, `{"result":"ok"}`, rec.Body.String())
	assert.Equal(t, "other", before, "the handler before the middleware read the query")
	assert.Empty(t, tenant, "the handler behind the middleware finds no query parameter")
	assert.Empty(t, all)
}
