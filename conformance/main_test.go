package conformance_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests on leaked goroutines. The suite's runs
// against every adapter are in internal/testonly/adapters, so that these tests load
// no framework.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
