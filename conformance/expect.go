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
	a, err := x.answer()
	switch {
	case err != nil && x.status == status:
		return fail(x, want, "%v", err)
	case x.status >= 200 && x.status < 300 && (err != nil || !a.IsError()):
		return fail(x, want, "got status %d and no error, where the contract answers %d %s", x.status, status, code)
	case err != nil:
		return fail(x, want, "got status %d and not the contract's JSON error (%v)", x.status, err)
	case a.IsError() && a.Code != string(code) && x.status != status:
		return fail(x, want, "got %d %s instead of %d %s", x.status, a.Code, status, code)
	case !a.IsError():
		return fail(x, want, "got a result instead of the error %s", code)
	case a.Code != string(code):
		return fail(x, want, "got code %s instead of %s", a.Code, code)
	case x.status != status:
		return fail(x, want, "code %s came with status %d instead of %d", code, x.status, status)
	case a.Message == "":
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
	a, err := x.answer()
	switch {
	case err != nil:
		return nil, fail(x, want, "%v", err)
	case a.IsError():
		return nil, fail(x, want, "got error %s: %s", a.Code, a.Message)
	case x.status != http.StatusOK:
		return nil, fail(x, want, "a result came with status %d", x.status)
	}
	return a.Result, pass(x)
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
