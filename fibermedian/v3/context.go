package fibermedian

import (
	"github.com/gofiber/fiber/v3"

	"github.com/median-go/median/internal/fallbackctx"
)

// newContext returns the context the core runs under for one fiber request:
// c.Context() (its values and, when a middleware such as timeout set one,
// its deadline), falling back to the request's locals (c.Locals, held on
// fasthttp's RequestCtx) while the request is served. Detach it before the
// handler returns.
func newContext(c fiber.Ctx) *fallbackctx.Context {
	return fallbackctx.New(c.Context(), func(key any) any { return c.Locals(key) })
}
