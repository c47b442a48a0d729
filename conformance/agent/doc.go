// Package agent computes what Median's agent gets from one answer of a tool
// endpoint (docs/PROTOCOL.md §11): the text it reads, the button and the
// highlight the chat widget shows, and what it is told to do. A tool's
// author uses it to see an answer as the agent will: conformance's Reply
// carries a [View], and mediancheck prints one under every answer.
//
// [Of] reads a tool call's answer, [OfDiagnostics] a diagnostics answer.
// Both take the answer as it came (status, Content-Type, body) and never
// fail: an answer outside the contract is a View that says so and why.
//
// # The rules
//
//   - 200 {"result": …}: the agent reads the result's JSON text with
//     medianNavigateTo and medianHighlight removed from the result object's
//     top level (nowhere else), cut to its first 4,000 characters; the
//     removed hints become a button (a link to that path) and a highlight
//     (that CSS selector). A refusal result (§3.1) is read the same way;
//     one whose fields break §3.1 gets a note saying which.
//   - 200 execution_failed: the agent reads the error's message and is told
//     not to retry.
//   - 400 invalid_input: the agent reads the message and is told to fix its
//     input; it may call again.
//   - any other status that is not 2xx, whatever its Content-Type and
//     body (a 400 invalid_input that is not application/json or not of
//     the contract's shape included): the agent is only told the tool is
//     not answering; it reads nothing of the answer, so nothing of it can
//     be wrong.
//   - anything else (another 2xx; a 200 whose body is neither shape or
//     whose Content-Type is not application/json) is outside the contract.
//
// An answer the agent reads (a 200, a 400 invalid_input) is held to
// docs/PROTOCOL.md §3 exactly as the conformance suite holds it (both
// read it with one parser): Content-Type application/json, and a body
// that is one object with exactly one member, "result" or "error", the
// error an object with exactly a non-empty string "code" and a string
// "message".
//
// Characters are counted as protocol.FitResult counts them: Unicode code
// points of the encoded text, a byte that is not valid UTF-8 being one.
package agent
