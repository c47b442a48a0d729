package hertzmedian

import (
	"context"

	"github.com/cloudwego/hertz/pkg/app"

	"github.com/median-go/median/internal/adapt/fallbackctx"
)

// newContext returns the context the core runs under for one Hertz
// request: ctx, the context Hertz passed the handler, falling back to the
// request context's keys (c.Set) while the request is served. Detach it
// before the handler returns.
func newContext(ctx context.Context, c *app.RequestContext) *fallbackctx.Context {
	h := &hertzContext{c: c}
	h.Init(ctx, h)
	return &h.Context
}

// hertzContext holds a fallbackctx.Context and the Hertz request context
// it falls back to, in one allocation.
type hertzContext struct {
	fallbackctx.Context
	c *app.RequestContext
}

// Lookup is the context's fallback: Hertz's per-request store (c.Set),
// whose keys are strings.
func (h *hertzContext) Lookup(key any) any {
	s, ok := key.(string)
	if !ok {
		return nil
	}
	v, _ := h.c.Get(s)
	return v
}
