package adapters

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v3"
	fiberrecover "github.com/gofiber/fiber/v3/middleware/recover"

	fibermedian "github.com/median-go/median/fibermedian/v3"
	"github.com/median-go/median/internal/testonly/adaptertest"
	"github.com/median-go/median/protocol"
)

// FiberV3 mounts with fibermedian/v3 on a fiber v3 group, served by
// fasthttp with fiber's default config.
var FiberV3 = FiberV3With(fiber.Config{})

// FiberV3With is FiberV3 on apps built with cfg, to run the kit under other
// settings such as StreamRequestBody or RequestMethods (whose extra methods
// then reach the Handler).
func FiberV3With(cfg fiber.Config) adaptertest.Adapter {
	var extra []string
	for _, m := range cfg.RequestMethods {
		if !slices.Contains(fiber.DefaultMethods, m) {
			extra = append(extra, m)
		}
	}
	return adaptertest.Adapter{
		Name:                 "fiber v3",
		ExtraMethods:         extra,
		ReservesDeclaredBody: reservesDeclaredBody(cfg.StreamRequestBody),
		// fiber v3 answers a method outside RequestMethods 501 before routing.
		Foreign:       "MKCOL",
		ForeignStatus: http.StatusNotImplemented,
		Endpoint: func(h *protocol.Handler) adaptertest.Starter {
			app := fiber.New(cfg)
			app.Get(HealthPath, func(c fiber.Ctx) error { return c.SendString("ok") })
			fibermedian.Mount(app.Group(group), route, h)
			return ServeFiberV3(app)
		},
		Middleware: func(h *protocol.Handler, answer adaptertest.Answer) adaptertest.Starter {
			app := fiber.New(cfg)
			app.Use(fiberrecover.New())
			fibermedian.Mount(app.Group(group), route, h, fiberV3Answer(answer))
			return ServeFiberV3(app)
		},
		Chain: func(h *protocol.Handler, steps []adaptertest.Step, ran func(int)) adaptertest.Starter {
			app := fiber.New(cfg)
			app.Use(fiberrecover.New())
			fibermedian.Mount(app.Group(group), route, h, chainOf(steps, ran, fiberV3Step)...)
			return ServeFiberV3(app)
		},
		// A fiber handler passes a call on with c.Next(); returning without
		// it ends the chain.
		Abort:       "return without c.Next()",
		AbortAnswer: adaptertest.Want{Status: http.StatusOK, Code: protocol.CodeExecutionFailed, Message: "did not answer"},
		Hijack:      "c.RequestCtx().Hijack(…) with HijackSetNoResponse(true)",
		Bare: func(answer adaptertest.Answer) adaptertest.Starter {
			app := fiber.New(cfg)
			app.All(adaptertest.Path, fiberV3Answer(answer))
			return ServeFiberV3(app)
		},
		Values: func(h *protocol.Handler) adaptertest.Starter {
			app := fiber.New(cfg)
			app.Use(func(c fiber.Ctx) error {
				if id := c.Get(adaptertest.RequestIDHeader); id != "" {
					c.Locals(adaptertest.ValueKey, strings.Clone(id)) // c.Get aliases fasthttp's buffer
				}
				return c.Next()
			})
			fibermedian.Mount(app.Group(group), route, h)
			return ServeFiberV3(app)
		},
	}
}

// fiberV3Step is one handler of a chain on fiber; c.Next() passes the call on,
// which Write and Refuse do after answering, as a careless handler might.
func fiberV3Step(i int, step adaptertest.Step, ran func(int)) fiber.Handler {
	return func(c fiber.Ctx) error {
		ran(i)
		switch step {
		case adaptertest.Write:
			if err := c.Status(http.StatusForbidden).SendString(adaptertest.ForbiddenBody); err != nil {
				return err
			}
		case adaptertest.Refuse:
			_ = fibermedian.Respond(c, nil, adaptertest.Refusal)
		case adaptertest.Abort:
			return nil
		case adaptertest.Panic:
			panic(adaptertest.ChainPanic)
		case adaptertest.Hijack:
			c.RequestCtx().HijackSetNoResponse(true)
			c.RequestCtx().Hijack(func(conn net.Conn) {
				adaptertest.AnswerHijacked(conn, bufio.NewReadWriter(bufio.NewReader(conn), bufio.NewWriter(conn)))
			})
		case adaptertest.Dispatch:
			call, _ := fibermedian.CallFrom(c)
			return fibermedian.Respond(c, adaptertest.Dispatched(call), nil)
		}
		return c.Next()
	}
}

// fiberV3Answer is the handler behind the middleware on fiber v3.
func fiberV3Answer(answer adaptertest.Answer) fiber.Handler {
	return func(c fiber.Ctx) error {
		s := adaptertest.Seen{}
		s.Call, _ = fibermedian.CallFrom(c)
		s.ContextCall, _ = protocol.CallFrom(c.Context())
		s.Body = slices.Clone(c.Body()) // fasthttp reuses it after the handler
		// c.OriginalURL, c.Query and c.Get alias fasthttp's buffers too.
		s.Target, s.Tenant, s.User = strings.Clone(c.OriginalURL()), strings.Clone(c.Query("tenant")), strings.Clone(c.Get("X-User"))
		result, err := answer(s)
		if errors.Is(err, adaptertest.ErrNothing) {
			return nil
		}
		if errors.Is(err, adaptertest.ErrNoAnswer) {
			return c.SendStatus(http.StatusNoContent)
		}
		return fibermedian.Respond(c, result, err)
	}
}

// ServeFiberV3 returns a Starter that serves a fiber v3 app with fasthttp,
// without its startup message.
func ServeFiberV3(app *fiber.App) adaptertest.Starter {
	return adaptertest.ServeListener(func(ln net.Listener) error {
		return app.Listener(ln, fiber.ListenConfig{DisableStartupMessage: true})
	}, app.Shutdown)
}
