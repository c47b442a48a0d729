// Package answerjson holds the readings of an endpoint's JSON answer that
// conformance (the suite) and conformance/agent (what the agent is told)
// both make, so that the two cannot disagree on them.
package answerjson

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// IsRefusal reports whether a result is a refusal object (docs/PROTOCOL.md
// §3.1): an object with ok, known or allowed set to false, or an outcome
// of blocked or unknown.
func IsRefusal(result json.RawMessage) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(result, &m) != nil {
		return false
	}
	for _, k := range []string{"ok", "known", "allowed"} {
		if string(m[k]) == "false" {
			return true
		}
	}
	o := string(m["outcome"])
	return o == `"blocked"` || o == `"unknown"`
}

// KeysOf lists an object's keys, quoted and sorted, for a message that
// says which keys an answer has: `"error", "result"`, or "no keys".
func KeysOf(m map[string]json.RawMessage) string {
	if len(m) == 0 {
		return "no keys"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, fmt.Sprintf("%q", k))
	}
	slices.Sort(keys)
	return strings.Join(keys, ", ")
}
