// Package inspector is the local web page of `mediancheck inspect`: it
// lists an endpoint's tools from the signed manifest, builds a form from
// each input schema, sends signed calls and shows each answer as sent and
// as Median's agent reads it (conformance/agent), keeps a history of the
// run that can be replayed and exported as a samples file, shows the
// diagnostics report and runs the conformance suite.
//
// # Security
//
// The page signs with the developer's key, so it is a signing oracle and
// is guarded as one:
//
//   - [Listen] binds to a loopback address only.
//   - Every run has a random token. The page is served only at
//     /?token=TOKEN (the URL the command prints); that visit sets it as an
//     HttpOnly, SameSite=Strict cookie that the page's assets need, and
//     every API call needs it again in the X-Inspector-Token header, which
//     the page's script sends and another site cannot.
//   - Every request's Host must be a loopback name (no DNS rebinding) and
//     its Origin, when sent, this page's own; Sec-Fetch-Site cross-site is
//     refused.
//   - A refused request gets 403 (Host, Origin) or 401 (token) and nothing
//     is signed or sent to the endpoint.
//   - The key never leaves the process: the page gets answers, curl lines
//     (with their signature, valid 5 minutes) and nothing else.
//
// The assets are plain HTML, CSS and a small script, embedded with
// go:embed: no build step, and the page works offline.
//
// It lives beside the command that serves it: only mediancheck can import it
// (Go's internal rule).
package inspector
