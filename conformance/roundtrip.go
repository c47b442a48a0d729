package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/median-go/median/internal/answerjson"
	"github.com/median-go/median/internal/chars"
)

// roundTrip is one request a case sent and the answer that came back: the
// pair a case judges, shown as a curl line when it fails.
type roundTrip struct {
	method    string
	url       string
	signature string // "" when the header was not sent
	sendSig   bool   // send the header even when empty
	body      []byte
	chunked   bool   // send the body without a Content-Length
	curlBody  string // shell text producing the body, for bodies too big to show

	status  int
	header  http.Header
	resp    []byte
	err     error
	tooLong bool   // the answer was longer than readLimit
	mac     string // the MAC a server with Target.Key computed for the request, "" when none
}

// readLimit bounds how much of an answer the cases read.
const readLimit = 1 << 20

// curl returns a shell command that sends the same request.
func (x *roundTrip) curl() string {
	var b strings.Builder
	b.WriteString("curl -sS -i -X ")
	b.WriteString(x.method)
	b.WriteString(" " + shellQuote(x.url))
	if x.signature != "" || x.sendSig {
		b.WriteString(" -H " + shellQuote(signatureHeader+": "+x.signature))
	}
	if x.body != nil {
		b.WriteString(" -H 'Content-Type: application/json'")
		if x.chunked {
			b.WriteString(" -H 'Transfer-Encoding: chunked'")
		}
		switch {
		case x.curlBody != "":
			return x.curlBody + " | " + b.String() + " --data-binary @-"
		default:
			b.WriteString(" --data-binary " + shellQuote(string(x.body)))
		}
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// contentType returns the answer's media type, "" when absent.
func (x *roundTrip) contentType() string {
	ct := x.header.Get("Content-Type")
	if ct == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return ct
	}
	return mt
}

// isJSON reports whether the answer's Content-Type is application/json.
func (x *roundTrip) isJSON() bool { return x.contentType() == contentJSON }

// actual describes the answer for a failure report.
func (x *roundTrip) actual() string {
	if x.err != nil {
		return "no answer: " + x.err.Error()
	}
	ct := x.header.Get("Content-Type")
	if ct == "" {
		ct = "(no Content-Type)"
	}
	s := fmt.Sprintf("%d %s", x.status, ct)
	if allow := x.header.Get("Allow"); allow != "" {
		s += " Allow: " + allow
	}
	return s + " " + snippet(x.resp, 300)
}

// snippet returns body on one line, shortened to n characters as
// chars.Snippet shortens it (a character is never split).
func snippet(body []byte, n int) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	if s == "" {
		return "(empty body)"
	}
	return chars.Snippet([]byte(s), n)
}

// read stores the answer of resp in x.
func (x *roundTrip) read(resp *http.Response, err error) {
	if err != nil {
		x.err = err
		return
	}
	defer resp.Body.Close()
	x.status = resp.StatusCode
	x.header = resp.Header
	body, err := io.ReadAll(io.LimitReader(resp.Body, readLimit+1))
	if len(body) > readLimit {
		body, x.tooLong = body[:readLimit], true
	}
	x.resp = body
	if err != nil {
		x.err = fmt.Errorf("reading the answer: %w", err)
	}
}

// answer is a decoded answer envelope (docs/PROTOCOL.md §3).
type answer struct {
	result  json.RawMessage // set for {"result": ...}
	code    string          // set for {"error": {...}}
	message string
}

// isError reports whether the answer is an error envelope.
func (a answer) isError() bool { return a.result == nil }

// parseAnswer decodes an answer and checks its envelope: an object with
// exactly one key, "result" (any JSON) or "error" (an object with exactly
// a non-empty string "code" and a string "message").
func parseAnswer(body []byte) (answer, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return answer{}, fmt.Errorf("the answer is not a JSON object: %s", snippet(body, 80))
	}
	if len(top) != 1 {
		return answer{}, fmt.Errorf("the answer must have exactly one key, \"result\" or \"error\"; it has %s", answerjson.KeysOf(top))
	}
	if r, ok := top["result"]; ok {
		return answer{result: r}, nil
	}
	raw, ok := top["error"]
	if !ok {
		return answer{}, fmt.Errorf("the answer must have exactly one key, \"result\" or \"error\"; it has %s", answerjson.KeysOf(top))
	}
	var e map[string]json.RawMessage
	if err := json.Unmarshal(raw, &e); err != nil || e == nil {
		return answer{}, fmt.Errorf("\"error\" must be an object with code and message, got %s", snippet(raw, 80))
	}
	var a answer
	if json.Unmarshal(e["code"], &a.code) != nil || a.code == "" {
		return answer{}, fmt.Errorf("\"error.code\" must be a non-empty string, got %s", snippet(e["code"], 40))
	}
	if json.Unmarshal(e["message"], &a.message) != nil || e["message"] == nil {
		return answer{}, fmt.Errorf("\"error.message\" must be a string, got %s", snippet(e["message"], 40))
	}
	if len(e) != 2 {
		return answer{}, fmt.Errorf("\"error\" must have exactly code and message; it has %s", answerjson.KeysOf(e))
	}
	return a, nil
}
