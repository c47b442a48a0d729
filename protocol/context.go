package protocol

import "context"

type callKey struct{}

// ContextWithCall returns a copy of ctx carrying call. Adapters' middleware
// uses it so that code below a handler that sees only a context.Context can
// still find the call.
func ContextWithCall(ctx context.Context, call *Call) context.Context {
	return context.WithValue(ctx, callKey{}, call)
}

// CallFromContext returns the verified call that middleware stored on ctx,
// and false when there is none.
func CallFromContext(ctx context.Context) (*Call, bool) {
	call, ok := ctx.Value(callKey{}).(*Call)
	return call, ok && call != nil
}
