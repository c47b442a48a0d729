package inspector

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/conformance/agent"
)

// serveExport writes this run's calls as a samples file that mediancheck
// -samples and conformance.ReadSamples read.
func (s *Server) serveExport(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	list := samplesOf(s.history)
	s.mu.Unlock()
	w.Header().Set("Content-Disposition", `attachment; filename="samples.json"`)
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(map[string]any{"tools": list})
}

// samplesOf turns calls into samples: a call that got a result, a refusal
// or execution_failed becomes a sample expecting that again (once per
// distinct call); an input refused with invalid_input joins the
// invalidInputs of the tool's first sample. Replays, diagnostics, and
// answers the agent reads nothing of are left out, and so is an invalid
// input of a tool with no valid sample (a sample needs a valid input).
func samplesOf(history []*entry) []conformance.ToolSample {
	var list []conformance.ToolSample
	seen := map[string]bool{}
	var invalid []*entry
	for _, e := range history {
		if e.Kind != "call" || e.View == nil || e.Persona == nil {
			continue
		}
		var expect string
		switch {
		case e.View.Told == agent.ToldFixInput:
			invalid = append(invalid, e)
			continue
		case e.View.Told == agent.ToldDoNotRetry:
			expect = "execution_failed"
		case e.View.Told == agent.ToldResult && e.View.Refusal:
			expect = "refusal"
		case e.View.Told == agent.ToldResult:
			expect = "" // the default, a result
		default:
			continue
		}
		p := e.Persona
		smp := conformance.ToolSample{
			Tool:       e.Tool,
			Input:      e.Input, // a json.RawMessage, written as it was sent
			Visitor:    conformance.Visitor{Verified: p.Verified, ExternalID: p.ExternalID, Email: p.Email, Name: p.Name},
			Risk:       p.Risk,
			ApprovedBy: p.ApprovedBy,
			Unapproved: p.Unapproved,
			Expect:     expect,
		}
		key, _ := json.Marshal(smp)
		if seen[string(key)] {
			continue
		}
		seen[string(key)] = true
		list = append(list, smp)
	}
	for _, e := range invalid {
		i := slices.IndexFunc(list, func(s conformance.ToolSample) bool { return s.Tool == e.Tool })
		if i < 0 {
			continue
		}
		if !slices.ContainsFunc(list[i].InvalidInputs, func(in json.RawMessage) bool { return string(in) == string(e.Input) }) {
			list[i].InvalidInputs = append(list[i].InvalidInputs, e.Input)
		}
	}
	return list
}
