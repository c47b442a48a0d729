// Package lambdamedian serves the Median tool endpoint from an AWS Lambda
// function, for every way Lambda receives HTTP: Function URLs, API Gateway
// HTTP APIs (payload format 2.0), API Gateway REST APIs (payload 1.0, the
// proxy integration) and Application Load Balancer targets, with or
// without multi-value headers.
//
//	func main() {
//		h, err := protocol.New(protocol.Config{Tools: tools, Store: store})
//		if err != nil {
//			log.Fatal(err)
//		}
//		lambdamedian.Start(h)
//	}
//
// It only moves requests between Lambda's events and [protocol.Handler]:
// every check and every answer comes from the core, so the function answers
// byte for byte what the endpoint answers on net/http. Which service sent
// an event is read from the event itself, so one function may sit behind
// several of them, and each answer has the shape its service expects (an
// ALB target group with multi-value headers on gets multiValueHeaders).
// An event of none of these shapes is returned to Lambda as an error
// saying what was expected.
//
// What the services do to a request is undone here: a base64 body is
// decoded, header names are matched in any case, and a header sent more
// than once (REST's and ALB's multiValueHeaders, or the comma-joined value
// of a Function URL) reaches the core as one value joined with ",", in
// the order received, so a median-signature header a proxy split is read
// whole. An ALB target group without multi-value headers passes on only
// the last value of a repeated header: turn them on for the target group
// when a proxy in front may split headers. The endpoint answers whatever
// path the event names: route only the endpoint's path to the function.
//
// Time: Lambda ends an invocation at its deadline and answers the caller a
// bare 502 of its own. Here the core answers by the deadline less a margin
// ([WithMargin], 1.5 s by default, see [WithMargin]): a tool's ctx ends then, and a tool still
// running (even one that ignores its ctx) is answered execution_failed
// saying it timed out, its claim settled with that answer so that its
// repeats get it too. Set the function's timeout (and an API Gateway
// integration's) above the longest tool's plus the margin.
//
// Size: Lambda carries at most 6 MB each way. A request over that is
// refused by AWS before the function runs, with an answer of AWS's own, so
// New warns when [protocol.Config.MaxBodyBytes] is above what Lambda can
// deliver (about 4.5 MiB, as a body may come base64-encoded); keep it at or
// below that so the contract's 413 invalid_body answers every oversized
// body. An answer too large for Lambda's response is answered
// execution_failed saying so, instead of failing the invocation. An
// Application Load Balancer allows less, 1 MB each way: behind one, an
// answer over about 730 KB is answered so, and a body over 1 MB is refused
// by the load balancer itself, so set MaxBodyBytes below 1,000,000 there
// (960 KiB, say; the default, 1 MiB, is above it) for the contract's 413
// to answer the bodies between the two.
//
// Replay protection: the default in-memory store protects one instance,
// and Lambda runs many, so two copies of a call that reach two instances
// both run. New warns when it runs on Lambda with the in-memory store: use
// a shared store (protocol/dynamostore).
//
// Testing: [Do] sends a net/http request to the function in memory as a
// Function URL invokes it, which is what conformance.Target.Do takes, so
// the conformance suite checks the function in a go test, without a
// deployment.
//
// Middleware mode, where the app's own handlers answer verified calls, is
// not offered: a Lambda function built around this package is the
// endpoint. An app that already has a net/http router runs it on Lambda
// through a proxy such as aws-lambda-go-api-proxy, and mounts Median there
// with that router's adapter (chimedian, ginmedian, protocol.Handler's
// Mount), middleware included.
package lambdamedian

import (
	"context"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/median-go/median/internal/adapt/handlerinfo"
	"github.com/median-go/median/protocol"
)

// ReturnTime is what the default margin leaves for the answer to reach
// Lambda once the store has kept it: the margin is the Handler's
// Config.StoreTimeout (1 s by default) plus ReturnTime, unless
// [WithMargin] sets it.
const ReturnTime = 500 * time.Millisecond

// Option configures [New] and [Start].
type Option func(*options)

type options struct {
	margin time.Duration
}

// WithMargin sets how long before the invocation's deadline the core
// answers: a tool's ctx ends then, and a tool still running is answered
// execution_failed saying it timed out. Default: the Handler's
// protocol.Config.StoreTimeout plus [ReturnTime], so that a shared store
// keeps the answer in that time; keep a margin you set above the store
// timeout too. An invocation with less than twice the margin left
// (a function whose timeout is that short) keeps half of what is left
// instead. A margin of 0 or less answers at the deadline itself, which
// leaves Lambda no time to return the answer.
func WithMargin(d time.Duration) Option {
	return func(o *options) { o.margin = d }
}

// New returns a Lambda handler that answers the Median endpoint with h,
// for any of the events Lambda receives HTTP with (see the package doc).
// Pass it to lambda.Start, or use [Start]. It logs, through h's logger, a
// warning when the Handler's body limit is above what Lambda can deliver,
// and one when the function runs on Lambda with the in-memory replay
// store.
func New(h *protocol.Handler, opts ...Option) lambda.Handler {
	info := handlerinfo.Of(h)
	o := options{margin: info.StoreTimeout + ReturnTime}
	for _, opt := range opts {
		opt(&o)
	}
	warn(info)
	return &handler{h: h, margin: o.margin}
}

// Start runs the function: lambda.Start(New(h, opts...)). It does not
// return.
func Start(h *protocol.Handler, opts ...Option) {
	lambda.Start(New(h, opts...))
}

// handler is what New returns.
type handler struct {
	h      *protocol.Handler
	margin time.Duration
}

// Invoke answers one event: it decodes the HTTP request the event carries,
// lets the core answer it by the deadline less the margin, and encodes the
// answer in the event's own shape.
func (f *handler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	ev, err := decode(payload)
	if err != nil {
		return nil, err
	}
	req, err := ev.request()
	if err != nil {
		return nil, err
	}
	if deadline, ok := ctx.Deadline(); ok {
		req.AnswerBy = deadline.Add(-min(f.margin, time.Until(deadline)/2))
	}
	req.MaxAnswerBytes = ev.kind.maxAnswer()
	return ev.encode(f.h.Serve(ctx, req))
}
