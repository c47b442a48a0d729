package echomedian

import (
	"context"

	"github.com/labstack/echo/v5"

	"github.com/median-go/median/internal/adapt/fallbackctx"
)

// echoContext is the context the core runs under for one echo request: the
// request's context, falling back to the echo context's store (c.Set) for a
// string key while the request is served (see internal/adapt/fallbackctx), and
// carrying what Respond needs in middleware mode.
type echoContext struct {
	fallbackctx.Context
	c    *echo.Context
	next echo.HandlerFunc // the handler after Middleware; nil for New
}

// contextKey finds the echoContext under the verified call's context.
type contextKey struct{}

func newContext(c *echo.Context, next echo.HandlerFunc) *echoContext {
	e := &echoContext{c: c, next: next}
	e.Init(c.Request().Context(), e)
	return e
}

// Lookup is the context's fallback: echo's per-request store (c.Set),
// for a string key.
func (e *echoContext) Lookup(key any) any {
	if name, ok := key.(string); ok {
		return e.c.Get(name)
	}
	return nil
}

func (e *echoContext) Value(key any) any {
	if key == (contextKey{}) {
		return e
	}
	return e.Context.Value(key)
}

// contextFrom returns the echoContext ctx was derived from.
func contextFrom(ctx context.Context) *echoContext {
	return ctx.Value(contextKey{}).(*echoContext)
}
