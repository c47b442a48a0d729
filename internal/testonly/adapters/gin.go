package adapters

import (
	"errors"
	"io"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/median-go/median/ginmedian"
	"github.com/median-go/median/internal/testonly/adaptertest"
	"github.com/median-go/median/protocol"
)

func init() { gin.SetMode(gin.ReleaseMode) }

// Gin mounts with ginmedian on a gin.RouterGroup, behind gin.Recovery.
var Gin = adaptertest.Adapter{
	Name: "gin",
	Endpoint: func(h *protocol.Handler) adaptertest.Starter {
		r := gin.New()
		r.GET(HealthPath, func(c *gin.Context) { c.String(http.StatusOK, "ok") })
		ginmedian.Mount(r.Group(group), route, h)
		return adaptertest.ServeHTTP(r)
	},
	Middleware: func(h *protocol.Handler, answer adaptertest.Answer) adaptertest.Starter {
		r := gin.New()
		r.Use(gin.Recovery())
		ginmedian.Mount(r.Group(group), route, h, ginAnswer(answer))
		return adaptertest.ServeHTTP(r)
	},
	Chain: func(h *protocol.Handler, steps []adaptertest.Step, ran func(int)) adaptertest.Starter {
		r := gin.New()
		r.Use(gin.Recovery())
		ginmedian.Mount(r.Group(group), route, h, chainOf(steps, ran, ginStep)...)
		return adaptertest.ServeHTTP(r)
	},
	Abort:       "c.Abort()",
	AbortAnswer: adaptertest.Want{Status: http.StatusOK, Code: protocol.CodeExecutionFailed, Message: "did not answer"},
	Flush:       "c.Writer.Flush()",
	Hijack:      "c.Writer.Hijack()",
	Bare: func(answer adaptertest.Answer) adaptertest.Starter {
		r := gin.New()
		r.Any(adaptertest.Path, ginAnswer(answer))
		return adaptertest.ServeHTTP(r)
	},
	Values: func(h *protocol.Handler) adaptertest.Starter {
		r := gin.New()
		r.Use(func(c *gin.Context) {
			if id := c.GetHeader(adaptertest.RequestIDHeader); id != "" {
				c.Set(adaptertest.ValueKey, id)
			}
		})
		ginmedian.Mount(r.Group(group), route, h)
		return adaptertest.ServeHTTP(r)
	},
	Foreign:       "PURGE",
	ForeignStatus: http.StatusNotFound,
}

// ginStep is one handler of a chain on gin; gin runs the next handler
// unless one aborts.
func ginStep(i int, step adaptertest.Step, ran func(int)) gin.HandlerFunc {
	return func(c *gin.Context) {
		ran(i)
		switch step {
		case adaptertest.Write:
			c.String(http.StatusForbidden, adaptertest.ForbiddenBody)
		case adaptertest.Refuse:
			ginmedian.Respond(c, nil, adaptertest.Refusal)
		case adaptertest.Abort:
			c.Abort()
		case adaptertest.Flush:
			c.Writer.Flush()
		case adaptertest.Hijack:
			if conn, rw, err := c.Writer.Hijack(); err == nil {
				adaptertest.AnswerHijacked(conn, rw)
			}
		case adaptertest.Panic:
			panic(adaptertest.ChainPanic)
		case adaptertest.Dispatch:
			call, _ := ginmedian.CallFrom(c)
			ginmedian.Respond(c, adaptertest.Dispatched(call), nil)
		}
	}
}

// ginAnswer is the handler behind the middleware on gin.
func ginAnswer(answer adaptertest.Answer) gin.HandlerFunc {
	return func(c *gin.Context) {
		s := adaptertest.Seen{}
		s.Call, _ = ginmedian.CallFrom(c)
		s.ContextCall, _ = protocol.CallFrom(c.Request.Context())
		s.Body, s.BodyErr = io.ReadAll(c.Request.Body)
		s.Target, s.Tenant, s.User = c.Request.RequestURI, c.Query("tenant"), c.GetHeader("X-User")
		result, err := answer(s)
		if errors.Is(err, adaptertest.ErrNothing) {
			return
		}
		if errors.Is(err, adaptertest.ErrNoAnswer) {
			c.Status(http.StatusNoContent)
			return
		}
		ginmedian.Respond(c, result, err)
	}
}
