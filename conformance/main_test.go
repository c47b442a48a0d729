package conformance_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests on leaked goroutines. fasthttp (under
// fiber) starts one process-wide clock goroutine on first use, by design.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"))
}
