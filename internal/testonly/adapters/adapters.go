package adapters

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/median-go/median/internal/testonly/adaptertest"
	"github.com/median-go/median/protocol"
)

// group and route split adaptertest.Path for the frameworks that mount on
// a group.
var group, route = splitPath(adaptertest.Path)

func splitPath(path string) (string, string) {
	i := strings.LastIndex(path, "/")
	return path[:i], path[i:]
}

// HealthPath is a route every Endpoint app registers beside the Median
// endpoint, as an app has other routes.
const HealthPath = "/health"

// All lists the framework adapters, in the order the parity test compares
// them with NetHTTP.
func All() []adaptertest.Adapter {
	return []adaptertest.Adapter{Gin, Echo, Chi, Fiber, EchoV5, FiberV3, Hertz}
}

// NetHTTP is the reference: protocol.Handler on a net/http ServeMux with
// (*protocol.Handler).Mount, endpoint and middleware alike.
var NetHTTP = adaptertest.Adapter{
	Name: "net/http",
	Endpoint: func(h *protocol.Handler) adaptertest.Starter {
		mux := http.NewServeMux()
		mux.HandleFunc(HealthPath, health)
		h.Mount(mux, adaptertest.Path)
		return adaptertest.ServeHTTP(mux)
	},
	Middleware: func(h *protocol.Handler, answer adaptertest.Answer) adaptertest.Starter {
		mux := http.NewServeMux()
		h.Mount(mux, adaptertest.Path, netHTTPAnswer(answer))
		return adaptertest.ServeHTTP(mux)
	},
	Chain: func(h *protocol.Handler, steps []adaptertest.Step, ran func(int)) adaptertest.Starter {
		mux := http.NewServeMux()
		h.Mount(mux, adaptertest.Path, chainOf(steps, ran, netHTTPStep(protocol.Respond))...)
		return adaptertest.ServeHTTP(mux)
	},
	Flush:  "http.NewResponseController(w).Flush()",
	Hijack: "http.NewResponseController(w).Hijack()",
	Bare: func(answer adaptertest.Answer) adaptertest.Starter {
		mux := http.NewServeMux()
		mux.Handle(adaptertest.Path, netHTTPAnswer(answer))
		return adaptertest.ServeHTTP(mux)
	},
	Values: func(h *protocol.Handler) adaptertest.Starter {
		mux := http.NewServeMux()
		h.Mount(mux, adaptertest.Path)
		return adaptertest.ServeHTTP(storeRequestID(mux))
	},
	ValuesOutliveRequest: true,
	// A ServeMux pattern without a method matches every method.
	ExtraMethods: []string{"PROPFIND", "PURGE", "QUERY", "MKCOL"},
}

// health answers HealthPath on net/http.
func health(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }

// storeRequestID is net/http middleware that puts the request's
// X-Request-Id on its context under adaptertest.ValueKey.
func storeRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get(adaptertest.RequestIDHeader); id != "" {
			//lint:ignore SA1029 the kit's key is a string on purpose: echo's store takes only strings
			r = r.WithContext(context.WithValue(r.Context(), adaptertest.ValueKey, id))
		}
		next.ServeHTTP(w, r)
	})
}

// chainOf is the handlers of an Adapter.Chain, the one for steps[i] made
// by step(i, steps[i], ran) in the framework's handler type H.
func chainOf[H any](steps []adaptertest.Step, ran func(int), step func(int, adaptertest.Step, func(int)) H) []H {
	handlers := make([]H, len(steps))
	for i, s := range steps {
		handlers[i] = step(i, s, ran)
	}
	return handlers
}

// netHTTPStep makes the handlers of a chain on net/http (and chi, whose
// handlers are net/http's), answering with respond. net/http has no abort:
// a handler ends the chain by answering.
func netHTTPStep(respond func(http.ResponseWriter, *http.Request, any, error)) func(int, adaptertest.Step, func(int)) http.Handler {
	return func(i int, step adaptertest.Step, ran func(int)) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ran(i)
			switch step {
			case adaptertest.Write:
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				w.WriteHeader(http.StatusForbidden)
				_, _ = io.WriteString(w, adaptertest.ForbiddenBody)
			case adaptertest.Refuse:
				respond(w, r, nil, adaptertest.Refusal)
			case adaptertest.Flush:
				_ = http.NewResponseController(w).Flush()
			case adaptertest.Hijack:
				if conn, rw, err := http.NewResponseController(w).Hijack(); err == nil {
					adaptertest.AnswerHijacked(conn, rw)
				}
			case adaptertest.Panic:
				panic(adaptertest.ChainPanic)
			case adaptertest.Dispatch:
				call, _ := protocol.CallFrom(r.Context())
				respond(w, r, adaptertest.Dispatched(call), nil)
			}
		})
	}
}

// netHTTPAnswer is the handler behind the middleware on net/http: it
// reports what it finds on the request to answer and writes the result
// with protocol.Respond.
func netHTTPAnswer(answer adaptertest.Answer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := adaptertest.Seen{}
		s.Call, _ = protocol.CallFrom(r.Context())
		s.ContextCall, _ = protocol.CallFrom(r.Context())
		s.Body, s.BodyErr = io.ReadAll(r.Body)
		s.Target, s.Tenant, s.User = r.RequestURI, r.FormValue("tenant"), r.Header.Get("X-User")
		result, err := answer(s)
		if errors.Is(err, adaptertest.ErrNothing) {
			return
		}
		if errors.Is(err, adaptertest.ErrNoAnswer) {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		protocol.Respond(w, r, result, err)
	})
}
