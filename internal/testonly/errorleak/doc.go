// Package errorleak holds the test that real infrastructure errors reach
// Median's agent as nothing but the tool's name and a reference
// (docs/PROTOCOL.md §3): a pgx connection error with a password in its
// connection string, a *url.Error whose URL holds a password, an
// *os.PathError, and each of them wrapped. None of their users,
// passwords, hosts, ports, database names or paths may appear in the
// answer, the diagnostics report, a span or a metric; each must be in the
// server's log under the answer's reference.
//
// It lives in its own package under internal/ because its test imports
// pgx and OpenTelemetry's SDK together, which neither the core's tests
// nor otelmedian's may load.
package errorleak
