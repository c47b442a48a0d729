package inspector

import (
	"net/http"

	"github.com/median-go/median/conformance"
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
	rep, err := conformance.Check(r.Context(), target, conformance.Options{Timeout: s.cfg.Timeout})
	if err != nil {
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	writeJSON(w, map[string]any{
		"results": rep.Results,
		"passed":  rep.Count(conformance.StatusPass),
		"failed":  rep.Count(conformance.StatusFail),
		"skipped": rep.Count(conformance.StatusSkip),
		"samples": len(samples),
	})
}
