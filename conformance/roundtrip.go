package conformance

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/median-go/median/conformance/internal/answerjson"
	"github.com/median-go/median/internal/base/chars"
)

// roundTrip is one request a case sent and the answer that came back: the
// pair a case judges, shown as a curl line when it fails.
type roundTrip struct {
	method    string
	url       string
	signature string // "" when the header was not sent
	sendSig   bool   // send the header even when empty
	// lines, when set, are the header's values sent as lines of their own,
	// in order (a proxy that splits it on commas); signature is then
	// their join with ",", as the server reads them (§1.1).
	lines    []string
	check    string // the median-check header sent: the request's mark or the session's check token
	body     []byte
	chunked  bool   // send the body without a Content-Length
	curlBody string // shell text producing the body, for bodies too big to show

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
	for _, v := range x.headerLines() {
		b.WriteString(" -H " + shellQuote(signatureHeader+": "+v))
	}
	if x.check != "" {
		b.WriteString(" -H " + shellQuote(checkHeader+": "+x.check))
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

// headerLines returns the median-signature header lines x sends: none,
// the signature, or its lines.
func (x *roundTrip) headerLines() []string {
	switch {
	case x.lines != nil:
		return x.lines
	case x.signature != "" || x.sendSig:
		return []string{x.signature}
	}
	return nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// isJSON reports whether the answer's Content-Type is application/json.
func (x *roundTrip) isJSON() bool { return answerjson.IsJSON(x.header.Get("Content-Type")) }

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
	return s + " " + chars.Line(x.resp, 300)
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

// answer reads the answer with the one parser conformance/agent uses
// too: its Content-Type and body held to docs/PROTOCOL.md §3.
func (x *roundTrip) answer() (answerjson.Answer, error) {
	return answerjson.Parse(x.header.Get("Content-Type"), x.resp)
}

// answerBody reads the answer's body alone with the same parser, whatever
// its Content-Type: for the cases that judge the body's shape or its status
// and code, so that a wrong Content-Type fails format/content-type only.
func (x *roundTrip) answerBody() (answerjson.Answer, error) {
	return answerjson.ParseBody(x.resp)
}
