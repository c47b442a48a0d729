package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/median-go/median/protocol"
)

// expectError checks that x is the contract's error answer with status and code.
func expectError(x *roundTrip, status int, code protocol.Code) finding {
	want := fmt.Sprintf("%d application/json {\"error\":{\"code\":%q,\"message\":\"…\"}}", status, code)
	if x.err != nil {
		return fail(x, want, "the request got no answer")
	}
	a, err := parseAnswer(x.resp)
	switch {
	case x.status >= 200 && x.status < 300 && (err != nil || !a.isError()):
		return fail(x, want, "got status %d and no error, where the contract answers %d %s", x.status, status, code)
	case err != nil && x.status != status:
		return fail(x, want, "got status %d and not the contract's JSON error (%v)", x.status, err)
	case err != nil:
		return fail(x, want, "%v", err)
	case a.isError() && a.code != string(code) && x.status != status:
		return fail(x, want, "got %d %s instead of %d %s", x.status, a.code, status, code)
	case !a.isError():
		return fail(x, want, "got a result instead of the error %s", code)
	case a.code != string(code):
		return fail(x, want, "got code %s instead of %s", a.code, code)
	case x.status != status:
		return fail(x, want, "code %s came with status %d instead of %d", code, x.status, status)
	case !x.isJSON():
		return fail(x, want, "Content-Type is %q, not %s", x.header.Get("Content-Type"), contentJSON)
	case a.message == "":
		return fail(x, want, "the error message is empty; it must say what to fix")
	}
	return pass(x)
}

// expectResult checks that x is 200 {"result": ...} and returns the result.
func expectResult(x *roundTrip) (json.RawMessage, finding) {
	want := "200 application/json {\"result\": …}"
	if x.err != nil {
		return nil, fail(x, want, "the request got no answer")
	}
	a, err := parseAnswer(x.resp)
	switch {
	case err != nil:
		return nil, fail(x, want, "%v", err)
	case a.isError():
		return nil, fail(x, want, "got error %s: %s", a.code, a.message)
	case x.status != http.StatusOK:
		return nil, fail(x, want, "a result came with status %d", x.status)
	case !x.isJSON():
		return nil, fail(x, want, "Content-Type is %q, not %s", x.header.Get("Content-Type"), contentJSON)
	}
	return a.result, pass(x)
}

// expectAccepted checks that a signed probe got past the signature checks
// to the tool lookup: a correct endpoint answers 404 unknown_tool.
func expectAccepted(x *roundTrip, why string) finding {
	o := expectError(x, http.StatusNotFound, protocol.CodeUnknownTool)
	if o.status == statusFail {
		o.expected = "a signed call for the unregistered tool " + probeTool + " passes the signature checks (" + why + ") and the tool lookup answers 404 unknown_tool"
		o.message = "the call should have passed the signature checks and reached the tool lookup (404 unknown_tool); instead: " + o.message
	}
	return o
}

// checkRefusal checks the shape of a refusal result (docs/PROTOCOL.md
// §3.1), and no more: every field is optional; ok, known and allowed are
// only ever false; outcome is blocked or unknown; reason is a short code
// and detail a line of text; and at least one of them marks the refusal
// (ok, known or allowed false, or an outcome).
func checkRefusal(result json.RawMessage) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(result, &m); err != nil || m == nil {
		return fmt.Errorf("a refusal must be a JSON object, got %s", snippet(result, 80))
	}
	markers := 0
	for _, k := range []string{"ok", "known", "allowed"} {
		v, ok := m[k]
		if !ok {
			continue
		}
		if string(v) != "false" {
			return fmt.Errorf("%q in a refusal is only ever false, got %s", k, v)
		}
		markers++
	}
	if v, ok := m["outcome"]; ok {
		var outcome string
		if json.Unmarshal(v, &outcome) != nil || (outcome != "blocked" && outcome != "unknown") {
			return fmt.Errorf("a refusal's outcome is \"blocked\" or \"unknown\", got %s", snippet(v, 40))
		}
		markers++
	}
	if markers == 0 {
		return fmt.Errorf("a refusal carries ok, known or allowed set to false, or an outcome; got %s", snippet(result, 120))
	}
	if v, ok := m["reason"]; ok {
		var reason string
		if json.Unmarshal(v, &reason) != nil || reason == "" {
			return fmt.Errorf("a refusal's reason must be a short non-empty string code, got %s", snippet(v, 40))
		}
	}
	if v, ok := m["detail"]; ok {
		var detail string
		if json.Unmarshal(v, &detail) != nil {
			return fmt.Errorf("a refusal's detail must be a string, got %s", snippet(v, 40))
		}
	}
	return nil
}
