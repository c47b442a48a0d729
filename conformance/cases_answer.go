package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/median-go/median/internal/base/chars"
	"github.com/median-go/median/protocol"
)

// representative sends one request for each kind of answer that needs no
// tool: 405, 401, 400, 404, 400 unknown_op and diagnostics.
func representative(s *session) []*roundTrip {
	return []*roundTrip{
		s.send(&roundTrip{method: http.MethodPut, body: []byte(`{}`)}),
		s.send(&roundTrip{method: http.MethodPost, body: probe().bytes()}),
		s.send(&roundTrip{method: http.MethodPost, body: []byte(`{}`), signature: "t=1,v1=nothex", sendSig: true}),
		s.post([]byte(`not json`)),
		s.post(probe().bytes()),
		s.post([]byte(`{"op":"reindex"}`)),
		s.post([]byte(`{"op":"diagnostics"}`)),
	}
}

// statusOf is the §7 table: the statuses each code may come with, nil for
// a code that is not part of the contract.
func statusOf(code string) []int { return codeStatuses[protocol.Code(code)] }

// formatCases check §3 and §7 over a set of answers of every kind.
func formatCases() []testCase {
	return []testCase{
		c("format/content-type", "§3", "every answer, refusals and the manifest included, has Content-Type: application/json", false,
			everyAnswer(representativeAndManifest, answersJSON)),
		c("format/envelope", "§3", `every POST answer is exactly {"result": …} or {"error": {"code": …, "message": …}}`, false,
			everyAnswer(representative, hasEnvelope)),
		c("format/status-matches-code", "§7", "every error answer's status is the one the contract gives its code, and every code is one of the contract's", false,
			everyAnswer(representative, statusMatchesCode)),
	}
}

// representativeAndManifest is representative and the signed GET.
func representativeAndManifest(s *session) []*roundTrip {
	return append(representative(s), s.get())
}

// everyAnswer returns a case's check: it sends the requests of send and
// checks each answer with check. The first answer that fails is the
// case's; when all pass, no answer is shown.
func everyAnswer(send func(s *session) []*roundTrip, check func(x *roundTrip) finding) func(s *session) finding {
	return func(s *session) finding {
		for _, x := range send(s) {
			if o := check(x); o.status != statusPass {
				return o
			}
		}
		return pass(nil)
	}
}

// answersJSON checks that x is an answer with Content-Type: application/json.
func answersJSON(x *roundTrip) finding {
	if x.err != nil {
		return fail(x, "an answer", "the request got no answer")
	}
	if !x.isJSON() {
		return fail(x, "Content-Type: application/json", "%s %s answered %d with Content-Type %q", x.method, describe(x), x.status, x.header.Get("Content-Type"))
	}
	return pass(x)
}

// hasEnvelope checks that x is an answer whose body is a result or an
// error, whatever its Content-Type (format/content-type's).
func hasEnvelope(x *roundTrip) finding {
	if x.err != nil {
		return fail(x, "an answer", "the request got no answer")
	}
	if _, err := x.answerBody(); err != nil {
		return fail(x, `{"result": …} or {"error": {"code": "…", "message": "…"}}`, "%s %s: %v", x.method, describe(x), err)
	}
	return pass(x)
}

// statusMatchesCode checks that a result came with 200, and an error with
// a code of the contract and a status the contract gives it. No answer,
// or no envelope, passes: format/envelope reports those.
func statusMatchesCode(x *roundTrip) finding {
	a, err := x.answerBody()
	switch {
	case x.err != nil || err != nil:
		return pass(x)
	case !a.IsError():
		if x.status != http.StatusOK {
			return fail(x, "200 with a result", "%s %s: a result came with status %d", x.method, describe(x), x.status)
		}
		return pass(x)
	}
	allowed := statusOf(a.Code)
	if allowed == nil {
		return fail(x, "one of the codes of docs/PROTOCOL.md §7", "%s %s: code %q is not part of the contract", x.method, describe(x), a.Code)
	}
	if !slices.Contains(allowed, x.status) {
		return fail(x, fmt.Sprintf("%s with status %v", a.Code, allowed), "%s %s: code %s came with status %d", x.method, describe(x), a.Code, x.status)
	}
	return pass(x)
}

// describe names a representative request in failure messages.
func describe(x *roundTrip) string {
	switch {
	case x.method != http.MethodPost && x.method != http.MethodGet:
		return "(any body)"
	case x.signature == "" && !x.sendSig:
		return "(unsigned)"
	}
	return chars.Line(x.body, 60)
}

// manifestCases check §6: the signed GET that lists the tools.
func manifestCases() []testCase {
	return []testCase{
		c("manifest/signed-get", "§6", `a signed GET answers 200 {"tools": [...]}, each with a valid name, a description, a risk and an object inputSchema`, false, func(s *session) finding {
			x := s.get()
			want := `200 application/json {"tools": [{"name", "description", "risk", "inputSchema"}]}`
			if x.err != nil {
				return fail(x, want, "the request got no answer")
			}
			if x.status != http.StatusOK || !x.isJSON() {
				return fail(x, want, "the manifest did not come back")
			}
			if err := checkManifest(x.resp); err != nil {
				return fail(x, want, "%v", err)
			}
			return pass(x)
		}),
		c("manifest/unsigned-get", "§6", "an unsigned GET is refused 401 missing_signature: the tool list is not public", false, func(s *session) finding {
			return expectError(s.send(&roundTrip{method: http.MethodGet}), http.StatusUnauthorized, protocol.CodeMissingSignature)
		}),
		c("manifest/wrong-key-get", "§6", "a GET signed with another key is refused 401 invalid_signature", false, func(s *session) finding {
			x := s.send(&roundTrip{method: http.MethodGet, signature: signWith(wrongKey, s.now(), nil)})
			return expectError(x, http.StatusUnauthorized, protocol.CodeInvalidSignature)
		}),
		c("manifest/lists-sample-tools", "§6", "every tool named in Target.Tools is in the manifest, so Median can call it", false, func(s *session) finding {
			if len(s.t.Tools) == 0 {
				return skip("no tool samples: add ToolSample entries to Target.Tools (mediancheck: -samples FILE.json)")
			}
			m, err := s.manifestTools()
			if err != nil {
				return fail(nil, "the manifest", "%v", err)
			}
			var missing []string
			for _, smp := range s.t.Tools {
				if _, ok := m[smp.Tool]; !ok {
					missing = append(missing, smp.Tool)
				}
			}
			if len(missing) > 0 {
				names := make([]string, 0, len(m))
				for n := range m {
					names = append(names, n)
				}
				slices.Sort(names)
				return fail(nil, "tools "+strings.Join(missing, ", ")+" in the manifest", "the manifest lists only [%s]: register the tool or fix its name in the samples", strings.Join(names, ", "))
			}
			return pass(nil)
		}),
	}
}

func validRisk(risk string) bool { _, ok := riskRank(risk); return ok }

// checkManifest checks the manifest's shape (§6).
func checkManifest(body []byte) error {
	top := decodeObject(body)
	if top == nil {
		return fmt.Errorf("the manifest is not a JSON object")
	}
	var tools []map[string]json.RawMessage
	if err := json.Unmarshal(top["tools"], &tools); err != nil || top["tools"] == nil || string(top["tools"]) == "null" {
		return fmt.Errorf("\"tools\" must be an array of objects")
	}
	seen := map[string]bool{}
	for i, t := range tools {
		var name, desc, risk string
		if json.Unmarshal(t["name"], &name) != nil || !toolNamePattern.MatchString(name) {
			return fmt.Errorf("tool %d: name %s does not match ^[a-zA-Z0-9_-]{1,64}$", i, chars.Line(t["name"], 80))
		}
		if seen[name] {
			return fmt.Errorf("tool %s is listed twice", name)
		}
		seen[name] = true
		if json.Unmarshal(t["description"], &desc) != nil || strings.TrimSpace(desc) == "" {
			return fmt.Errorf("tool %s: description must be a non-empty string: the agent reads it to choose the tool", name)
		}
		if json.Unmarshal(t["risk"], &risk) != nil || !validRisk(risk) {
			return fmt.Errorf("tool %s: risk %s is not one of low, medium, reviewed, high", name, chars.Line(t["risk"], 40))
		}
		schema := decodeObject(t["inputSchema"])
		if schema == nil {
			return fmt.Errorf("tool %s: inputSchema must be a JSON Schema object, got %s", name, chars.Line(t["inputSchema"], 80))
		}
		if typ, ok := schema["type"]; ok && string(typ) != `"object"` {
			return fmt.Errorf("tool %s: inputSchema's root type must be \"object\" (input is an object), got %s", name, typ)
		}
	}
	return nil
}
