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
//     /?token=TOKEN (the URL the command prints), and every API call needs
//     it in the X-Inspector-Token header, which the page's script reads
//     from the page's URL and sends, and another site cannot. The visit
//     also sets an HttpOnly, SameSite=Strict cookie for the page's static
//     assets, holding a second random value that opens nothing else: a
//     browser sends a host's cookies to every port of it, so any other
//     local service the browser visits may see it.
//   - Every request's Host must be a loopback name (no DNS rebinding) and
//     its Origin, when sent, this page's own; Sec-Fetch-Site cross-site is
//     refused.
//   - A refused request gets 403 (Host, Origin) or 401 (token) and nothing
//     is signed or sent to the endpoint.
//   - The key never leaves the process: the page gets answers, curl lines
//     (with their signature, valid 5 minutes) and nothing else.
//
// The assets are plain HTML, CSS and a small script, embedded in the
// binary (package embed): no build step, and the page works offline.
//
// It lives beside the command that serves it: only mediancheck can import it
// (Go's internal rule).
package inspector
