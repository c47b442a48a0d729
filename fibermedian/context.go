package fibermedian

import (
	"context"
	"sync"

	"github.com/gofiber/fiber/v2"
)

// fiberContext is the context the core runs under for one fiber request:
// c.UserContext() (its cancellation, deadline and values), falling back
// to the fiber context's locals (c.Locals) for a key the user context does
// not hold. It reads the locals only until the adapter's handler returns:
// fiber then reuses c for another request, and a goroutine that kept the
// context (a tool that outlived its timeout) must not read it.
type fiberContext struct {
	context.Context
	mu sync.RWMutex
	c  *fiber.Ctx // nil once detached
}

var _ context.Context = (*fiberContext)(nil)

func newContext(c *fiber.Ctx) *fiberContext {
	return &fiberContext{Context: c.UserContext(), c: c}
}

// Value returns the user context's value for key or, when it has none,
// the fiber context's local (c.Locals) while the request is served.
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

// detach stops the fallback to the fiber context, before fiber reuses it.
func (f *fiberContext) detach() {
	f.mu.Lock()
	f.c = nil
	f.mu.Unlock()
}
