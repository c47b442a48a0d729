package fibermedian

import (
	"github.com/gofiber/fiber/v2"

	"github.com/median-go/median/internal/adapt/fallbackctx"
)

// newContext returns the context the core runs under for one fiber request:
// c.UserContext(), falling back to the fiber context's locals (c.Locals)
// while the request is served. Detach it before the handler returns.
func newContext(c *fiber.Ctx) *fallbackctx.Context {
	f := &fiberContext{c: c}
	f.Init(c.UserContext(), f)
	return &f.Context
}

// fiberContext holds a fallbackctx.Context and the fiber context it falls
// back to, in one allocation.
type fiberContext struct {
	fallbackctx.Context
	c *fiber.Ctx
}

// Lookup is the context's fallback: fiber's per-request store (c.Locals).
func (f *fiberContext) Lookup(key any) any { return f.c.Locals(key) }
