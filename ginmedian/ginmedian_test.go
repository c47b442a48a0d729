package ginmedian_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/median-go/median/internal/adaptertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestConformance runs the shared adapter cases (internal/adaptertest).
func TestConformance(t *testing.T) {
	adaptertest.Run(t, adaptertest.Gin)
}
