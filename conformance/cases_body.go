package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/median-go/median/internal/base/chars"
	"github.com/median-go/median/protocol"
)

// requiredFields are the ToolCall fields §2 requires, with a value of the
// wrong type for each.
var requiredFields = []struct {
	path  string
	wrong any
}{
	{"tool", 42},
	{"toolCallId", 42},
	{"input", "not an object"},
	{"context", "not an object"},
	{"context.conversationId", 7},
	{"context.risk", 1},
	{"context.visitor", true},
	{"context.visitor.verified", "yes"},
}

// indentJSON re-encodes raw indented: the same JSON, other bytes.
func indentJSON(raw []byte) []byte {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return append(raw, ' ')
	}
	return b.Bytes()
}

// bodyCases check §2: the body's shape, and its size limit.
func bodyCases() []testCase {
	invalid := func(id, title string, body func() []byte) testCase {
		return c("body/"+id, "§2", title+" is refused 400 invalid_body", false, func(s *session) finding {
			return expectError(s.post(body()), http.StatusBadRequest, protocol.CodeInvalidBody)
		})
	}
	out := []testCase{
		invalid("not-json", "a body that is not JSON", func() []byte { return []byte(`{"tool": "lookup_order",`) }),
		invalid("empty", "an empty body", func() []byte { return []byte{} }),
		invalid("not-object", "a JSON array body", func() []byte { return []byte(`[{"op": "diagnostics"}]`) }),
		invalid("bad-risk", `a risk that is not one of low, medium, reviewed, high ("critical")`, func() []byte {
			return probe().setPath("context.risk", "critical", false).bytes()
		}),
	}
	for _, f := range requiredFields {
		out = append(out,
			invalid("missing-"+f.path, "a ToolCall without "+f.path, func() []byte { return probe().setPath(f.path, nil, true).bytes() }),
			invalid("mistyped-"+f.path, fmt.Sprintf("a ToolCall whose %s is %s", f.path, jsonTypeName(f.wrong)), func() []byte { return probe().setPath(f.path, f.wrong, false).bytes() }),
		)
	}
	out = append(out,
		c("body/unknown-fields-ignored", "§2", "unknown extra fields in the body, context and visitor are ignored", false, func(s *session) finding {
			p := probe().setPath("extra", map[string]any{"added": "later"}, false).
				setPath("context.channel", "web", false).
				setPath("context.visitor.locale", "fr", false)
			return expectAccepted(s.post(p.bytes()), "unknown fields are ignored")
		}),
		c("body/approved-by", "§2", "a ToolCall with context.approvedBy (an approved call) has a valid shape", false, func(s *session) finding {
			p := probe().setPath("context.approvedBy", "A test from the CLI", false).setPath("context.risk", "high", false)
			return expectAccepted(s.post(p.bytes()), "approvedBy is an optional string")
		}),
		c("body/oversized", "§2", "a body one byte over the limit (Target.MaxBodyBytes, default 1 MiB) is refused 413 invalid_body", false, func(s *session) finding {
			return expectError(s.sendEarlyAnswer(oversized(s, false)), http.StatusRequestEntityTooLarge, protocol.CodeInvalidBody)
		}),
		c("body/oversized-chunked", "§2", "a body over the limit sent without Content-Length (chunked) is refused 413 invalid_body", false, func(s *session) finding {
			return expectError(s.sendEarlyAnswer(oversized(s, true)), http.StatusRequestEntityTooLarge, protocol.CodeInvalidBody)
		}),
	)
	return out
}

// oversized returns a signed request whose body is a JSON object one byte
// longer than the target's limit: {"tool":"...", then spaces, then }.
func oversized(s *session, chunked bool) *roundTrip {
	n := int(s.t.MaxBodyBytes) + 1
	head := `{"pad":"`
	body := make([]byte, n)
	copy(body, head)
	for i := len(head); i < n-2; i++ {
		body[i] = 'x'
	}
	body[n-2], body[n-1] = '"', '}'
	x := &roundTrip{method: http.MethodPost, body: body, signature: s.sign(s.now(), body), chunked: chunked}
	x.curlBody = fmt.Sprintf(`{ printf '%s'; head -c %d /dev/zero | tr '\0' x; printf '"}'; }`, head, n-len(head)-2)
	return x
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	default:
		return "a number"
	}
}

// opsCases check §4: diagnostics and unknown ops.
func opsCases() []testCase {
	return []testCase{
		c("ops/diagnostics", "§4", `{"op":"diagnostics"} answers 200 with a result, or 200 diagnostics_unsupported`, false, func(s *session) finding {
			x := s.post([]byte(`{"op":"diagnostics"}`))
			want := `200 {"result": …} or 200 {"error":{"code":"diagnostics_unsupported",…}}`
			if x.err != nil {
				return fail(x, want, "the request got no answer")
			}
			a, err := x.answer()
			switch {
			case err != nil:
				return fail(x, want, "%v", err)
			case x.status != http.StatusOK:
				return fail(x, want, "diagnostics answered status %d", x.status)
			case a.IsError() && a.Code != string(protocol.CodeDiagnosticsUnsupported):
				return fail(x, want, "diagnostics answered error %s: %s", a.Code, a.Message)
			}
			return pass(x)
		}),
		c("ops/unknown", "§4", `{"op":"reindex"} is refused 400 unknown_op`, false, func(s *session) finding {
			return expectError(s.post([]byte(`{"op":"reindex"}`)), http.StatusBadRequest, protocol.CodeUnknownOp)
		}),
		c("ops/not-a-string", "§2", `{"op":5} is refused 400 unknown_op: any value other than "diagnostics"`, false, func(s *session) finding {
			return expectError(s.post([]byte(`{"op":5}`)), http.StatusBadRequest, protocol.CodeUnknownOp)
		}),
	}
}

// routingCases check §1 and §2: the mount path, and a tool the endpoint
// does not know.
func routingCases() []testCase {
	return []testCase{
		c("routing/unknown-tool", "§2", "a ToolCall for a tool the endpoint does not register is refused 404 unknown_tool (JSON, not a framework's 404 page)", false, func(s *session) finding {
			return expectError(s.post(probe().bytes()), http.StatusNotFound, protocol.CodeUnknownTool)
		}),
		c("routing/trailing-slash", "§1", "the mount path is answered with a trailing slash too, as the product page posts to https://example.com/api/median/ (and without one when Target.URL has it): not a router's 404 or a redirect", false, func(s *session) finding {
			other, err := otherSlash(s.t.URL)
			if err != nil {
				return fail(nil, "a Target.URL that parses", "%v", err)
			}
			body := probe().bytes()
			x := s.send(&roundTrip{method: http.MethodPost, url: other, body: body, signature: s.sign(s.now(), body)})
			return expectAccepted(x, "at "+other+", the mount path with the slash toggled")
		}),
	}
}

// otherSlash returns rawURL with a slash added to the end of its path, or
// removed when it has one.
func otherSlash(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("Target.URL: %w", err)
	}
	if p, ok := strings.CutSuffix(u.Path, "/"); ok && p != "" {
		u.Path = p
	} else if !ok {
		u.Path += "/"
	}
	u.RawPath = ""
	return u.String(), nil
}

// inputCases check §2 and §3: inputs that do not fit a tool's schema.
func inputCases() []testCase {
	return []testCase{
		c("input/invalid", "§2, §3", "each of a sample's InvalidInputs is refused 400 invalid_input with a message naming a field", false, func(s *session) finding {
			n := 0
			var last *roundTrip
			for _, smp := range s.t.Tools {
				for _, in := range smp.InvalidInputs {
					n++
					x := s.post(s.sampleCall(smp, in).bytes())
					last = x
					o := expectError(x, http.StatusBadRequest, protocol.CodeInvalidInput)
					if o.status != statusPass {
						o.message = fmt.Sprintf("tool %s, invalid input %s: %s", smp.Tool, chars.Line(in, 120), o.message)
						return o
					}
					a, _ := x.answer()
					fields := fieldNames(in, s, smp.Tool)
					if !mentionsAny(a.Message, fields) {
						return fail(x, "an invalid_input message naming the field that is wrong (one of "+strings.Join(fields, ", ")+")",
							"tool %s, invalid input %s: the message %q names no field; the agent reads it to fix its input", smp.Tool, chars.Line(in, 120), a.Message)
					}
				}
			}
			if n == 0 {
				return skip("no tool sample has InvalidInputs: add inputs your tool's schema must refuse to a ToolSample entry in Target.Tools (\"invalidInputs\" in a mediancheck -samples file)")
			}
			return pass(last)
		}),
	}
}

// fieldNames lists the property names a message about in may name: the
// keys of in and the properties of the tool's schema in the manifest.
func fieldNames(in json.RawMessage, s *session, tool string) []string {
	seen := map[string]bool{}
	var collect func(raw json.RawMessage, schema bool)
	collect = func(raw json.RawMessage, schema bool) {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return
		}
		for k, v := range m {
			if !schema {
				seen[k] = true
				collect(v, false)
				continue
			}
			switch k {
			case "properties":
				var props map[string]json.RawMessage
				if json.Unmarshal(v, &props) == nil {
					for name, sub := range props {
						seen[name] = true
						collect(sub, true)
					}
				}
			case "items", "additionalProperties":
				collect(v, true)
			}
		}
	}
	collect(in, false)
	if m, _ := s.manifestTools(); m != nil {
		collect(m[tool].InputSchema, true)
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func mentionsAny(msg string, names []string) bool {
	if len(names) == 0 {
		return msg != "" // a schema with no properties: any message will do
	}
	for _, n := range names {
		if n != "" && strings.Contains(msg, n) {
			return true
		}
	}
	return false
}
