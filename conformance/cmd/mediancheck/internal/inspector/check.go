package inspector

import (
	"net/http"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/conformance/internal/wire"
)

// serveCheck runs the conformance suite against the endpoint, with this
// run's calls as its samples (as the export writes them), and lists each
// case's result with the curl line that reproduces it.
func (s *Server) serveCheck(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	samples := samplesOf(s.history)
	s.mu.Unlock()
	target := conformance.URLTarget(s.cfg.URL, s.cfg.Key)
	target.Tools = samples
	target.UserAgent = wire.UserAgent()
	rep, err := conformance.Check(r.Context(), target, conformance.Options{Timeout: s.cfg.Timeout})
	if err != nil {
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	count := func(status string) int {
		n := 0
		for _, v := range rep.Verdicts {
			if v.Status == status {
				n++
			}
		}
		return n
	}
	writeJSON(w, map[string]any{
		"verdicts": rep.Verdicts,
		"passed":   count("pass"),
		"failed":   count("fail"),
		"skipped":  count("skip"),
		"samples":  len(samples),
	})
}
