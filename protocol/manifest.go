package protocol

import (
	"encoding/json"
	"sort"
)

// buildManifest encodes the GET answer of PROTOCOL.md §6: every tool, sorted
// by name so the bytes are stable.
func buildManifest(tools []*Tool) []byte {
	type entry struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Risk        Risk            `json:"risk"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	list := make([]entry, 0, len(tools))
	for _, t := range tools {
		list = append(list, entry{t.name, t.description, t.risk, t.inputSchema})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	body, err := json.Marshal(struct {
		Tools []entry `json:"tools"`
	}{list})
	if err != nil { // schemas are compiled JSON: cannot happen
		panic("median: manifest: " + err.Error())
	}
	return body
}
