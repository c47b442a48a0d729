package fallbackctx

import (
	"context"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type key struct{}

// otherKey is the key of a value set on a context derived from New's.
type otherKey struct{}

func TestValueFallsBackUntilDetached(t *testing.T) {
	parent := context.WithValue(context.Background(), key{}, "from the request")
	store := map[any]any{"requestid": "r-1", key{}: "shadowed"}
	ctx := New(parent, lookupFunc(func(k any) any { return store[k] }))

	if got := ctx.Value(key{}); got != "from the request" {
		t.Fatalf("the request's own value comes first, got %v", got)
	}
	if got := ctx.Value("requestid"); got != "r-1" {
		t.Fatalf("fallback: got %v", got)
	}
	if got := ctx.Value("missing"); got != nil {
		t.Fatalf("missing key: got %v", got)
	}
	derived := context.WithValue(ctx, otherKey{}, 1)
	if got := derived.Value("requestid"); got != "r-1" {
		t.Fatalf("a derived context reaches the fallback: got %v", got)
	}

	ctx.Detach()
	if got := ctx.Value("requestid"); got != nil {
		t.Fatalf("after Detach the store is not read: got %v", got)
	}
	if got := ctx.Value(key{}); got != "from the request" {
		t.Fatalf("after Detach the request's values remain: got %v", got)
	}
}

// TestDetachRacesWithValue: run with -race; a tool goroutine may read while
// the adapter detaches.
func TestDetachRacesWithValue(t *testing.T) {
	store := map[any]any{"k": "v"}
	var mu sync.Mutex
	ctx := New(context.Background(), lookupFunc(func(k any) any { mu.Lock(); defer mu.Unlock(); return store[k] }))
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				_ = ctx.Value("k")
			}
		}()
	}
	ctx.Detach()
	mu.Lock()
	store = nil // what a framework's reuse would do, after Detach
	mu.Unlock()
	wg.Wait()
	if ctx.Value("k") != nil {
		t.Fatal("detached context still reads the store")
	}
}

// lookupFunc is a function as Locals.
type lookupFunc func(key any) any

func (f lookupFunc) Lookup(key any) any { return f(key) }
