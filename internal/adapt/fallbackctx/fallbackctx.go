// Package fallbackctx is the context a framework adapter gives the core
// for one request, as protocol's "Writing an adapter" asks: the request's
// own context (its cancellation, deadline and values), whose Value falls
// back to the framework's per-request store (gin's, echo's and Hertz's
// c.Set, fiber's c.Locals), so that a tool sees what earlier middleware
// put there. chi, on net/http, needs none: its store is the request's
// context.
//
// Frameworks reuse their per-request objects once the handler returns, and
// a goroutine may keep the context longer (a tool that outlived its
// timeout): the adapter calls Detach when its handler returns, and the
// fallback answers nothing from then on.
//
// It is one of the adapters' run-time helpers (internal/adapt), imported by
// ginmedian, echomedian (v4 and v5), fibermedian (v2 and v3) and
// hertzmedian; a helper
// here imports of this module only protocol and other helpers
// (internal/testonly/surface checks), and Go's internal rule keeps it from
// code outside the module.
package fallbackctx

import (
	"context"
	"sync"
)

// Context is a request's context with a fallback for Value. An adapter
// either makes one with [New] or embeds one by value in its own context
// type and calls [Context.Init]: one allocation per request for both.
type Context struct {
	context.Context
	mu     sync.RWMutex
	locals Locals // nil once detached
}

var _ context.Context = (*Context)(nil)

// Locals is a framework's per-request store, as a Context's fallback. A
// struct holding only the framework's context pointer is stored in the
// interface without an allocation.
type Locals interface {
	// Lookup returns the value for key, or nil. It must not panic on any
	// comparable key.
	Lookup(key any) any
}

// New returns parent whose Value asks locals for the keys parent does not
// hold, until Detach.
func New(parent context.Context, locals Locals) *Context {
	c := &Context{}
	c.Init(parent, locals)
	return c
}

// Init sets up a zero Context, embedded in an adapter's own context type,
// as New does.
func (c *Context) Init(parent context.Context, locals Locals) {
	c.Context, c.locals = parent, locals
}

// Value returns the parent's value for key or, when it has none and the
// context is not detached, the framework's.
func (c *Context) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.locals == nil {
		return nil
	}
	return c.locals.Lookup(key)
}

// Detach stops the fallback, before the framework reuses its store.
func (c *Context) Detach() {
	c.mu.Lock()
	c.locals = nil
	c.mu.Unlock()
}
