// Package fallbackctx is the context a framework adapter gives the core
// for one request: the request's own context (its cancellation, deadline
// and values), whose Value falls back to the framework's per-request store
// (gin's and echo's c.Set, fiber's c.Locals), so that a tool sees what
// earlier middleware put there.
//
// Frameworks reuse their per-request objects once the handler returns, and
// a goroutine may keep the context longer (a tool that outlived its
// timeout): the adapter calls Detach when its handler returns, and the
// fallback answers nothing from then on.
package fallbackctx

import (
	"context"
	"sync"
)

// Context is a request's context with a fallback for Value.
type Context struct {
	context.Context
	mu     sync.RWMutex
	lookup func(key any) any // nil once detached
}

var _ context.Context = (*Context)(nil)

// New returns parent whose Value asks lookup for the keys parent does not
// hold, until Detach. lookup must not panic on any comparable key.
func New(parent context.Context, lookup func(key any) any) *Context {
	return &Context{Context: parent, lookup: lookup}
}

// Value returns the parent's value for key or, when it has none and the
// context is not detached, the framework's.
func (c *Context) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.lookup == nil {
		return nil
	}
	return c.lookup(key)
}

// Detach stops the fallback, before the framework reuses its store.
func (c *Context) Detach() {
	c.mu.Lock()
	c.lookup = nil
	c.mu.Unlock()
}
