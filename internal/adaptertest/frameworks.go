package adaptertest

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/go-chi/chi/v5"
	"github.com/gofiber/fiber/v2"
	"github.com/labstack/echo/v4"
	"go.uber.org/goleak"

	"github.com/median-go/median/chimedian"
	"github.com/median-go/median/echomedian"
	"github.com/median-go/median/fibermedian"
	"github.com/median-go/median/ginmedian"
	"github.com/median-go/median/protocol"
)

// group and route split Path for the frameworks that mount on a group.
var group, route = Path[:strings.LastIndex(Path, "/")], Path[strings.LastIndex(Path, "/"):]

// All lists the adapters, in the order the parity test compares them with
// NetHTTP.
func All() []Adapter { return []Adapter{Gin, Echo, Chi, Fiber, EchoV5, FiberV3} }

// NetHTTP is the reference: protocol.Handler on a net/http ServeMux (at Path
// and Path+"/", as the adapters' Mount registers), and chimedian's net/http
// middleware in front of a plain handler.
var NetHTTP = Adapter{
	Name: "net/http",
	Endpoint: func(h *protocol.Handler) Starter {
		mux := http.NewServeMux()
		mux.Handle(Path, h)
		mux.Handle(Path+"/", h)
		return ServeHTTP(mux)
	},
	Middleware: func(h *protocol.Handler, answer Answer) Starter {
		mux := http.NewServeMux()
		mux.Handle(Path, chimedian.Middleware(h)(netHTTPAnswer(answer)))
		return ServeHTTP(mux)
	},
	Bare: func(answer Answer) Starter {
		mux := http.NewServeMux()
		mux.Handle(Path, netHTTPAnswer(answer))
		return ServeHTTP(mux)
	},
	// A ServeMux pattern without a method matches every method.
	ExtraMethods: []string{"PROPFIND", "PURGE", "QUERY", "MKCOL"},
}

func netHTTPAnswer(answer Answer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := Seen{}
		s.Call, _ = chimedian.CallFrom(r)
		s.ContextCall, _ = protocol.CallFromContext(r.Context())
		s.Visitor, s.VisitorOK = chimedian.VisitorFrom(r)
		s.Body, s.BodyErr = io.ReadAll(r.Body)
		result, err := answer(s)
		if errors.Is(err, ErrNoAnswer) {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		chimedian.Respond(w, r, result, err)
	})
}

// Chi mounts with chimedian inside r.Route(group).
var Chi = Adapter{
	Name: "chi",
	Endpoint: func(h *protocol.Handler) Starter {
		r := chi.NewRouter()
		r.Route(group, func(r chi.Router) { chimedian.Mount(r, route, h) })
		return ServeHTTP(r)
	},
	Middleware: func(h *protocol.Handler, answer Answer) Starter {
		r := chi.NewRouter()
		r.Route(group, func(r chi.Router) {
			r.With(chimedian.Middleware(h)).Handle(route, netHTTPAnswer(answer))
		})
		return ServeHTTP(r)
	},
	Bare: func(answer Answer) Starter {
		r := chi.NewRouter()
		r.Handle(Path, netHTTPAnswer(answer))
		return ServeHTTP(r)
	},
}

func init() { gin.SetMode(gin.ReleaseMode) }

// Gin mounts with ginmedian on a gin.RouterGroup.
var Gin = Adapter{
	Name: "gin",
	Endpoint: func(h *protocol.Handler) Starter {
		r := gin.New()
		ginmedian.Mount(r.Group(group), route, h)
		return ServeHTTP(r)
	},
	Middleware: func(h *protocol.Handler, answer Answer) Starter {
		r := gin.New()
		r.Group(group).Any(route, ginmedian.Middleware(h), ginAnswer(answer))
		return ServeHTTP(r)
	},
	Bare: func(answer Answer) Starter {
		r := gin.New()
		r.Any(Path, ginAnswer(answer))
		return ServeHTTP(r)
	},
	ExtraMethods: ginmedian.ExtraMethods,
}

func ginAnswer(answer Answer) gin.HandlerFunc {
	return func(c *gin.Context) {
		s := Seen{}
		s.Call, _ = ginmedian.CallFrom(c)
		s.ContextCall, _ = protocol.CallFromContext(c.Request.Context())
		s.Visitor, s.VisitorOK = ginmedian.VisitorFrom(c)
		s.Body, s.BodyErr = io.ReadAll(c.Request.Body)
		result, err := answer(s)
		if errors.Is(err, ErrNoAnswer) {
			c.Status(http.StatusNoContent)
			return
		}
		ginmedian.Respond(c, result, err)
	}
}

// Echo mounts with echomedian on an echo.Group.
var Echo = Adapter{
	Name: "echo",
	Endpoint: func(h *protocol.Handler) Starter {
		e := echo.New()
		echomedian.Mount(e.Group(group), route, h)
		return ServeHTTP(e)
	},
	Middleware: func(h *protocol.Handler, answer Answer) Starter {
		e := echo.New()
		e.Group(group).Any(route, echoAnswer(answer), echomedian.Middleware(h))
		return ServeHTTP(e)
	},
	Bare: func(answer Answer) Starter {
		e := echo.New()
		e.Any(Path, echoAnswer(answer))
		return ServeHTTP(e)
	},
	// echo's Any has PROPFIND and REPORT; Mount adds echomedian.ExtraMethods.
	ExtraMethods: append([]string{echo.PROPFIND, echo.REPORT}, echomedian.ExtraMethods...),
}

func echoAnswer(answer Answer) echo.HandlerFunc {
	return func(c echo.Context) error {
		s := Seen{}
		s.Call, _ = echomedian.CallFrom(c)
		s.ContextCall, _ = protocol.CallFromContext(c.Request().Context())
		s.Visitor, s.VisitorOK = echomedian.VisitorFrom(c)
		s.Body, s.BodyErr = io.ReadAll(c.Request().Body)
		result, err := answer(s)
		if errors.Is(err, ErrNoAnswer) {
			return c.NoContent(http.StatusNoContent)
		}
		return echomedian.Respond(c, result, err)
	}
}

// Fiber mounts with fibermedian on a fiber group, served by fasthttp with
// fiber's default config.
var Fiber = FiberWith(fiber.Config{})

// FiberWith is Fiber on apps built with cfg (its startup message always
// off), to run the kit under other settings such as StreamRequestBody or
// RequestMethods (whose extra methods then reach the Handler).
func FiberWith(cfg fiber.Config) Adapter {
	cfg.DisableStartupMessage = true
	var extra []string
	for _, m := range cfg.RequestMethods {
		if !slices.Contains(fiber.DefaultMethods, m) {
			extra = append(extra, m)
		}
	}
	return Adapter{
		Name:         "fiber",
		ExtraMethods: extra,
		Endpoint: func(h *protocol.Handler) Starter {
			app := fiber.New(cfg)
			fibermedian.Mount(app.Group(group), route, h)
			return ServeFiber(app)
		},
		Middleware: func(h *protocol.Handler, answer Answer) Starter {
			app := fiber.New(cfg)
			app.Group(group).All(route, fibermedian.Middleware(h), fiberAnswer(answer))
			return ServeFiber(app)
		},
		Bare: func(answer Answer) Starter {
			app := fiber.New(cfg)
			app.All(Path, fiberAnswer(answer))
			return ServeFiber(app)
		},
	}
}

func fiberAnswer(answer Answer) fiber.Handler {
	return func(c *fiber.Ctx) error {
		s := Seen{}
		s.Call, _ = fibermedian.CallFrom(c)
		s.ContextCall, _ = protocol.CallFromContext(c.UserContext())
		s.Visitor, s.VisitorOK = fibermedian.VisitorFrom(c)
		s.Body = bytes.Clone(c.Body()) // fasthttp reuses it after the handler
		result, err := answer(s)
		if errors.Is(err, ErrNoAnswer) {
			return c.SendStatus(http.StatusNoContent)
		}
		return fibermedian.Respond(c, result, err)
	}
}

// ServeFiber returns a Starter that serves app with fasthttp.
func ServeFiber(app *fiber.App) Starter {
	return func(ln net.Listener) func() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = app.Listener(ln)
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

// FasthttpGoroutines are the goroutines fasthttp leaves behind by design,
// for goleak: the server-date ticker lives for the process, and a stopped
// worker pool's cleaner notices the stop only at its next 10-second tick.
// Neither belongs to an adapter.
var FasthttpGoroutines = []goleak.Option{
	goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
	goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
}
