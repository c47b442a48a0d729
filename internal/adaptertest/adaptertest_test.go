package adaptertest_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/median-go/median/internal/adaptertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, adaptertest.FasthttpGoroutines...) }

// TestNetHTTP runs the kit against the core on net/http: the cases
// themselves must match the contract before they judge an adapter.
func TestNetHTTP(t *testing.T) {
	adaptertest.Run(t, adaptertest.NetHTTP)
}
