// Package otelmedian reports what a median-go endpoint answers to
// OpenTelemetry: one span per tool call and metrics for every request.
//
// Build an [Observer] with [New] and pass its Observe method as
// protocol.Config.Observer:
//
//	obs, err := otelmedian.New()
//	if err != nil { … }
//	h, err := protocol.New(protocol.Config{Tools: tools, Observer: obs.Observe})
//
// It uses the global tracer and meter providers unless [WithTracerProvider]
// and [WithMeterProvider] say otherwise. protocol itself never imports
// OpenTelemetry: only programs that import this package depend on it.
//
// # Spans
//
// Each tool call (a request whose body named a tool, answered with a result,
// a refusal or an error, or by your own handler outside the contract)
// becomes an INTERNAL span named "execute_tool
// {tool}", a child of the span on the request's context (the HTTP server
// span your middleware started, if any). It starts when the request reached
// the Handler and ends when the answer was ready. It follows the
// execute_tool span of the OpenTelemetry GenAI semantic conventions v1.41.0,
// the last release of them in open-telemetry/semantic-conventions
// (docs/gen-ai/gen-ai-spans.md; schema
// https://opentelemetry.io/schemas/1.41.0) before they moved to
// open-telemetry/semantic-conventions-genai. Their status is Development:
// names may change in a later release, and this package will follow.
//
//	gen_ai.operation.name   "execute_tool"
//	gen_ai.tool.name        the tool's name
//	gen_ai.tool.call.id     the call's toolCallId
//	error.type              the contract's error code when the answer is an
//	                        error (execution_failed, invalid_input,
//	                        unknown_tool, invalid_body); the span's status
//	                        is then Error. For an answer outside the
//	                        contract (below) whose status is not 2xx, which
//	                        Median's agent reads as the tool not answering,
//	                        that status ("403"), as OpenTelemetry's HTTP
//	                        conventions set it; the span's status is then
//	                        Error too, described as such
//	median.risk             low, medium, reviewed or high, as Median sent it
//	median.replayed         true when the answer came from the replay store
//	                        (the tool did not run again)
//	median.refusal.reason   the reason of a refusal result (not_signed_in,
//	                        approval_required, …); a refusal is not an error
//	median.error.ref        the reference of an execution_failed answer that
//	                        did not show the tool's error to the agent
//	                        (protocol.Event.ErrorRef): the server's log has
//	                        the error under it (errorRef)
//	median.evicted_early    answers the replay store dropped early to keep
//	                        this one, when there were any
//	median.off_contract     true when your own handler, behind the
//	                        middleware, answered with a response it wrote
//	                        itself instead of Respond
//	                        (protocol.Event.OffContract); absent otherwise
//	http.response.status_code  the status that handler wrote, on such
//	                        calls only (the answer's body was not seen)
//	median.check            true when the request was a check's (a
//	                        conformance run, mediancheck, a probe marked
//	                        with protocol.Key.CheckMark), not Median's
//	                        (protocol.Event.Check); absent otherwise
//
// With [WithInputAndResult] the span also carries the call's input as
// gen_ai.tool.call.arguments, the result of a successful call (refusals
// included) as gen_ai.tool.call.result, both as JSON strings, and an
// error answer's message (what the agent read, never the tool's own error
// unless it was meant for the agent) as the span status description. They are left out by
// default because they may hold personal data. Nothing about the visitor is
// ever recorded.
//
// Requests that are not tool calls (the GET manifest, diagnostics, requests
// refused before their body was decoded) get no span; they are counted.
//
// # Metrics
//
//	median.requests            counter, {request}: every answered request
//	median.tool.call.duration  histogram, s: tool calls, from the request
//	                           reaching the Handler to the answer
//
// Both carry low-cardinality attributes only, never the toolCallId, the
// input or the answer:
//
//	median.outcome          result, refusal, error, or off_contract for an
//	                        answer your own handler wrote itself
//	error.type              the error code (a protocol.Code), on errors
//	                        only; for off_contract, the status when it is
//	                        not 2xx ("403")
//	gen_ai.operation.name   "execute_tool", on tool calls
//	gen_ai.tool.name        the tool's name, on tool calls
//	median.risk             the call's risk, on tool calls
//	median.replayed         true or false, on tool calls
//	median.refusal.reason   the refusal's reason, on refusals
//	median.check            true on a check's requests, absent on Median's,
//	                        so dashboards can leave checks out
//	http.request.method     GET, POST or _OTHER (median.requests only)
//
// A served manifest is a GET with outcome result; diagnostics are POST
// requests without gen_ai.tool.name. Refusal reasons are short
// codes chosen by your tools (see protocol.Refuse): keep them a fixed set,
// as they become metric attributes. The histogram's buckets are those
// OpenTelemetry recommends for HTTP server durations, from 5 ms to 10 s.
package otelmedian
