package echomedian_test

import (
	"testing"

	"github.com/labstack/echo/v4"
	"go.uber.org/goleak"

	"github.com/median-go/median/echomedian"
	"github.com/median-go/median/internal/adaptertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestConformance runs the shared adapter cases (internal/adaptertest).
func TestConformance(t *testing.T) {
	adaptertest.Run(t, adaptertest.Echo)
}

// Mount takes the echo app and its groups alike.
var (
	_ echomedian.Router = (*echo.Echo)(nil)
	_ echomedian.Router = (*echo.Group)(nil)
)
