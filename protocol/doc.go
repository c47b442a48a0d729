// Package protocol is the framework-neutral core of median-go: it answers the
// Median tool endpoint exactly as the contract in docs/PROTOCOL.md describes.
//
// A Median tool endpoint is one HTTP path on your server. Median POSTs a signed
// ToolCall (or a diagnostics request) to it, and GETs it, signed, to sync the
// list of tools. This package verifies the signature with keys derived from
// MEDIAN_KEY, decodes and checks the body, validates the tool's input against
// its JSON Schema, runs your typed Go function and encodes the answer.
//
// Build one [Handler] with [New] and mount it: as an [http.Handler] on a
// net/http ServeMux or chi router, or through the ginmedian, echomedian,
// chimedian, fibermedian and hertzmedian adapters, which only move bytes
// between their framework and [Handler.Serve].
//
// Every answer is JSON. Errors carry one of the [Code] values and a message
// written for whoever has to fix the problem; no key, derived secret or
// computed signature ever appears in an answer or a log line. The agent
// reads a tool's error only when the tool's author says so, with an
// [AgentError]; any other error is answered with the tool's name and a
// reference to the log line that holds it.
//
// # Handler chains
//
// In middleware mode ([Handler.Middleware], [Handler.Mount] with handlers,
// and every adapter's Mount with handlers) your own handlers answer the
// verified calls of the tools in [Config.Tools] (declare those without a
// function of their own with [DeclareTool]); a call of any other tool is
// answered 404 unknown_tool before they run. Mount takes several handlers,
// such as an authorization check and then a dispatcher, and every adapter
// runs them by one rule:
//
// The handlers run in order, and the first one that answers ends the chain.
// A handler answers through [Respond] (or its adapter's Respond), by writing
// a status or a body of its own (a flush, which sends the status, and a
// hijacked connection count as such; on net/http and chi a 1xx such as
// 103 Early Hints does not), or by its framework's abort (gin's and
// Hertz's c.Abort, an error returned by an echo or fiber handler, a fiber
// handler that returns without calling c.Next). Nothing after it runs, no tool
// runs, and exactly one answer goes out. A handler that does none of these
// passes the call on (in fiber, with c.Next, as fiber handlers always do);
// a call no handler answers is answered execution_failed.
//
// Refuse the contract's way, with a refusal result the agent can explain to
// the customer:
//
//	Respond(w, r, nil, protocol.Refuse("not_allowed", "Only the account owner can do this."))
//
// A response a handler writes on its own (http.Error(w, "forbidden", 403),
// a plain-text body) is the app's choice: it is sent as written, and
// Median's agent reads it as PROTOCOL.md §11 says: a non-2xx status as the
// tool not answering, anything but the contract's answers as outside the
// contract. The Handler logs a
// warning naming its status (at most one line every ten seconds, with the
// count of those held back), counts it in the diagnostics report as the
// tool's offContract, not as a failure (PROTOCOL.md §10), reports it to
// [Config.Observer] as what was sent ([Event.OffContract], with the status
// written, no Code and no Answer), and keeps execution_failed for the
// call's toolCallId, so a repeat is answered at once.
//
// # Authenticated: the call only
//
// Median signs the timestamp and the body of each request, `<t>.<body>`
// (PROTOCOL.md §1.1), and nothing else: not the path, the query string, the
// method or any header but the signature. What [CallFrom] returns (the
// tool, its input, the visitor, the risk, the approval) comes from the
// signed body, and it is the only part of the request your handlers behind
// the middleware may trust. The middleware, net/http's and every
// adapter's, hands them the request without its query string (Median
// sends none, so one there was added by someone else) and with the body
// as signed; its headers stay as they arrived, for the tracing, logging
// and proxy headers an app reads, and are not Median's word: never decide
// on a header (X-User, X-Tenant, a forwarded address) who the visitor is
// or what the call may do. Tools run by [Handler.Serve] see only the call.
//
// # Writing an adapter
//
// An adapter moves bytes between a framework and the core; it never builds
// an answer of its own. Frameworks built on net/http mount the Handler
// itself (it is an [http.Handler]) and [Handler.Middleware]. For any other
// framework, the whole adapter-facing API is in adapter.go:
//
//   - Build a [Request] from the framework's request: the method, the
//     median-signature header and the body (a reader, or bytes the
//     framework already holds), without decoding anything.
//   - To answer with the Handler's own tools, call [Handler.Serve] and write
//     the [Response]: its Status, Content-Type application/json, Allow when
//     set, and Body. A Response with Status 0 is not written. Body may be
//     sent without a copy but never written into: the in-process replay
//     store keeps those very bytes for repeats of the call.
//   - For middleware mode, call [Handler.Verify]. When it returns false,
//     write its Response and stop. Otherwise run the app's handlers with the
//     returned context reachable from the framework's context (so that
//     [CallFrom] finds the call), apply the chain rule above, and let them
//     answer through [Answer], whose Response the adapter writes. Once they
//     are done, defer [Settle] with the status of any response they wrote on
//     their own (0 for none) and what recover() returned, and write what it
//     returns.
//   - On a platform that ends a request at a deadline of its own, or
//     limits the size of an answer (AWS Lambda: lambdamedian), set
//     [Request].AnswerBy and MaxAnswerBytes: the core then answers in time
//     and within the limit, and keeps that answer for the call's repeats,
//     where the platform would answer with an error of its own.
//
// Who owns the Request's bytes once Serve or Verify returns is said once,
// on [Request]: the core copies the body; the adapter passes what its
// framework holds. How framework values reach a tool: the ctx the adapter
// passes Serve and Verify is the tool's ctx (the handlers' behind the
// middleware), so an adapter passes the request's context with a Value
// that falls back to the framework's per-request store (gin's, echo's and
// Hertz's c.Set, fiber's c.Locals) while the request is served, and
// detaches that fallback before the framework reuses the store.
package protocol
