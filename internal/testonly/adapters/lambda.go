package adapters

import (
	"github.com/median-go/median/internal/testonly/adaptertest"
	"github.com/median-go/median/internal/testonly/lambdatest"
	"github.com/median-go/median/lambdamedian"
	"github.com/median-go/median/protocol"
)

// Lambda is lambdamedian once per kind of event (Function URL, HTTP API,
// REST API, ALB with and without multi-value headers): each serves the
// function's handler on net/http through lambdatest.Function, which turns
// every request into that service's event and the answer back, so the
// conformance suite and the parity test reach the handler as each service
// would. lambdamedian has no middleware mode (its package doc says why).
func Lambda() []adaptertest.Adapter {
	kinds := lambdatest.Kinds()
	out := make([]adaptertest.Adapter, len(kinds))
	for i, kind := range kinds {
		out[i] = adaptertest.Adapter{
			Name: "lambda " + kind.String(),
			Endpoint: func(h *protocol.Handler) adaptertest.Starter {
				return adaptertest.ServeHTTP(lambdatest.Function{Kind: kind, Invoke: lambdamedian.New(h).Invoke})
			},
			NoMiddleware: "lambdamedian has no middleware mode: the function is the endpoint",
			// The services read the whole request before they invoke the
			// function, which gets it as one event.
			ReservesDeclaredBody: "Lambda's services read the whole request before they invoke the function",
		}
	}
	return out
}
