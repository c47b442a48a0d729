package adapters

import (
	"errors"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"
	echomiddleware "github.com/labstack/echo/v4/middleware"

	"github.com/median-go/median/echomedian"
	"github.com/median-go/median/internal/testonly/adaptertest"
	"github.com/median-go/median/protocol"
)

// Echo mounts with echomedian on an echo.Group, behind echo's Recover.
var Echo = adaptertest.Adapter{
	Name: "echo",
	Endpoint: func(h *protocol.Handler) adaptertest.Starter {
		e := echo.New()
		e.GET(HealthPath, func(c echo.Context) error { return c.String(http.StatusOK, "ok") })
		echomedian.Mount(e.Group(group), route, h)
		return adaptertest.ServeHTTP(e)
	},
	Middleware: func(h *protocol.Handler, answer adaptertest.Answer) adaptertest.Starter {
		e := echo.New()
		e.Use(echomiddleware.Recover())
		echomedian.Mount(e.Group(group), route, h, echoAnswer(answer))
		return adaptertest.ServeHTTP(e)
	},
	Chain: func(h *protocol.Handler, steps []adaptertest.Step, ran func(int)) adaptertest.Starter {
		e := echo.New()
		e.Use(echomiddleware.Recover())
		echomedian.Mount(e.Group(group), route, h, chainOf(steps, ran, echoStep)...)
		return adaptertest.ServeHTTP(e)
	},
	// echo stops a chain at a handler that returns an error; the core
	// answers it as Respond(c, nil, err).
	Abort: "return echo.ErrForbidden",
	// echo's error is not meant for the agent, which reads the tool's
	// name and a reference to the log.
	AbortAnswer: adaptertest.Want{Status: http.StatusOK, Code: protocol.CodeExecutionFailed, Message: "failed (reference "},
	Flush:       "http.NewResponseController(c.Response()).Flush()",
	Hijack:      "http.NewResponseController(c.Response()).Hijack()",
	Bare: func(answer adaptertest.Answer) adaptertest.Starter {
		e := echo.New()
		e.Any(adaptertest.Path, echoAnswer(answer))
		return adaptertest.ServeHTTP(e)
	},
	Values: func(h *protocol.Handler) adaptertest.Starter {
		e := echo.New()
		e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
			return func(c echo.Context) error {
				if id := c.Request().Header.Get(adaptertest.RequestIDHeader); id != "" {
					c.Set(adaptertest.ValueKey, id)
				}
				return next(c)
			}
		})
		echomedian.Mount(e.Group(group), route, h)
		return adaptertest.ServeHTTP(e)
	},
	// echo's Any routes PROPFIND and REPORT too.
	ExtraMethods:  []string{echo.PROPFIND, echo.REPORT},
	Foreign:       "PURGE",
	ForeignStatus: http.StatusMethodNotAllowed,
}

// echoStep is one handler of a chain on echo; returning nil passes the call
// on.
func echoStep(i int, step adaptertest.Step, ran func(int)) echo.HandlerFunc {
	return func(c echo.Context) error {
		ran(i)
		switch step {
		case adaptertest.Write:
			return c.String(http.StatusForbidden, adaptertest.ForbiddenBody)
		case adaptertest.Refuse:
			return echomedian.Respond(c, nil, adaptertest.Refusal)
		case adaptertest.Abort:
			return echo.ErrForbidden
		case adaptertest.Flush:
			return http.NewResponseController(c.Response()).Flush()
		case adaptertest.Hijack:
			if conn, rw, err := http.NewResponseController(c.Response()).Hijack(); err == nil {
				adaptertest.AnswerHijacked(conn, rw)
			}
		case adaptertest.Panic:
			panic(adaptertest.ChainPanic)
		case adaptertest.Dispatch:
			call, _ := echomedian.CallFrom(c)
			return echomedian.Respond(c, adaptertest.Dispatched(call), nil)
		}
		return nil
	}
}

// echoAnswer is the handler behind the middleware on echo.
func echoAnswer(answer adaptertest.Answer) echo.HandlerFunc {
	return func(c echo.Context) error {
		s := adaptertest.Seen{}
		s.Call, _ = echomedian.CallFrom(c)
		s.ContextCall, _ = protocol.CallFrom(c.Request().Context())
		s.Body, s.BodyErr = io.ReadAll(c.Request().Body)
		s.Target, s.Tenant, s.User = c.Request().RequestURI, c.QueryParam("tenant"), c.Request().Header.Get("X-User")
		result, err := answer(s)
		if errors.Is(err, adaptertest.ErrNothing) {
			return nil
		}
		if errors.Is(err, adaptertest.ErrNoAnswer) {
			return c.NoContent(http.StatusNoContent)
		}
		return echomedian.Respond(c, result, err)
	}
}
