package adapters

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/cloudwego/hertz/pkg/app"
	"github.com/cloudwego/hertz/pkg/app/middlewares/server/recovery"
	"github.com/cloudwego/hertz/pkg/app/server"
	"github.com/cloudwego/hertz/pkg/common/config"
	"github.com/cloudwego/hertz/pkg/common/hlog"
	"github.com/cloudwego/hertz/pkg/network/standard"
	hertzroute "github.com/cloudwego/hertz/pkg/route"

	"github.com/median-go/median/hertzmedian"
	"github.com/median-go/median/internal/testonly/adaptertest"
	"github.com/median-go/median/internal/testonly/hertztest"
	"github.com/median-go/median/protocol"
)

// Hertz's own startup and shutdown lines are not the tests' business.
func init() { hlog.SetLevel(hlog.LevelWarn) }

// Hertz mounts with hertzmedian on a Hertz router group, served by Hertz's
// default transport with its default options.
var Hertz = HertzWith()

// HertzWith is Hertz on servers built with opts too (a streamed body, for
// one).
func HertzWith(opts ...config.Option) adaptertest.Adapter {
	name := "hertz"
	// Hertz reads a request's whole declared body before any handler runs
	// (up to server.WithMaxRequestBodySize, 4 MiB by default), as
	// hertzmedian's doc and SECURITY.md say; a streamed body does not.
	reserves := "Hertz reserves and reads the declared body before any handler runs (server.WithMaxRequestBodySize bounds it)"
	if len(opts) > 0 {
		name = "hertz with options"
		reserves = ""
	}
	return adaptertest.Adapter{
		Name: name,
		Endpoint: func(h *protocol.Handler) adaptertest.Starter {
			return ServeHertz(func(e *hertzroute.Engine) {
				e.GET(HealthPath, func(_ context.Context, c *app.RequestContext) { c.String(http.StatusOK, "ok") })
				hertzmedian.Mount(e.Group(group), route, h)
			}, opts...)
		},
		Middleware: func(h *protocol.Handler, answer adaptertest.Answer) adaptertest.Starter {
			return ServeHertz(func(e *hertzroute.Engine) {
				e.Use(recovery.Recovery())
				hertzmedian.Mount(e.Group(group), route, h, hertzAnswer(answer))
			}, opts...)
		},
		Chain: func(h *protocol.Handler, steps []adaptertest.Step, ran func(int)) adaptertest.Starter {
			return ServeHertz(func(e *hertzroute.Engine) {
				e.Use(recovery.Recovery())
				hertzmedian.Mount(e.Group(group), route, h, chainOf(steps, ran, hertzStep)...)
			}, opts...)
		},
		Abort:       "c.Abort()",
		AbortAnswer: adaptertest.Want{Status: http.StatusOK, Code: protocol.CodeExecutionFailed, Message: "did not answer"},
		// Hertz writes the response the handler set before it hands a
		// hijacked connection over, so the kit's Hijack step, which answers
		// on the connection alone, does not apply (hertzmedian's own tests
		// hijack).
		Bare: func(answer adaptertest.Answer) adaptertest.Starter {
			return ServeHertz(func(e *hertzroute.Engine) { e.Any(adaptertest.Path, hertzAnswer(answer)) }, opts...)
		},
		Values: func(h *protocol.Handler) adaptertest.Starter {
			return ServeHertz(func(e *hertzroute.Engine) {
				e.Use(hertzRequestID)
				hertzmedian.Mount(e.Group(group), route, h)
			}, opts...)
		},
		Foreign:              "PURGE",
		ForeignStatus:        http.StatusNotFound,
		ReservesDeclaredBody: reserves,
	}
}

// hertzRequestID is Hertz middleware that stores the request's
// X-Request-Id under adaptertest.ValueKey with c.Set.
func hertzRequestID(ctx context.Context, c *app.RequestContext) {
	if id := c.Request.Header.Get(adaptertest.RequestIDHeader); id != "" {
		c.Set(adaptertest.ValueKey, id)
	}
	c.Next(ctx)
}

// hertzStep is one handler of a chain on Hertz; Hertz runs the next
// handler unless one aborts.
func hertzStep(i int, step adaptertest.Step, ran func(int)) app.HandlerFunc {
	return func(ctx context.Context, c *app.RequestContext) {
		ran(i)
		switch step {
		case adaptertest.Write:
			c.String(http.StatusForbidden, adaptertest.ForbiddenBody)
		case adaptertest.Refuse:
			hertzmedian.Respond(ctx, c, nil, adaptertest.Refusal)
		case adaptertest.Abort:
			c.Abort()
		case adaptertest.Panic:
			panic(adaptertest.ChainPanic)
		case adaptertest.Dispatch:
			call, _ := hertzmedian.CallFrom(ctx)
			hertzmedian.Respond(ctx, c, adaptertest.Dispatched(call), nil)
		}
	}
}

// hertzAnswer is the handler behind the middleware on Hertz.
func hertzAnswer(answer adaptertest.Answer) app.HandlerFunc {
	return func(ctx context.Context, c *app.RequestContext) {
		s := adaptertest.Seen{}
		s.Call, _ = hertzmedian.CallFrom(ctx)
		s.ContextCall, _ = protocol.CallFrom(ctx)
		body, err := c.Body()
		s.Body, s.BodyErr = bytes.Clone(body), err // Hertz reuses it after the handler
		s.Target, s.Tenant, s.User = string(c.Request.Header.RequestURI()), c.Query("tenant"), string(c.GetHeader("X-User"))
		result, err := answer(s)
		if errors.Is(err, adaptertest.ErrNothing) {
			return
		}
		if errors.Is(err, adaptertest.ErrNoAnswer) {
			c.SetStatusCode(http.StatusNoContent)
			return
		}
		hertzmedian.Respond(ctx, c, result, err)
	}
}

// ServeHertz returns a Starter that builds a Hertz server on the listener
// (with opts, route printing off and a short shutdown wait), lets routes
// register its routes, and serves it.
func ServeHertz(routes func(*hertzroute.Engine), opts ...config.Option) adaptertest.Starter {
	return func(ln net.Listener) func() {
		all := append([]config.Option{server.WithListener(ln), server.WithDisablePrintRoute(true), server.WithExitWaitTime(time.Second)}, opts...)
		if _, ok := ln.(*net.TCPListener); !ok {
			// netpoll serves only a listener it can take the descriptor of
			// (it panics on another); the cases that wrap the listener to
			// watch the connections (the keyless-client cases) are served
			// by Hertz's standard transport.
			all = append(all, server.WithTransport(standard.NewTransporter))
		}
		hz := server.New(all...)
		routes(hz.Engine)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = hz.Run()
		}()
		return func() { hertztest.Stop(hz, ln, done) }
	}
}
