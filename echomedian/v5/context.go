package echomedian

import (
	"context"
	"sync"

	"github.com/labstack/echo/v5"
)

// echoContext is the context the core runs under for one echo request: the
// request's context (its cancellation, deadline and values), falling back
// to the echo context's store (c.Set) for a string key the request's
// context does not hold. It reads the store only until the adapter's
// handler returns: echo then reuses c for another request, and a goroutine
// that kept the context (a tool that outlived its timeout) must not read
// it.
type echoContext struct {
	context.Context
	mu   sync.RWMutex
	c    *echo.Context    // nil once detached
	next echo.HandlerFunc // the handler after Middleware; nil for New
}

var _ context.Context = (*echoContext)(nil)

// contextKey finds the echoContext under the verified call's context.
type contextKey struct{}

func newContext(c *echo.Context, next echo.HandlerFunc) *echoContext {
	return &echoContext{Context: c.Request().Context(), c: c, next: next}
}

// contextFrom returns the echoContext ctx was derived from.
func contextFrom(ctx context.Context) *echoContext {
	return ctx.Value(contextKey{}).(*echoContext)
}

// Value returns the request context's value for key or, when it has none
// and key is a string, the echo context's (c.Get) while the request is
// served.
func (e *echoContext) Value(key any) any {
	if key == (contextKey{}) {
		return e
	}
	if v := e.Context.Value(key); v != nil {
		return v
	}
	name, ok := key.(string)
	if !ok {
		return nil
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.c == nil {
		return nil
	}
	return e.c.Get(name)
}

// detach stops the fallback to the echo context, before echo reuses it.
func (e *echoContext) detach() {
	e.mu.Lock()
	e.c = nil
	e.mu.Unlock()
}
