package conformance_test

import (
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/go-chi/chi/v5"
	"github.com/gofiber/fiber/v2"
	"github.com/labstack/echo/v4"

	"github.com/median-go/median/chimedian"
	"github.com/median-go/median/conformance"
	"github.com/median-go/median/echomedian"
	"github.com/median-go/median/fibermedian"
	"github.com/median-go/median/ginmedian"
	"github.com/median-go/median/protocol"
)

// adapters mount a handler at /api/median on a group or sub-router of each
// framework, beside another route, and return the request function of the
// app.
var adapters = []struct {
	name  string
	mount func(h *protocol.Handler) conformance.DoFunc
}{
	{"nethttp", func(h *protocol.Handler) conformance.DoFunc { return conformance.HandlerDo(mux(h)) }},
	{"gin", func(h *protocol.Handler) conformance.DoFunc {
		gin.SetMode(gin.ReleaseMode)
		r := gin.New()
		r.GET("/health", func(c *gin.Context) { c.String(http.StatusOK, "ok") })
		ginmedian.Mount(r.Group("/api"), "/median", h)
		return conformance.HandlerDo(r)
	}},
	{"echo", func(h *protocol.Handler) conformance.DoFunc {
		e := echo.New()
		e.GET("/health", func(c echo.Context) error { return c.String(http.StatusOK, "ok") })
		echomedian.Mount(e.Group("/api"), "/median", h)
		return conformance.HandlerDo(e)
	}},
	{"chi", func(h *protocol.Handler) conformance.DoFunc {
		r := chi.NewRouter()
		r.Get("/health", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
		r.Route("/api", func(r chi.Router) { chimedian.Mount(r, "/median", h) })
		return conformance.HandlerDo(r)
	}},
	{"fiber", func(h *protocol.Handler) conformance.DoFunc {
		app := fiber.New(fiber.Config{DisableStartupMessage: true})
		app.Get("/health", func(c *fiber.Ctx) error { return c.SendString("ok") })
		fibermedian.Mount(app.Group("/api"), "/median", h)
		return fibermedian.Do(app)
	}},
}

// TestAdapters runs the whole suite against every adapter, mounted at a
// non-root path on a group or sub-router.
func TestAdapters(t *testing.T) {
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) {
			target := conformance.Target{
				Do:     a.mount(newHandler(t, testKey, nil)),
				URL:    "http://example.test" + mountPath,
				Key:    testKey,
				Replay: true,
			}
			target.Tools = conformance.FixtureSamples()
			target.BuildWithKey = func(key string) (conformance.DoFunc, error) {
				return a.mount(newHandler(t, key, nil)), nil
			}
			conformance.Run(t, target)
		})
	}
}
