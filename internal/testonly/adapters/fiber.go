package adapters

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"
	fiberrecover "github.com/gofiber/fiber/v2/middleware/recover"

	"github.com/median-go/median/fibermedian"
	"github.com/median-go/median/internal/testonly/adaptertest"
	"github.com/median-go/median/protocol"
)

// Fiber mounts with fibermedian on a fiber group, served by fasthttp with
// fiber's default config.
var Fiber = FiberWith(fiber.Config{})

// FiberWith is Fiber on apps built with cfg (its startup message always
// off), to run the kit under other settings such as StreamRequestBody or
// RequestMethods (whose extra methods then reach the Handler).
func FiberWith(cfg fiber.Config) adaptertest.Adapter {
	cfg.DisableStartupMessage = true
	var extra []string
	for _, m := range cfg.RequestMethods {
		if !slices.Contains(fiber.DefaultMethods, m) {
			extra = append(extra, m)
		}
	}
	return adaptertest.Adapter{
		Name:                 "fiber",
		ExtraMethods:         extra,
		ReservesDeclaredBody: reservesDeclaredBody(cfg.StreamRequestBody),
		// fiber refuses a method outside RequestMethods before routing.
		Foreign:       "MKCOL",
		ForeignStatus: http.StatusBadRequest,
		Endpoint: func(h *protocol.Handler) adaptertest.Starter {
			app := fiber.New(cfg)
			app.Get(HealthPath, func(c *fiber.Ctx) error { return c.SendString("ok") })
			fibermedian.Mount(app.Group(group), route, h)
			return ServeFiber(app)
		},
		Middleware: func(h *protocol.Handler, answer adaptertest.Answer) adaptertest.Starter {
			app := fiber.New(cfg)
			app.Use(fiberrecover.New())
			fibermedian.Mount(app.Group(group), route, h, fiberAnswer(answer))
			return ServeFiber(app)
		},
		Chain: func(h *protocol.Handler, steps []adaptertest.Step, ran func(int)) adaptertest.Starter {
			app := fiber.New(cfg)
			app.Use(fiberrecover.New())
			fibermedian.Mount(app.Group(group), route, h, chainOf(steps, ran, fiberStep)...)
			return ServeFiber(app)
		},
		// A fiber handler passes a call on with c.Next(); returning without
		// it ends the chain.
		Abort:       "return without c.Next()",
		AbortAnswer: adaptertest.Want{Status: http.StatusOK, Code: protocol.CodeExecutionFailed, Message: "did not answer"},
		Hijack:      "c.Context().Hijack(…) with HijackSetNoResponse(true)",
		Bare: func(answer adaptertest.Answer) adaptertest.Starter {
			app := fiber.New(cfg)
			app.All(adaptertest.Path, fiberAnswer(answer))
			return ServeFiber(app)
		},
		Values: func(h *protocol.Handler) adaptertest.Starter {
			app := fiber.New(cfg)
			app.Use(func(c *fiber.Ctx) error {
				if id := c.Get(adaptertest.RequestIDHeader); id != "" {
					c.Locals(adaptertest.ValueKey, strings.Clone(id)) // c.Get aliases fasthttp's buffer
				}
				return c.Next()
			})
			fibermedian.Mount(app.Group(group), route, h)
			return ServeFiber(app)
		},
	}
}

// fiberStep is one handler of a chain on fiber; c.Next() passes the call on,
// which Write and Refuse do after answering, as a careless handler might.
func fiberStep(i int, step adaptertest.Step, ran func(int)) fiber.Handler {
	return func(c *fiber.Ctx) error {
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
			c.Context().HijackSetNoResponse(true)
			c.Context().Hijack(func(conn net.Conn) {
				adaptertest.AnswerHijacked(conn, bufio.NewReadWriter(bufio.NewReader(conn), bufio.NewWriter(conn)))
			})
		case adaptertest.Dispatch:
			call, _ := fibermedian.CallFrom(c)
			return fibermedian.Respond(c, adaptertest.Dispatched(call), nil)
		}
		return c.Next()
	}
}

// fiberAnswer is the handler behind the middleware on fiber.
func fiberAnswer(answer adaptertest.Answer) fiber.Handler {
	return func(c *fiber.Ctx) error {
		s := adaptertest.Seen{}
		s.Call, _ = fibermedian.CallFrom(c)
		s.ContextCall, _ = protocol.CallFrom(c.UserContext())
		s.Body = bytes.Clone(c.Body()) // fasthttp reuses it after the handler
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

// reservesDeclaredBody is the Adapter's ReservesDeclaredBody for a fiber
// app (v2 or v3) that streams request bodies or not.
func reservesDeclaredBody(streams bool) string {
	if streams {
		return ""
	}
	return "fasthttp reads the whole body before any fiber handler runs, into a buffer of the declared length (up to fiber.Config.BodyLimit); " +
		"the case runs on apps with StreamRequestBody (docs/SECURITY.md says what to set)"
}

// ServeFiber returns a Starter that serves app with fasthttp.
func ServeFiber(app *fiber.App) adaptertest.Starter {
	return adaptertest.ServeListener(app.Listener, app.Shutdown)
}
