package echomedian_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v5"
	"github.com/labstack/echo/v5/middleware"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	echomedian "github.com/median-go/median/echomedian/v5"
	"github.com/median-go/median/internal/testonly/adaptertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The shared adapter table and the conformance suite run against
// echomedian/v5 in internal/testonly/adapters.

// Mount takes the echo app and its groups alike.
var (
	_ echomedian.Router = (*echo.Echo)(nil)
	_ echomedian.Router = (*echo.Group)(nil)
)

// TestErrorHandlerNeverRuns checks that what a handler behind the
// middleware returns or panics with is answered by the core, and that
// echo's HTTPErrorHandler (here one that would answer 418) never runs on
// the Median path, even with echo's Recover outside, which turns a panic
// into an error for it. A repeat gets the kept answer.
func TestErrorHandlerNeverRuns(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler echo.HandlerFunc
		want    string
	}{
		{"echo sentinel error", func(*echo.Context) error { return echo.ErrForbidden },
			""}, // not meant for the agent: the tool's name and a reference
		{"panic", func(*echo.Context) error { panic("boom") },
			`{"error":{"code":"execution_failed","message":"tool custom failed unexpectedly"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := adaptertest.NewHandler()
			e := echo.New()
			errorHandlerRan := false
			e.HTTPErrorHandler = func(c *echo.Context, err error) {
				errorHandlerRan = true
				_ = c.NoContent(http.StatusTeapot)
			}
			e.Use(middleware.Recover())
			runs := 0
			echomedian.Mount(e, "/median", h, func(c *echo.Context) error {
				runs++
				return tc.handler(c)
			})
			body := adaptertest.ToolCall(adaptertest.ToolCustom, "call_error", `{}`)
			var first string
			for i := range 2 {
				w := serve(e, http.MethodPost, "/median", body)
				assert.Equal(t, http.StatusOK, w.Code)
				assert.Equal(t, adaptertest.ContentType, w.Header().Get("Content-Type"))
				if tc.want == "" {
					adaptertest.RequireHiddenFailure(t, adaptertest.ToolCustom, w.Body.Bytes())
				} else {
					assert.JSONEq(t, tc.want, w.Body.String())
				}
				if i == 0 {
					first = w.Body.String()
				}
				assert.Equal(t, first, w.Body.String(), "the repeat gets the kept answer")
			}
			assert.Equal(t, 1, runs, "the repeat gets the kept answer")
			assert.False(t, errorHandlerRan, "echo's error handler ran on the Median path")
		})
	}
}

// TestMountRoot mounts the endpoint at the root: "/" is registered once.
func TestMountRoot(t *testing.T) {
	h, _ := adaptertest.NewHandler()
	e := echo.New()
	echomedian.Mount(e, "/", h)
	w := serve(e, http.MethodPost, "/", adaptertest.ToolCall(adaptertest.ToolEcho, "call_root", `{"text":"root"}`))
	assert.Equal(t, http.StatusOK, w.Code)
	assert.JSONEq(t, `{"result":{"text":"root","visitor":"user_7"}}`, w.Body.String())
}

// TestValuesOnTheRequestContext checks that a tool's ctx holds what the
// request's context holds (any key type) before echo's store, and that a
// non-string key never reaches the store.
func TestValuesOnTheRequestContext(t *testing.T) {
	type ctxKey struct{}
	h, runs := adaptertest.NewHandler()
	e := echo.New()
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c *echo.Context) error {
			c.Set(adaptertest.ValueKey, "from-store")
			r := c.Request()
			c.SetRequest(r.WithContext(context.WithValue(r.Context(), ctxKey{}, "from-request")))
			return next(c)
		}
	})
	echomedian.Mount(e, "/median", h)
	w := serve(e, http.MethodPost, "/median", adaptertest.ToolCall(adaptertest.ToolValue, "call_values", `{}`))
	assert.JSONEq(t, `{"result":{"value":"from-store"}}`, w.Body.String())
	ctxs := runs.Contexts()
	require.Len(t, ctxs, 1)
	assert.Equal(t, "from-request", ctxs[0].Value(ctxKey{}))
	assert.Nil(t, ctxs[0].Value(adaptertest.ValueKey), "echo's store is not read after the request")
}

// serve sends a request signed with the kit's key at the kit's clock to e.
func serve(e *echo.Echo, method, path string, body []byte) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	e.ServeHTTP(w, adaptertest.NewSignedRequest(method, path, body))
	return w
}

// TestQueryReadBeforeIsDropped: echo keeps the query parameters a handler
// read before the middleware (c.QueryParams); the handlers behind it find
// none of them, as the query is not signed.
func TestQueryReadBeforeIsDropped(t *testing.T) {
	h, _ := adaptertest.NewHandler()
	e := echo.New()
	var before string
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c *echo.Context) error {
			before = c.QueryParams().Get("tenant") // echo keeps the parsed query on c
			return next(c)
		}
	})
	var tenant, all string
	echomedian.Mount(e, adaptertest.Path, h, func(c *echo.Context) error {
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
