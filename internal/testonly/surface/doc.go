// Package surface holds no code, only a test: it counts the exported
// names and methods of the packages users import most (protocol and
// conformance) in their non-test Go files, and fails when one of them
// grows past its limit, listing what it exports. A small surface is a
// rule of the project (the limits are in the test); when the test fails,
// prefer an unexported helper, a Config or struct field (fields do not
// count) or a sub-package over a new exported name.
//
// Run it with:
//
//	go test ./internal/testonly/surface
//
// It is a harness of the module's own tests (internal/testonly): only test
// files and other harnesses import it, never shipped code
// (internal/testonly/surface checks).
package surface
