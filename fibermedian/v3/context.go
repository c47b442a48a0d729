package fibermedian

import (
	"github.com/gofiber/fiber/v3"

	"github.com/median-go/median/internal/adapt/fallbackctx"
)

// newContext returns the context the core runs under for one fiber request:
// c.Context() (its values and, when a middleware such as timeout set one,
// its deadline), falling back to the request's locals (c.Locals, held on
// fasthttp's RequestCtx) while the request is served. Detach it before the
// handler returns.
func newContext(c fiber.Ctx) *fallbackctx.Context {
	f := &fiberContext{c: c}
	f.Init(c.Context(), f)
	return &f.Context
}

// fiberContext holds a fallbackctx.Context and the fiber context it falls
// back to, in one allocation.
type fiberContext struct {
	fallbackctx.Context
	c fiber.Ctx
}

// Lookup is the context's fallback: fiber's per-request store (c.Locals).
func (f *fiberContext) Lookup(key any) any { return f.c.Locals(key) }
