package adaptertest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/go-chi/chi/v5"
	chimiddleware "github.com/go-chi/chi/v5/middleware"
	"github.com/gofiber/fiber/v2"
	fiberrecover "github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/labstack/echo/v4"
	echomiddleware "github.com/labstack/echo/v4/middleware"
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

// NetHTTP is the reference: protocol.Handler on a net/http ServeMux, and
// its Middleware in front of a plain handler, at Path and Path+"/" (as the
// adapters' Mount registers).
var NetHTTP = Adapter{
	Name: "net/http",
	Endpoint: func(h *protocol.Handler) Starter {
		return ServeHTTP(bothPaths(h))
	},
	Middleware: func(h *protocol.Handler, answer Answer) Starter {
		return ServeHTTP(bothPaths(h.Middleware(netHTTPAnswer(answer))))
	},
	Bare: func(answer Answer) Starter {
		return ServeHTTP(bothPaths(netHTTPAnswer(answer)))
	},
	Values: func(h *protocol.Handler) Starter {
		return ServeHTTP(storeRequestID(bothPaths(h)))
	},
	ValuesOutliveRequest: true,
	// A ServeMux pattern without a method matches every method.
	ExtraMethods: []string{"PROPFIND", "PURGE", "QUERY", "MKCOL"},
}

// bothPaths serves handler at Path and Path+"/" on a ServeMux.
func bothPaths(handler http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(Path, handler)
	mux.Handle(Path+"/", handler)
	return mux
}

// storeRequestID is net/http middleware that puts the request's
// X-Request-Id on its context under ValueKey.
func storeRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get(RequestIDHeader); id != "" {
			r = r.WithContext(context.WithValue(r.Context(), ValueKey, id)) //nolint:staticcheck // the kit's key is a string on purpose: echo's store takes only strings
		}
		next.ServeHTTP(w, r)
	})
}

func netHTTPAnswer(answer Answer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := Seen{}
		s.Call, _ = chimedian.CallFrom(r)
		s.ContextCall, _ = protocol.CallFrom(r.Context())
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

// Chi mounts with chimedian inside r.Route(group), behind chi's Recoverer.
var Chi = Adapter{
	Name: "chi",
	Endpoint: func(h *protocol.Handler) Starter {
		r := chi.NewRouter()
		r.Route(group, func(r chi.Router) { chimedian.Mount(r, route, h) })
		return ServeHTTP(r)
	},
	Middleware: func(h *protocol.Handler, answer Answer) Starter {
		r := chi.NewRouter()
		r.Use(chimiddleware.Recoverer)
		r.Route(group, func(r chi.Router) { chimedian.Mount(r, route, h, netHTTPAnswer(answer)) })
		return ServeHTTP(r)
	},
	Bare: func(answer Answer) Starter {
		r := chi.NewRouter()
		r.Handle(Path, netHTTPAnswer(answer))
		return ServeHTTP(r)
	},
	Values: func(h *protocol.Handler) Starter {
		r := chi.NewRouter()
		r.Use(storeRequestID)
		r.Route(group, func(r chi.Router) { chimedian.Mount(r, route, h) })
		return ServeHTTP(r)
	},
	ValuesOutliveRequest: true,
	Foreign:              "PURGE",
	ForeignStatus:        http.StatusMethodNotAllowed,
}

func init() { gin.SetMode(gin.ReleaseMode) }

// Gin mounts with ginmedian on a gin.RouterGroup, behind gin.Recovery.
var Gin = Adapter{
	Name: "gin",
	Endpoint: func(h *protocol.Handler) Starter {
		r := gin.New()
		ginmedian.Mount(r.Group(group), route, h)
		return ServeHTTP(r)
	},
	Middleware: func(h *protocol.Handler, answer Answer) Starter {
		r := gin.New()
		r.Use(gin.Recovery())
		ginmedian.Mount(r.Group(group), route, h, ginAnswer(answer))
		return ServeHTTP(r)
	},
	Bare: func(answer Answer) Starter {
		r := gin.New()
		r.Any(Path, ginAnswer(answer))
		return ServeHTTP(r)
	},
	Values: func(h *protocol.Handler) Starter {
		r := gin.New()
		r.Use(func(c *gin.Context) {
			if id := c.GetHeader(RequestIDHeader); id != "" {
				c.Set(ValueKey, id)
			}
		})
		ginmedian.Mount(r.Group(group), route, h)
		return ServeHTTP(r)
	},
	Foreign:       "PURGE",
	ForeignStatus: http.StatusNotFound,
}

func ginAnswer(answer Answer) gin.HandlerFunc {
	return func(c *gin.Context) {
		s := Seen{}
		s.Call, _ = ginmedian.CallFrom(c)
		s.ContextCall, _ = protocol.CallFrom(c.Request.Context())
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

// Echo mounts with echomedian on an echo.Group, behind echo's Recover.
var Echo = Adapter{
	Name: "echo",
	Endpoint: func(h *protocol.Handler) Starter {
		e := echo.New()
		echomedian.Mount(e.Group(group), route, h)
		return ServeHTTP(e)
	},
	Middleware: func(h *protocol.Handler, answer Answer) Starter {
		e := echo.New()
		e.Use(echomiddleware.Recover())
		echomedian.Mount(e.Group(group), route, h, echoAnswer(answer))
		return ServeHTTP(e)
	},
	Bare: func(answer Answer) Starter {
		e := echo.New()
		e.Any(Path, echoAnswer(answer))
		return ServeHTTP(e)
	},
	Values: func(h *protocol.Handler) Starter {
		e := echo.New()
		e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
			return func(c echo.Context) error {
				if id := c.Request().Header.Get(RequestIDHeader); id != "" {
					c.Set(ValueKey, id)
				}
				return next(c)
			}
		})
		echomedian.Mount(e.Group(group), route, h)
		return ServeHTTP(e)
	},
	// echo's Any routes PROPFIND and REPORT too.
	ExtraMethods:  []string{echo.PROPFIND, echo.REPORT},
	Foreign:       "PURGE",
	ForeignStatus: http.StatusMethodNotAllowed,
}

func echoAnswer(answer Answer) echo.HandlerFunc {
	return func(c echo.Context) error {
		s := Seen{}
		s.Call, _ = echomedian.CallFrom(c)
		s.ContextCall, _ = protocol.CallFrom(c.Request().Context())
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
		// fiber refuses a method outside RequestMethods before routing.
		Foreign:       "MKCOL",
		ForeignStatus: http.StatusBadRequest,
		Endpoint: func(h *protocol.Handler) Starter {
			app := fiber.New(cfg)
			fibermedian.Mount(app.Group(group), route, h)
			return ServeFiber(app)
		},
		Middleware: func(h *protocol.Handler, answer Answer) Starter {
			app := fiber.New(cfg)
			app.Use(fiberrecover.New())
			fibermedian.Mount(app.Group(group), route, h, fiberAnswer(answer))
			return ServeFiber(app)
		},
		Bare: func(answer Answer) Starter {
			app := fiber.New(cfg)
			app.All(Path, fiberAnswer(answer))
			return ServeFiber(app)
		},
		Values: func(h *protocol.Handler) Starter {
			app := fiber.New(cfg)
			app.Use(func(c *fiber.Ctx) error {
				if id := c.Get(RequestIDHeader); id != "" {
					c.Locals(ValueKey, strings.Clone(id)) // c.Get aliases fasthttp's buffer
				}
				return c.Next()
			})
			fibermedian.Mount(app.Group(group), route, h)
			return ServeFiber(app)
		},
	}
}

func fiberAnswer(answer Answer) fiber.Handler {
	return func(c *fiber.Ctx) error {
		s := Seen{}
		s.Call, _ = fibermedian.CallFrom(c)
		s.ContextCall, _ = protocol.CallFrom(c.UserContext())
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
