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
// chimedian and fibermedian adapters, which only move bytes between their
// framework and [Handler.Serve].
//
// Every answer is JSON. Errors carry one of the [Code] values and a message
// written for whoever has to fix the problem; no key, derived secret or
// computed signature ever appears in an answer or a log line.
package protocol
