package adapters

import (
	"errors"
	"io"
	"net/http"

	"github.com/go-chi/chi/v5"
	chimiddleware "github.com/go-chi/chi/v5/middleware"

	"github.com/median-go/median/chimedian"
	"github.com/median-go/median/internal/testonly/adaptertest"
	"github.com/median-go/median/protocol"
)

// Chi mounts with chimedian inside r.Route(group), behind chi's Recoverer.
var Chi = adaptertest.Adapter{
	Name: "chi",
	Endpoint: func(h *protocol.Handler) adaptertest.Starter {
		r := chi.NewRouter()
		r.Get(HealthPath, health)
		r.Route(group, func(r chi.Router) { chimedian.Mount(r, route, h) })
		return adaptertest.ServeHTTP(r)
	},
	Middleware: func(h *protocol.Handler, answer adaptertest.Answer) adaptertest.Starter {
		r := chi.NewRouter()
		r.Use(chimiddleware.Recoverer)
		r.Route(group, func(r chi.Router) { chimedian.Mount(r, route, h, chiAnswer(answer)) })
		return adaptertest.ServeHTTP(r)
	},
	Chain: func(h *protocol.Handler, steps []adaptertest.Step, ran func(int)) adaptertest.Starter {
		r := chi.NewRouter()
		r.Use(chimiddleware.Recoverer)
		r.Route(group, func(r chi.Router) {
			chimedian.Mount(r, route, h, chainOf(steps, ran, netHTTPStep(chimedian.Respond))...)
		})
		return adaptertest.ServeHTTP(r)
	},
	Flush:  "http.NewResponseController(w).Flush()",
	Hijack: "http.NewResponseController(w).Hijack()",
	Bare: func(answer adaptertest.Answer) adaptertest.Starter {
		r := chi.NewRouter()
		r.Handle(adaptertest.Path, chiAnswer(answer))
		return adaptertest.ServeHTTP(r)
	},
	Values: func(h *protocol.Handler) adaptertest.Starter {
		r := chi.NewRouter()
		r.Use(storeRequestID)
		r.Route(group, func(r chi.Router) { chimedian.Mount(r, route, h) })
		return adaptertest.ServeHTTP(r)
	},
	ValuesOutliveRequest: true,
	Foreign:              "PURGE",
	ForeignStatus:        http.StatusMethodNotAllowed,
}

// chiAnswer is the handler behind the middleware on chi: it reports what
// chimedian's CallFrom finds to answer and writes the result
// with chimedian.Respond.
func chiAnswer(answer adaptertest.Answer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := adaptertest.Seen{}
		s.Call, _ = chimedian.CallFrom(r)
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
		chimedian.Respond(w, r, result, err)
	})
}
