package ginmedian

import (
	"context"
	"reflect"

	"github.com/gin-gonic/gin"

	"github.com/median-go/median/internal/adapt/fallbackctx"
)

// ginContext is the context the core runs under for one gin request: the
// request's context, falling back to the gin context's keys (c.Set) while
// the request is served (see internal/adapt/fallbackctx), and carrying what the
// middleware needs to know about the chain after it.
type ginContext struct {
	fallbackctx.Context
	c *gin.Context

	// nextReturned records that the gin chain after Middleware returned
	// normally (it is false when the call was answered before it, or when
	// it panicked). Only the request's goroutine touches it.
	nextReturned bool
}

// contextKey finds the ginContext under the verified call's context.
type contextKey struct{}

func newContext(c *gin.Context) *ginContext {
	g := &ginContext{c: c}
	g.Init(c.Request.Context(), g)
	return g
}

// Lookup is the context's fallback: gin's per-request store (c.Set).
func (g *ginContext) Lookup(key any) any {
	if key == nil || !reflect.TypeOf(key).Comparable() { // c.Get would panic hashing it
		return nil
	}
	v, _ := g.c.Get(key)
	return v
}

func (g *ginContext) Value(key any) any {
	if key == (contextKey{}) {
		return g
	}
	return g.Context.Value(key)
}

// contextFrom returns the ginContext ctx was derived from.
func contextFrom(ctx context.Context) *ginContext {
	return ctx.Value(contextKey{}).(*ginContext)
}
