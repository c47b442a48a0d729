package ginmedian

import (
	"context"
	"reflect"
	"sync"

	"github.com/gin-gonic/gin"
)

// ginContext is the context the core runs under for one gin request: the
// request's context (its cancellation, deadline and values), falling back
// to the gin context's keys (c.Set) for a key the request's context does
// not hold. It reads the keys only until the adapter's handler returns:
// gin then reuses c for another request, and a goroutine that kept the
// context (a tool that outlived its timeout) must not read it.
type ginContext struct {
	context.Context
	mu sync.RWMutex
	c  *gin.Context // nil once detached

	// nextReturned records that the gin chain after Middleware returned
	// normally (it is false when the call was answered before it, or when
	// it panicked). Only the request's goroutine touches it.
	nextReturned bool
}

var _ context.Context = (*ginContext)(nil)

// contextKey finds the ginContext under the verified call's context.
type contextKey struct{}

func newContext(c *gin.Context) *ginContext {
	return &ginContext{Context: c.Request.Context(), c: c}
}

// contextFrom returns the ginContext ctx was derived from.
func contextFrom(ctx context.Context) *ginContext {
	return ctx.Value(contextKey{}).(*ginContext)
}

// Value returns the request context's value for key or, when it has none,
// the gin context's (c.Get) while the request is served.
func (g *ginContext) Value(key any) any {
	if key == (contextKey{}) {
		return g
	}
	if v := g.Context.Value(key); v != nil {
		return v
	}
	if key == nil || !reflect.TypeOf(key).Comparable() { // c.Get would panic hashing it
		return nil
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.c == nil {
		return nil
	}
	v, _ := g.c.Get(key)
	return v
}

// detach stops the fallback to the gin context, before gin reuses it.
func (g *ginContext) detach() {
	g.mu.Lock()
	g.c = nil
	g.mu.Unlock()
}
