package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
)

// manifestTool is one entry of the GET manifest.
type manifestTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Risk        string          `json:"risk"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// manifestTools reads the manifest once.
func (s *session) manifestTools() (map[string]manifestTool, error) {
	s.manifestOnce.Do(func() {
		x := s.get()
		if x.err != nil || x.status != http.StatusOK {
			s.manifestErr = fmt.Errorf("GET manifest: %s", x.actual())
			return
		}
		var m struct {
			Tools []manifestTool `json:"tools"`
		}
		if err := json.Unmarshal(x.resp, &m); err != nil {
			s.manifestErr = fmt.Errorf("GET manifest: %w", err)
			return
		}
		s.manifest = make(map[string]manifestTool, len(m.Tools))
		for _, t := range m.Tools {
			s.manifest[t.Name] = t
		}
	})
	return s.manifest, s.manifestErr
}

// declaredRisk returns the risk the manifest declares for tool, "low" when
// the manifest cannot be read or does not list the tool with a valid risk.
func (s *session) declaredRisk(tool string) string {
	if m, _ := s.manifestTools(); m != nil {
		if _, ok := riskRank(m[tool].Risk); ok {
			return m[tool].Risk
		}
	}
	return "low"
}

// toolNamePattern is the tool-name rule of docs/PROTOCOL.md §6.
var toolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
