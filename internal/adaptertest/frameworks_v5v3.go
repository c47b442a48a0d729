package adaptertest

import (
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"

	fiberv3 "github.com/gofiber/fiber/v3"
	fiberv3recover "github.com/gofiber/fiber/v3/middleware/recover"
	echov5 "github.com/labstack/echo/v5"
	echov5middleware "github.com/labstack/echo/v5/middleware"

	echomedianv5 "github.com/median-go/median/echomedian/v5"
	fibermedianv3 "github.com/median-go/median/fibermedian/v3"
	"github.com/median-go/median/protocol"
)

// EchoV5 mounts with echomedian/v5 on an echo v5 group, behind echo's
// Recover.
var EchoV5 = Adapter{
	Name: "echo v5",
	Endpoint: func(h *protocol.Handler) Starter {
		e := echov5.New()
		echomedianv5.Mount(e.Group(group), route, h)
		return ServeHTTP(e)
	},
	Middleware: func(h *protocol.Handler, answer Answer) Starter {
		e := echov5.New()
		e.Use(echov5middleware.Recover())
		echomedianv5.Mount(e.Group(group), route, h, echoV5Answer(answer))
		return ServeHTTP(e)
	},
	Bare: func(answer Answer) Starter {
		e := echov5.New()
		e.Any(Path, echoV5Answer(answer))
		return ServeHTTP(e)
	},
	Values: func(h *protocol.Handler) Starter {
		e := echov5.New()
		e.Use(func(next echov5.HandlerFunc) echov5.HandlerFunc {
			return func(c *echov5.Context) error {
				if id := c.Request().Header.Get(RequestIDHeader); id != "" {
					c.Set(ValueKey, id)
				}
				return next(c)
			}
		})
		echomedianv5.Mount(e.Group(group), route, h)
		return ServeHTTP(e)
	},
	// echo v5's Any matches every method, those it does not know included.
	ExtraMethods: []string{echov5.PROPFIND, echov5.REPORT, echov5.QUERY, "PURGE", "MKCOL"},
}

func echoV5Answer(answer Answer) echov5.HandlerFunc {
	return func(c *echov5.Context) error {
		s := Seen{}
		s.Call, _ = echomedianv5.CallFrom(c)
		s.ContextCall, _ = protocol.CallFrom(c.Request().Context())
		s.Visitor, s.VisitorOK = echomedianv5.VisitorFrom(c)
		s.Body, s.BodyErr = io.ReadAll(c.Request().Body)
		result, err := answer(s)
		if errors.Is(err, ErrNoAnswer) {
			return c.NoContent(http.StatusNoContent)
		}
		return echomedianv5.Respond(c, result, err)
	}
}

// FiberV3 mounts with fibermedian/v3 on a fiber v3 group, served by
// fasthttp with fiber's default config.
var FiberV3 = FiberV3With(fiberv3.Config{})

// FiberV3With is FiberV3 on apps built with cfg, to run the kit under other
// settings such as StreamRequestBody or RequestMethods (whose extra methods
// then reach the Handler).
func FiberV3With(cfg fiberv3.Config) Adapter {
	var extra []string
	for _, m := range cfg.RequestMethods {
		if !slices.Contains(fiberv3.DefaultMethods, m) {
			extra = append(extra, m)
		}
	}
	return Adapter{
		Name:         "fiber v3",
		ExtraMethods: extra,
		// fiber v3 answers a method outside RequestMethods 501 before routing.
		Foreign:       "MKCOL",
		ForeignStatus: http.StatusNotImplemented,
		Endpoint: func(h *protocol.Handler) Starter {
			app := fiberv3.New(cfg)
			fibermedianv3.Mount(app.Group(group), route, h)
			return ServeFiberV3(app)
		},
		Middleware: func(h *protocol.Handler, answer Answer) Starter {
			app := fiberv3.New(cfg)
			app.Use(fiberv3recover.New())
			fibermedianv3.Mount(app.Group(group), route, h, fiberV3Answer(answer))
			return ServeFiberV3(app)
		},
		Bare: func(answer Answer) Starter {
			app := fiberv3.New(cfg)
			app.All(Path, fiberV3Answer(answer))
			return ServeFiberV3(app)
		},
		Values: func(h *protocol.Handler) Starter {
			app := fiberv3.New(cfg)
			app.Use(func(c fiberv3.Ctx) error {
				if id := c.Get(RequestIDHeader); id != "" {
					c.Locals(ValueKey, strings.Clone(id)) // c.Get aliases fasthttp's buffer
				}
				return c.Next()
			})
			fibermedianv3.Mount(app.Group(group), route, h)
			return ServeFiberV3(app)
		},
	}
}

func fiberV3Answer(answer Answer) fiberv3.Handler {
	return func(c fiberv3.Ctx) error {
		s := Seen{}
		s.Call, _ = fibermedianv3.CallFrom(c)
		s.ContextCall, _ = protocol.CallFrom(c.Context())
		s.Visitor, s.VisitorOK = fibermedianv3.VisitorFrom(c)
		s.Body = slices.Clone(c.Body()) // fasthttp reuses it after the handler
		result, err := answer(s)
		if errors.Is(err, ErrNoAnswer) {
			return c.SendStatus(http.StatusNoContent)
		}
		return fibermedianv3.Respond(c, result, err)
	}
}

// ServeFiberV3 returns a Starter that serves a fiber v3 app with fasthttp,
// without its startup message.
func ServeFiberV3(app *fiberv3.App) Starter {
	return func(ln net.Listener) func() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = app.Listener(ln, fiberv3.ListenConfig{DisableStartupMessage: true})
		}()
		return func() {
			_ = app.Shutdown()
			// Shutdown misses a listener fasthttp has not started serving
			// yet (an app stopped before any request): closing it ends Serve.
			_ = ln.Close()
			<-done
		}
	}
}
