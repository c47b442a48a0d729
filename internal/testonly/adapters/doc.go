// Package adapters describes how each framework adapter mounts the Median
// endpoint, and holds the tests that name more than one framework: the
// conformance suite and the shared adapter table (internal/testonly/adaptertest)
// run against every adapter, the byte-for-byte parity test against
// net/http, and the benchmarks that compare the frameworks.
//
// Only its own tests use it. It imports every framework, which is why no
// package a user imports (an adapter, protocol, conformance) may import it
// or hold these tests: a gin user's `go mod tidy` loads the tests of the
// packages it imports, and would then download every framework
// (internal/testonly/footprint checks that).
//
// It is a harness of the module's own tests (internal/testonly): only test
// files and other harnesses import it, never shipped code
// (internal/testonly/surface checks).
package adapters
