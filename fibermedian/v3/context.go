package fibermedian

import (
	"context"
	"sync"

	"github.com/gofiber/fiber/v3"
)

// fiberContext is the context the core runs under for one fiber request:
// c.Context() (its values and, when a middleware such as timeout set one,
// its deadline), falling back to the request's locals (c.Locals, held on
// fasthttp's RequestCtx) for a key c.Context() does not hold. It reads the
// locals only until the adapter's handler returns: fiber then reuses c and
// fasthttp its RequestCtx for another request, and a goroutine that kept
// the context (a tool that outlived its timeout) must not read them.
type fiberContext struct {
	context.Context
	mu sync.RWMutex
	c  fiber.Ctx // nil once detached
}

var _ context.Context = (*fiberContext)(nil)

func newContext(c fiber.Ctx) *fiberContext {
	return &fiberContext{Context: c.Context(), c: c}
}

// Value returns c.Context()'s value for key or, when it has none, the
// request's local (c.Locals) while the request is served.
func (f *fiberContext) Value(key any) any {
	if v := f.Context.Value(key); v != nil {
		return v
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.c == nil {
		return nil
	}
	return f.c.Locals(key)
}

// detach stops the fallback to the locals, before fiber reuses c.
func (f *fiberContext) detach() {
	f.mu.Lock()
	f.c = nil
	f.mu.Unlock()
}
