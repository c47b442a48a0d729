package fibermedian

import (
	"github.com/gofiber/fiber/v2"

	"github.com/median-go/median/internal/fallbackctx"
)

// newContext returns the context the core runs under for one fiber request:
// c.UserContext(), falling back to the fiber context's locals (c.Locals)
// while the request is served. Detach it before the handler returns.
func newContext(c *fiber.Ctx) *fallbackctx.Context {
	return fallbackctx.New(c.UserContext(), func(key any) any { return c.Locals(key) })
}
