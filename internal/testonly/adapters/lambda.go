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
		last, limit := "", int64(0)
		if kind == lambdatest.ALB {
			last = "an ALB target group without multi-value headers passes on only the last line of a repeated header (lambdamedian's doc says to turn them on)"
		}
		if kind == lambdatest.ALB || kind == lambdatest.ALBMultiValue {
			limit = 960 << 10 // below the ALB's 1 MB, as lambdamedian's doc says
		}
		out[i] = adaptertest.Adapter{
			Name: "lambda " + kind.String(),
			Endpoint: func(h *protocol.Handler) adaptertest.Starter {
				return adaptertest.ServeHTTP(lambdatest.Function{Kind: kind, Invoke: lambdamedian.New(h).Invoke})
			},
			NoMiddleware:   "lambdamedian has no middleware mode: the function is the endpoint",
			LastHeaderLine: last,
			MaxBodyBytes:   limit,
			// The services read the whole request before they invoke the
			// function, which gets it as one event.
			ReservesDeclaredBody: "Lambda's services read the whole request before they invoke the function",
		}
	}
	return out
}
