package inspector

import (
	"encoding/json"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/median-go/median/conformance/agent"
	"github.com/median-go/median/conformance/internal/wire"
)

// maxShown is the most bytes of an answer or a request body the page gets:
// a longer one is shown cut, so a huge answer never freezes the page. The
// agent's view is computed from the whole answer.
const maxShown = 64 << 10

// entry is one exchange of the run's history, as the page shows it.
type entry struct {
	N          int             `json:"n"`
	Kind       string          `json:"kind"`               // "call", "replay" or "diagnostics"
	ReplayOf   int             `json:"replayOf,omitempty"` // the entry a replay repeats
	At         time.Time       `json:"at"`
	Tool       string          `json:"tool,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	Persona    *wire.Persona   `json:"persona,omitempty"`

	Request struct {
		Method  string      `json:"method"`
		URL     string      `json:"url"`
		Headers http.Header `json:"headers"`
		Body    string      `json:"body"`
	} `json:"request"`

	Status      int         `json:"status"` // 0: no answer (Error says why)
	Headers     http.Header `json:"headers,omitempty"`
	ElapsedMS   float64     `json:"elapsedMs"`
	Answer      string      `json:"answer"`      // at most maxShown bytes of the answer
	AnswerBytes int         `json:"answerBytes"` // the answer's whole length
	AnswerCut   bool        `json:"answerCut"`   // Answer is cut
	AnswerShown int         `json:"answerShown"` // how many bytes of the answer Answer holds
	Curl        string      `json:"curl"`
	View        *agent.View `json:"view,omitempty"` // nil when no answer came
	Error       string      `json:"error,omitempty"`
}

// newEntry records exchange x; diagnostics selects the diagnostics view.
func newEntry(kind string, x wire.Exchange, diagnostics bool) *entry {
	e := &entry{Kind: kind, At: x.SignedAt, Curl: x.Curl()}
	e.Request.Method, e.Request.URL, e.Request.Headers = x.Method, x.URL, x.RequestHeader
	e.Request.Body = shown(x.Body)
	e.ElapsedMS = float64(x.Elapsed.Microseconds()) / 1000
	if x.Err != nil {
		e.Error = x.Err.Error()
	}
	if x.Status == 0 {
		return e
	}
	e.Status, e.Headers = x.Status, x.Header
	e.Answer, e.AnswerBytes = shown(x.Answer), len(x.Answer)
	e.AnswerShown = len(e.Answer)
	e.AnswerCut = e.AnswerShown < len(x.Answer)
	if x.TooLong {
		e.Error = "the answer is longer than 8 MiB; it was read no further"
	}
	var v agent.View
	if diagnostics {
		v = agent.OfDiagnostics(x.Status, x.ContentType(), x.Answer)
	} else {
		v = agent.Of(x.Status, x.ContentType(), x.Answer)
	}
	e.View = &v
	return e
}

// shown is b cut to maxShown bytes, not inside a character, as text.
func shown(b []byte) string {
	if len(b) <= maxShown {
		return string(b)
	}
	p := b[:maxShown]
	for n := len(p); n > 0 && n > len(p)-utf8.UTFMax; n-- {
		if utf8.RuneStart(p[n-1]) {
			if !utf8.FullRune(p[n-1:]) {
				p = p[:n-1]
			}
			break
		}
	}
	return string(p)
}
