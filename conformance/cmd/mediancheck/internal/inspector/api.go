package inspector

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/median-go/median/conformance/internal/wire"
)

// maxRequest is the most bytes the page may send in one API call.
const maxRequest = 4 << 20

// toolView is a manifest tool as the page gets it.
type toolView struct {
	wire.Tool
	DeclaredRisk string `json:"declaredRisk"`
	FormProblem  string `json:"formProblem,omitempty"` // why the form cannot be built; the raw editor is used
}

// serveTools reads the signed manifest.
func (s *Server) serveTools(w http.ResponseWriter, r *http.Request) {
	tools, _, err := s.client.Manifest(r.Context())
	if err != nil {
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	s.mu.Lock()
	s.tools = tools
	s.mu.Unlock()
	list := make([]toolView, len(tools))
	for i, t := range tools {
		list[i] = toolView{Tool: t, DeclaredRisk: wire.DeclaredRisk(tools, t.Name), FormProblem: formProblem(t.InputSchema)}
	}
	writeJSON(w, map[string]any{"url": s.cfg.URL, "tools": list})
}

// callRequest is what the page sends to call a tool.
type callRequest struct {
	Tool    string       `json:"tool"`
	Input   string       `json:"input"` // the input's JSON text, as typed
	Persona wire.Persona `json:"persona"`
}

// serveValidate checks an input against the tool's schema before it is
// sent.
func (s *Server) serveValidate(w http.ResponseWriter, r *http.Request) {
	var req callRequest
	if !readRequest(w, r, &req) {
		return
	}
	writeJSON(w, map[string]any{"problems": s.validate(req.Tool, req.Input)})
}

// serveCall signs and sends one call.
func (s *Server) serveCall(w http.ResponseWriter, r *http.Request) {
	var req callRequest
	if !readRequest(w, r, &req) {
		return
	}
	if req.Tool == "" {
		writeError(w, http.StatusBadRequest, "choose a tool")
		return
	}
	input := json.RawMessage(strings.TrimSpace(req.Input))
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	if !json.Valid(input) {
		writeError(w, http.StatusBadRequest, "the input is not valid JSON, so no call can carry it: fix it in the raw editor")
		return
	}
	s.mu.Lock()
	p := req.Persona.Approve(wire.DeclaredRisk(s.tools, req.Tool))
	s.mu.Unlock()
	id := wire.NewID()
	body, err := wire.CallBody(req.Tool, id, input, p)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	e := newEntry("call", s.client.Post(r.Context(), body), false)
	e.Tool, e.ToolCallID, e.Input, e.Persona = req.Tool, id, input, &p
	writeJSON(w, s.record(e, body))
}

// serveReplay sends an earlier call's body again, byte for byte, with a
// fresh signature: the same toolCallId, so a replay-protected endpoint
// answers what it answered then without running the tool again.
func (s *Server) serveReplay(w http.ResponseWriter, r *http.Request) {
	var req struct {
		N int `json:"n"`
	}
	if !readRequest(w, r, &req) {
		return
	}
	s.mu.Lock()
	body, ok := s.bodies[req.N]
	var of *entry
	for _, e := range s.history {
		if e.N == req.N {
			of = e
		}
	}
	s.mu.Unlock()
	if !ok || of == nil || of.Kind == "diagnostics" {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no call #%d in this run's history", req.N))
		return
	}
	e := newEntry("replay", s.client.Post(r.Context(), body), false)
	e.ReplayOf, e.Tool, e.ToolCallID, e.Input, e.Persona = of.N, of.Tool, of.ToolCallID, of.Input, of.Persona
	if of.ReplayOf != 0 {
		e.ReplayOf = of.ReplayOf
	}
	writeJSON(w, s.record(e, body))
}

// serveDiagnostics asks the endpoint for its diagnostics report, and says
// its clock readings in words among the view's notes.
func (s *Server) serveDiagnostics(w http.ResponseWriter, r *http.Request) {
	x := s.client.Post(r.Context(), wire.DiagnosticsBody)
	e := newEntry("diagnostics", x, true)
	if e.View != nil {
		e.View.Notes = append(e.View.Notes, clockNotes(x.Answer)...)
	}
	writeJSON(w, s.record(e, nil))
}

// clockNotes says a report's clock readings in words: the skew of the
// diagnostics request this machine signed, and the stale requests'.
func clockNotes(answer []byte) []string {
	var a struct {
		Result struct {
			Clock struct {
				SkewMs *int64 `json:"skewMs"`
			} `json:"clock"`
			Refused struct {
				Stale struct {
					MaxSkewMs int64 `json:"maxSkewMs"`
				} `json:"stale_timestamp"`
			} `json:"refused"`
		} `json:"result"`
	}
	if json.Unmarshal(answer, &a) != nil {
		return nil
	}
	var notes []string
	if sk := a.Result.Clock.SkewMs; sk != nil {
		notes = append(notes, fmt.Sprintf("clock.skewMs %d: %s", *sk, wire.ClockWords(*sk, "this machine", "the server")))
	}
	if sk := a.Result.Refused.Stale.MaxSkewMs; sk != 0 {
		notes = append(notes, fmt.Sprintf("refused.stale_timestamp.maxSkewMs %d: if the furthest off in the last hour came from Median, %s", sk, wire.ClockWords(sk, "Median", "this server")))
	}
	return notes
}

// serveHistory lists this run's entries, oldest first: [] before the
// first, never null.
func (s *Server) serveHistory(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	list := append([]*entry{}, s.history...)
	s.mu.Unlock()
	writeJSON(w, map[string]any{"entries": list})
}

// record numbers e, adds it to the history and keeps body for a replay.
func (s *Server) record(e *entry, body []byte) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.N = 1
	if n := len(s.history); n > 0 {
		e.N = s.history[n-1].N + 1
	}
	s.history = append(s.history, e)
	if body != nil {
		s.bodies[e.N] = body
	}
	if len(s.history) > maxHistory {
		delete(s.bodies, s.history[0].N)
		s.history = s.history[1:]
	}
	return e
}

// readRequest decodes the page's JSON request into v, answering 400 when
// it cannot.
func readRequest(w http.ResponseWriter, r *http.Request, v any) bool {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxRequest+1))
	if err == nil && len(data) > maxRequest {
		err = fmt.Errorf("over %d bytes", maxRequest)
	}
	if err == nil {
		err = json.Unmarshal(data, v)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "the page's request cannot be read: "+err.Error())
		return false
	}
	return true
}

// writeJSON answers 200 with v.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	_ = enc.Encode(v)
}

// writeError answers status with {"error": msg}.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
