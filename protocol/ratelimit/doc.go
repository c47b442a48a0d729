// Package ratelimit caps how often Median's agent may call tools
// (docs/PROTOCOL.md §9.1): per conversation, per verified visitor, per
// tool, or per tool within a conversation or for a visitor, with rates per
// tool where a team wants them. [New] returns a [protocol.Interceptor]:
// pass it in protocol.Config.Interceptors to cover every tool, or with
// protocol.WithInterceptors to cover one.
//
// A tool's own rate ([Config.Tools]) is keyed by the tool itself, the
// *protocol.Tool passed in protocol.Config.Tools, and applies to the
// calls of its name, taken from the tool: the interceptor never sees the
// Handler's list of tools, so a name written by hand and misspelled could
// never be caught, and the tool meant to be capped would run uncapped.
//
// A call over its cap is not run. It is answered 200 with the refusal
// result of reason "rate_limited", whose detail tells the agent, in words
// it can relay, when to try again ("try again in about 20 seconds"); never
// 429, which the agent reads only as a tool that does not answer. The
// observer sees the refusal's reason (protocol.Event.Refusal, the
// median.refusal.reason attribute of otelmedian) and the diagnostics
// report counts it among the tool's refusals and again in its
// rateLimited, so that it reads apart from the tool's own refusals.
//
// Interceptors run after the replay store's claim, so a repeated
// toolCallId is answered from the store and never counted: a limit counts
// calls the agent made, not copies of one.
//
// # Backends
//
// The default backend, [Memory], counts in this process on
// golang.org/x/time/rate token buckets, with memory bounded whatever the
// number of conversations (see [MemoryOptions]). Several instances behind
// one endpoint each count on their own; to share one count, use the Redis
// backend in protocol/ratelimit/redislimit (a separate package, so an app
// that limits in memory downloads no Redis client).
//
// # A limit is protection, not a contract
//
// When the backend fails or cannot answer within [Config.Timeout], the
// call runs as if there were no limit, and the failure is logged: a limit
// protects the app's backend from a chatty agent, and refusing every call
// while Redis is down would turn a Redis outage into an outage of every
// tool. This is unlike replay protection, which refuses to run a tool it
// cannot record (docs/PROTOCOL.md §8).
package ratelimit
