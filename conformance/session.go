package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/median-go/median/protocol"
)

// session holds what the cases of one run share.
type session struct {
	ctx     context.Context
	t       Target
	timeout time.Duration
	signer  signer // Target.Key, parsed once

	leakMu sync.Mutex
	leak   *exchange // the first answer of the running case that carried its request's MAC

	manifestOnce sync.Once
	manifest     map[string]manifestTool // by name; nil when it could not be read
	manifestErr  error
}

// manifestTool is one entry of the GET manifest.
type manifestTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Risk        string          `json:"risk"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// outcome is what a case function returns.
type outcome struct {
	status   Status
	expected string
	actual   string
	message  string
	x        *exchange // the request judged, for the curl line
}

func pass(x *exchange) outcome         { return outcome{status: StatusPass, x: x} }
func skip(msg string) outcome          { return outcome{status: StatusSkip, message: msg} }
func skipf(f string, a ...any) outcome { return skip(fmt.Sprintf(f, a...)) }

// fail reports a failed case about exchange x.
func fail(x *exchange, expected, format string, a ...any) outcome {
	o := outcome{status: StatusFail, expected: expected, message: fmt.Sprintf(format, a...), x: x}
	if x != nil {
		o.actual = x.actual()
	}
	return o
}

// leaked fails a case whose exchange x got an answer carrying the MAC the
// server computed for x's request.
func leaked(x *exchange) outcome {
	return fail(x, "an answer without the MAC the server computed for the request",
		"%s %s: the answer carries the MAC the server computed for this request (HMAC-SHA256 under Target.Key over its t and body); answers never carry computed MACs (docs/PROTOCOL.md §7): log them on the server, if anywhere", x.method, describe(x))
}

// newID returns prefix followed by n random bytes in hex.
func newID(prefix string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// sign returns the signature header for body at time at, under the target's key.
func (s *session) sign(at time.Time, body []byte) string {
	return s.signer.sign(at, body)
}

// signWith signs with key; an unusable key yields a header that cannot
// verify, which is what a case signing with it wants to send anyway.
func signWith(key string, at time.Time, body []byte) string {
	return newSigner(key).sign(at, body)
}

// noteLeak records x when its answer carries the MAC the server computed
// for its request: runCase then fails the case, whatever it checked.
func (s *session) noteLeak(x *exchange) {
	s.leakMu.Lock()
	defer s.leakMu.Unlock()
	if s.leak == nil {
		s.leak = x
	}
}

// takeLeak returns and clears the exchange noteLeak recorded.
func (s *session) takeLeak() *exchange {
	s.leakMu.Lock()
	defer s.leakMu.Unlock()
	x := s.leak
	s.leak = nil
	return x
}

// now is the clock the cases sign with.
func (s *session) now() time.Time { return s.t.Now() }

// send performs x with the target's request function.
func (s *session) send(x *exchange) *exchange { return s.sendWith(s.t.Do, x) }

// sendEarlyAnswer performs x, a request the server may answer before it has
// read the whole body (one over the limit). A server that answers and closes
// then can have its answer reset by TCP before the client reads it: a race
// of the transport, not a fault of the server, so such a send is tried up
// to three times.
func (s *session) sendEarlyAnswer(x *exchange) *exchange {
	for attempt := 1; ; attempt++ {
		try := *x
		s.send(&try)
		if attempt == 3 || try.err == nil || !(errors.Is(try.err, syscall.ECONNRESET) || errors.Is(try.err, syscall.EPIPE)) {
			*x = try
			return x
		}
	}
}

// sendWith performs x with do.
func (s *session) sendWith(do DoFunc, x *exchange) *exchange {
	if x.url == "" {
		x.url = s.t.URL
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.timeout)
	defer cancel()
	req, err := newRequest(ctx, x.method, x.url, x.body)
	if err != nil {
		x.err = err
		return x
	}
	if x.signature != "" || x.sendSig {
		req.Header[http.CanonicalHeaderKey(signatureHeader)] = []string{x.signature}
	}
	if x.chunked {
		req.ContentLength = -1
		req.Body = struct{ readCloser }{readCloser{req.Body}}
	}
	x.read(s.doSafely(do, req))
	if x.mac = s.signer.serverMAC(x.signature, x.body); carriesMAC(x, x.mac) {
		s.noteLeak(x)
	}
	return x
}

// readCloser hides the concrete body type, so net/http cannot learn its
// length and sends it chunked.
type readCloser struct {
	rc interface {
		Read([]byte) (int, error)
		Close() error
	}
}

func (r readCloser) Read(p []byte) (int, error) { return r.rc.Read(p) }
func (r readCloser) Close() error               { return r.rc.Close() }

// doSafely calls do, turning a panic into an error.
func (s *session) doSafely(do DoFunc, req *http.Request) (resp *http.Response, err error) {
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, fmt.Errorf("the request function panicked: %v", p)
		}
	}()
	return do(req)
}

// post sends body signed now.
func (s *session) post(body []byte) *exchange {
	return s.send(&exchange{method: http.MethodPost, body: body, signature: s.sign(s.now(), body)})
}

// get sends a signed GET.
func (s *session) get() *exchange {
	return s.send(&exchange{method: http.MethodGet, signature: s.sign(s.now(), nil)})
}

// call is the body of a ToolCall, built as a generic tree so cases can
// remove or retype any field.
type call map[string]any

// probeTool is the tool the suite names when it wants a request that passes
// every check up to the tool lookup: no endpoint registers it, so a correct
// endpoint answers 404 unknown_tool without running anything.
const probeTool = "mediancheck_no_such_tool"

// newCall returns a valid ToolCall body for tool with input.
func newCall(tool string, input json.RawMessage) call {
	id := newID("call_", 16)
	return call{
		"tool":       tool,
		"toolCallId": id,
		"input":      input,
		"context": map[string]any{
			"conversationId": newID("conv_", 8),
			"risk":           "low",
			"visitor":        map[string]any{"verified": false},
		},
	}
}

// probe returns a valid ToolCall for probeTool.
func probe() call { return newCall(probeTool, json.RawMessage(`{}`)) }

// bytes encodes the call.
func (c call) bytes() []byte {
	b, err := json.Marshal(c)
	if err != nil {
		panic("conformance: encoding a call: " + err.Error())
	}
	return b
}

// sampleCall returns the ToolCall body for sample s with input.
func (s *session) sampleCall(smp ToolSamples, input json.RawMessage) call {
	c := newCall(smp.Tool, input)
	ctx := c["context"].(map[string]any)
	risk := smp.Risk
	if risk == "" {
		risk = s.declaredRisk(smp.Tool)
	}
	ctx["risk"] = risk
	if smp.ConversationID != "" {
		ctx["conversationId"] = smp.ConversationID
	}
	switch {
	case smp.ApprovedBy != "":
		ctx["approvedBy"] = smp.ApprovedBy
	case needsApproval(risk):
		ctx["approvedBy"] = approvedByDefault
	}
	ctx["visitor"] = visitorJSON(smp.Visitor)
	return c
}

// visitorJSON returns v as a call sends it: externalId only when verified.
func visitorJSON(v Visitor) map[string]any {
	m := map[string]any{"verified": v.Verified}
	if v.Verified && v.ExternalID != "" {
		m["externalId"] = v.ExternalID
	}
	if v.Email != "" {
		m["email"] = v.Email
	}
	if v.Name != "" {
		m["name"] = v.Name
	}
	return m
}

// callContext returns the context of a call; approvedBy is left out when
// empty.
func callContext(conversationID, risk, approvedBy string, v Visitor) map[string]any {
	ctx := map[string]any{"conversationId": conversationID, "risk": risk, "visitor": visitorJSON(v)}
	if approvedBy != "" {
		ctx["approvedBy"] = approvedBy
	}
	return ctx
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

// runnable returns the samples whose tool may run and whose expectation is
// one of want.
func (s *session) runnable(want ...Expect) (list []ToolSamples, held int) {
	for _, smp := range s.t.Tools {
		ok := false
		for _, w := range want {
			ok = ok || smp.expect() == w
		}
		if !ok {
			continue
		}
		if smp.SideEffects && !s.t.AllowSideEffects {
			held++
			continue
		}
		list = append(list, smp)
	}
	return list, held
}

// noSample explains how to supply a sample for a skipped case.
func noSample(what string, held int) outcome {
	msg := "no tool sample " + what + ": add a ToolSamples entry to Target.Tools (mediancheck: -samples FILE.json)"
	if held > 0 {
		msg += fmt.Sprintf("; %d matching sample(s) are marked SideEffects and run only with Target.AllowSideEffects (mediancheck: -side-effects)", held)
	}
	return skip(msg)
}

// expectError checks that x is the contract's error answer with status and code.
func expectError(x *exchange, status int, code protocol.Code) outcome {
	want := fmt.Sprintf("%d application/json {\"error\":{\"code\":%q,\"message\":\"…\"}}", status, code)
	if x.err != nil {
		return fail(x, want, "the request got no answer")
	}
	a, err := parseAnswer(x.resp)
	switch {
	case x.status >= 200 && x.status < 300 && (err != nil || !a.isError()):
		return fail(x, want, "the request was accepted (status %d) instead of refused with %d %s", x.status, status, code)
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
func expectResult(x *exchange) (json.RawMessage, outcome) {
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

// expectAccepted checks that a signed probe got past the signature checks:
// a correct endpoint answers 404 unknown_tool.
func expectAccepted(x *exchange, why string) outcome {
	o := expectError(x, http.StatusNotFound, protocol.CodeUnknownTool)
	if o.status == StatusFail {
		o.expected = "the request is accepted (" + why + "): a signed call for the unregistered tool " + probeTool + " answers 404 unknown_tool"
		o.message = "the endpoint did not accept it: " + o.message
	}
	return o
}

// isRefusal reports whether a result is a refusal object (docs/PROTOCOL.md
// §3.1): an object with ok, known or allowed set to false, or an outcome
// of blocked or unknown.
func isRefusal(result json.RawMessage) bool {
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

// toolNamePattern is the tool-name rule of docs/PROTOCOL.md §6.
var toolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func sortStrings(s []string) { sort.Strings(s) }
