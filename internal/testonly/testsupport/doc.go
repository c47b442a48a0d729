// Package testsupport holds what the module's tests share and nothing
// else imports: a log sink safe for concurrent use ([Buffer]), a wait for
// what a background goroutine makes true ([Eventually]), the rule for a
// component a test needs but the machine lacks ([Missing]) and the paired
// timing of two ways of serving the same calls ([Paired]). Only
// test code and the packages that serve tests (internal/testonly/redistest,
// internal/testonly/pgtest, internal/testonly/fixture) import it, so it never reaches a
// user's binary.
//
// It is a harness of the module's own tests (internal/testonly): only test
// files and other harnesses import it, never shipped code
// (internal/testonly/surface checks).
package testsupport
