package agent

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/median-go/median/conformance/internal/answerjson"
	"github.com/median-go/median/internal/base/chars"
)

// Told is what the agent is told to make of an answer.
type Told string

// What the agent can be told (docs/PROTOCOL.md §11).
const (
	// ToldResult: the tool ran; the agent reads its result (a refusal
	// included) and answers from it.
	ToldResult Told = "result"
	// ToldFixInput: 400 invalid_input; the agent reads the message, fixes
	// its input and may call again.
	ToldFixInput Told = "fix_input"
	// ToldDoNotRetry: 200 execution_failed; the agent reads the message
	// and does not call again.
	ToldDoNotRetry Told = "do_not_retry"
	// ToldNotAnswering: any other non-2xx; the agent is told only that the
	// tool is not answering and reads nothing of the answer.
	ToldNotAnswering Told = "not_answering"
	// ToldDiagnostics: a diagnostics answer; Median keeps its first 2,000
	// characters.
	ToldDiagnostics Told = "diagnostics"
	// ToldOutside: the answer is outside the contract; what Median does
	// with it is not defined, so the view does not guess (Problem says why).
	ToldOutside Told = "outside_contract"
)

// View is what the agent gets from one answer.
type View struct {
	// Told is what the agent is told to make of the answer.
	Told Told `json:"told"`

	// Text is what the agent reads: the result's JSON text, hints removed
	// and cut to 4,000 characters (ToldResult); the error's message
	// (ToldFixInput, ToldDoNotRetry); the answer's first 2,000 characters
	// (ToldDiagnostics); "" otherwise.
	Text string `json:"text"`

	// Chars is how many characters the text had before the cut; Cut is
	// true when it was longer than the agent reads.
	Chars int  `json:"chars"`
	Cut   bool `json:"cut"`

	// Refusal is true when the result is a refusal (docs/PROTOCOL.md §3.1),
	// and Reason is then its reason ("not_signed_in", "rate_limited"; the
	// contract's default "tool_refused" when it names none).
	Refusal bool   `json:"refusal,omitempty"`
	Reason  string `json:"reason,omitempty"`

	// Button is the path the widget's button links to (medianNavigateTo),
	// Highlight the CSS selector it highlights (medianHighlight); "" when
	// the result carries none or an unusable one (Notes says why).
	Button    string `json:"button,omitempty"`
	Highlight string `json:"highlight,omitempty"`

	// Code is the error code of an error answer, "" for a result.
	Code string `json:"code,omitempty"`

	// Problem says why the answer is outside the contract (ToldOutside).
	Problem string `json:"problem,omitempty"`

	// Notes are remarks for the tool's author: a cut, a hint the widget
	// cannot use, a refusal whose fields break docs/PROTOCOL.md §3.1, an
	// unusual status.
	Notes []string `json:"notes,omitempty"`
}

// defaultRefusalReason is the reason of a refusal that names none
// (docs/PROTOCOL.md §3.1).
const defaultRefusalReason = "tool_refused"

// Hint names (docs/PROTOCOL.md §3.2) and their limits in characters.
const (
	hintNavigate  = "medianNavigateTo"
	hintHighlight = "medianHighlight"
	maxPath       = 2048
	maxSelector   = 256
)

// Of returns what the agent gets from the answer of a tool call: its
// status, Content-Type header and body as received.
func Of(status int, contentType string, body []byte) View {
	switch {
	case status == http.StatusOK:
	case status == http.StatusBadRequest:
		if a, err := answerjson.Parse(contentType, body); err == nil && a.Code == "invalid_input" {
			return View{Told: ToldFixInput, Text: a.Message, Chars: chars.Count([]byte(a.Message)), Code: a.Code}
		}
		return notAnswering(status)
	case status >= 200 && status < 300:
		return outside(fmt.Sprintf("status %d: a tool answers 200 (or an error status), never another 2xx", status))
	default:
		return notAnswering(status)
	}
	a, err := answerjson.Parse(contentType, body)
	switch {
	case err != nil:
		return outside(err.Error())
	case a.IsError() && a.Code == "execution_failed":
		return View{Told: ToldDoNotRetry, Text: a.Message, Chars: chars.Count([]byte(a.Message)), Code: a.Code}
	case a.IsError():
		return outside(fmt.Sprintf("status 200 with error code %q: a 200 carries an error only as execution_failed", a.Code))
	}
	return readResult(a.Result)
}

// OfDiagnostics returns what Median keeps of a diagnostics answer: the
// first 2,000 characters of a 200 application/json {"result": …} or
// {"error": …} answer.
func OfDiagnostics(status int, contentType string, body []byte) View {
	if status != http.StatusOK {
		return notAnswering(status)
	}
	if _, err := answerjson.Parse(contentType, body); err != nil {
		return outside(err.Error())
	}
	v := View{Told: ToldDiagnostics, Chars: chars.Count(body)}
	v.Text = string(chars.Prefix(body, chars.Diagnostics))
	if v.Chars > chars.Diagnostics {
		v.Cut = true
		v.Notes = append(v.Notes, fmt.Sprintf("Median keeps the first %s of %s characters", chars.Group(chars.Diagnostics), chars.Group(v.Chars)))
	}
	return v
}

// readResult is the view of a 200 {"result": raw}.
func readResult(raw json.RawMessage) View {
	v := View{Told: ToldResult, Refusal: answerjson.IsRefusal(raw)}
	if v.Refusal {
		if err := answerjson.CheckRefusal(raw); err != nil {
			v.Notes = append(v.Notes, fmt.Sprintf("%v (docs/PROTOCOL.md §3.1); the agent reads the result all the same", err))
		}
		var r struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(raw, &r)
		v.Reason = cmp.Or(r.Reason, defaultRefusalReason)
	}
	text := raw
	if obj, ok := answerjson.Members(raw); ok {
		var kept [][]byte
		for _, m := range obj {
			switch m.Name {
			case hintNavigate:
				v.Button, v.Notes = hint(m, v.Notes, checkPath)
			case hintHighlight:
				v.Highlight, v.Notes = hint(m, v.Notes, checkSelector)
			default:
				kept = append(kept, m.Raw)
			}
		}
		if len(kept) != len(obj) {
			text = join(kept)
		}
	}
	v.Chars = chars.Count(text)
	v.Text = string(chars.Prefix(text, chars.Result))
	if v.Chars > chars.Result {
		v.Cut = true
		v.Notes = append(v.Notes, fmt.Sprintf("the agent reads the first %s of %s characters: return less, or use protocol.FitResult", chars.Group(chars.Result), chars.Group(v.Chars)))
	}
	return v
}

// hint reads one widget hint, removed from the text whatever it holds; an
// unusable one shows nothing and adds a note.
func hint(m answerjson.Member, notes []string, check func(string) string) (string, []string) {
	var s string
	if err := json.Unmarshal(m.Value, &s); err != nil {
		return "", append(notes, fmt.Sprintf("%s is not a string (%s): the widget shows nothing", m.Name, chars.Snippet(m.Value, 40)))
	}
	if why := check(s); why != "" {
		return "", append(notes, fmt.Sprintf("%s %s: the widget shows nothing", m.Name, why))
	}
	return s, notes
}

// checkPath says what is wrong with a medianNavigateTo path, "" if nothing.
func checkPath(p string) string {
	switch n := utf8.RuneCountInString(p); {
	case n == 0 || p[0] != '/' || strings.HasPrefix(p, "//") || strings.HasPrefix(p, "/\\"):
		return fmt.Sprintf("%q does not start with a single /", chars.Snippet([]byte(p), 60))
	case n > maxPath:
		return fmt.Sprintf("is %d characters, over %d", n, maxPath)
	}
	return ""
}

// checkSelector says what is wrong with a medianHighlight selector.
func checkSelector(s string) string {
	switch n := utf8.RuneCountInString(s); {
	case strings.TrimSpace(s) == "":
		return "is empty"
	case n > maxSelector:
		return fmt.Sprintf("is %d characters, over %d", n, maxSelector)
	}
	return ""
}

// join writes members back as one object.
func join(members [][]byte) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(m)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// notAnswering is the view of a non-2xx answer the agent reads nothing of.
func notAnswering(status int) View {
	return View{Told: ToldNotAnswering, Notes: []string{fmt.Sprintf("status %d: the agent is told only that the tool is not answering; the message is not passed", status)}}
}

// outside is the view of an answer outside the contract.
func outside(problem string) View { return View{Told: ToldOutside, Problem: problem} }
