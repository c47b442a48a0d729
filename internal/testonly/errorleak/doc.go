// Package errorleak checks that real infrastructure errors reach Median's
// agent as nothing but the tool's name and a reference (docs/PROTOCOL.md
// §3): [Check] serves one call of a tool per error and asserts that none
// of the error's users, passwords, hosts, ports, database names or paths
// appears in the answer, the diagnostics report, the Observer's event, a
// span or a metric, and that the server's log holds the error's whole
// text under the answer's reference.
//
// Its own test runs Check on a *url.Error whose URL holds a password and
// an *os.PathError, each also wrapped; examples/catalog runs it on pgx's
// connection errors (only protocol/pgstore and the examples import pgx).
// It is a harness of the module's own tests: no shipped code imports it.
package errorleak
