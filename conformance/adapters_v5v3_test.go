package conformance_test

import (
	"net/http"

	fiberv3 "github.com/gofiber/fiber/v3"
	echov5 "github.com/labstack/echo/v5"

	"github.com/median-go/median/conformance"
	echomedianv5 "github.com/median-go/median/echomedian/v5"
	fibermedianv3 "github.com/median-go/median/fibermedian/v3"
	"github.com/median-go/median/protocol"
)

// The adapters for echo v5 and fiber v3 join the table TestAdapters runs
// the whole suite against.
func init() {
	add := func(name string, mount func(h *protocol.Handler) conformance.DoFunc) {
		adapters = append(adapters, struct {
			name  string
			mount func(h *protocol.Handler) conformance.DoFunc
		}{name, mount})
	}
	add("echo v5", mountEchoV5)
	add("fiber v3", mountFiberV3)
}

// mountEchoV5 mounts h at /api/median on an echo v5 group, beside another
// route.
func mountEchoV5(h *protocol.Handler) conformance.DoFunc {
	e := echov5.New()
	e.GET("/health", func(c *echov5.Context) error { return c.String(http.StatusOK, "ok") })
	echomedianv5.Mount(e.Group("/api"), "/median", h)
	return conformance.HandlerDo(e)
}

// mountFiberV3 mounts h at /api/median on a fiber v3 group, beside another
// route.
func mountFiberV3(h *protocol.Handler) conformance.DoFunc {
	app := fiberv3.New()
	app.Get("/health", func(c fiberv3.Ctx) error { return c.SendString("ok") })
	fibermedianv3.Mount(app.Group("/api"), "/median", h)
	return fibermedianv3.Do(app)
}
