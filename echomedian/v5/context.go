package echomedian

import (
	"context"

	"github.com/labstack/echo/v5"

	"github.com/median-go/median/internal/fallbackctx"
)

// echoContext is the context the core runs under for one echo request: the
// request's context, falling back to the echo context's store (c.Set) for a
// string key while the request is served (see internal/fallbackctx), and
// carrying what Respond needs in middleware mode.
type echoContext struct {
	*fallbackctx.Context
	c    *echo.Context
	next echo.HandlerFunc // the handler after Middleware; nil for New
}

// contextKey finds the echoContext under the verified call's context.
type contextKey struct{}

func newContext(c *echo.Context, next echo.HandlerFunc) *echoContext {
	lookup := func(key any) any {
		if name, ok := key.(string); ok {
			return c.Get(name)
		}
		return nil
	}
	return &echoContext{Context: fallbackctx.New(c.Request().Context(), lookup), c: c, next: next}
}

// Value finds the echoContext itself under contextKey, and every other key
// as the fallback context does.
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
