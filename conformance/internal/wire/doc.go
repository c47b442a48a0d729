// Package wire sends signed requests to a Median tool endpoint and records
// each exchange as sent and received: the exact body, headers, status,
// answer, timing and a curl line that reproduces it. mediancheck's call,
// manifest and diagnostics subcommands and the inspector page use it, so
// the same call is built, signed and shown one way; conformance builds
// its calls with [CallBody] too.
//
// A call's body is built from its parts in a fixed order, so the same
// tool, toolCallId, input and persona always give the same bytes: a repeat
// with the same toolCallId is the identical body, which is what shows a
// replay (docs/PROTOCOL.md §8).
//
// It is part of the client side of the wire (conformance/internal); only
// conformance and the packages under it can import it (Go's internal rule),
// and it imports of this module only protocol and internal/base
// (internal/testonly/surface holds it to protocol and the helpers).
package wire
