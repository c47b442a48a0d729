package agent

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/median-go/median/protocol"
)

const jsonType = "application/json"

// randomResult builds a random result object with text of random
// characters (ASCII, multi-byte, emoji), optionally with hints at the top
// level and inside nested values.
func randomResult(r *rand.Rand, withHints bool) map[string]any {
	pieces := []string{"a", "é", "€", "😀", "\"", "\\", "<", "\u2028", " "}
	text := func() string {
		var b strings.Builder
		for n := r.IntN(3000); n > 0; n-- {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return b.String()
	}
	m := map[string]any{"id": r.IntN(1000), "note": text()}
	if r.IntN(2) == 0 {
		m["items"] = []any{map[string]any{"medianNavigateTo": "/nested/" + fmt.Sprint(r.IntN(9)), "t": text()}}
	}
	if r.IntN(2) == 0 {
		m["data"] = map[string]any{"medianHighlight": "#inner", "v": text()}
	}
	if withHints {
		m["medianNavigateTo"] = "/orders/" + fmt.Sprint(r.IntN(100))
		m["medianHighlight"] = "#order-status"
	}
	return m
}

func body(t *testing.T, result any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"result": result})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCutCountsLikeFitResult: the text is cut at exactly 4,000 characters,
// counted as protocol.FitResult counts them: a result FitResult lets
// through at 4,000 is read whole, and a cut text is exactly 4,000
// characters and a prefix of the result.
func TestCutCountsLikeFitResult(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for i := range 300 {
		res := randomResult(r, false)
		raw, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		v := Of(200, jsonType, body(t, res))
		if v.Told != ToldResult {
			t.Fatalf("#%d: told %s (%s)", i, v.Told, v.Problem)
		}
		n := utf8.RuneCount(raw)
		if v.Chars != n {
			t.Fatalf("#%d: Chars = %d, the result has %d characters", i, v.Chars, n)
		}
		_, fitErr := protocol.FitResult(json.RawMessage(raw), 4000)
		fits := n <= 4000
		if fits && fitErr != nil {
			t.Fatalf("#%d: FitResult refuses a result of %d characters: %v", i, n, fitErr)
		}
		switch {
		case fits && (v.Cut || v.Text != string(raw)):
			t.Fatalf("#%d: a result of %d characters (FitResult keeps it as is) was cut to %d", i, n, utf8.RuneCountInString(v.Text))
		case !fits && (!v.Cut || utf8.RuneCountInString(v.Text) != 4000 || !strings.HasPrefix(string(raw), v.Text)):
			t.Fatalf("#%d: a result of %d characters: cut %v to %d characters", i, n, v.Cut, utf8.RuneCountInString(v.Text))
		}
	}
}

// TestCutAtTheEdge: 4,000 characters are read whole, 4,001 are cut, with
// multi-byte characters (a byte count would cut far earlier).
func TestCutAtTheEdge(t *testing.T) {
	for _, n := range []int{3999, 4000, 4001} {
		s := strings.Repeat("€", n-2) // the quotes are the other two characters
		v := Of(200, jsonType, body(t, s))
		if want := n > 4000; v.Cut != want {
			t.Errorf("%d characters: Cut = %v, want %v", n, v.Cut, want)
		}
		if got := utf8.RuneCountInString(v.Text); got != min(n, 4000) {
			t.Errorf("%d characters: text of %d characters", n, got)
		}
	}
}

// TestHintsRemovedOnlyAtTopLevel: the top level's hints become the button
// and highlight and leave the text; the same names inside nested values
// stay in the text.
func TestHintsRemovedOnlyAtTopLevel(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 200 {
		res := randomResult(r, true)
		v := Of(200, jsonType, body(t, res))
		if v.Button != res["medianNavigateTo"] || v.Highlight != "#order-status" {
			t.Fatalf("#%d: button %q highlight %q", i, v.Button, v.Highlight)
		}
		delete(res, "medianNavigateTo")
		delete(res, "medianHighlight")
		want, _ := json.Marshal(res)
		if v.Chars != utf8.RuneCount(want) {
			t.Fatalf("#%d: %d characters, want %d", i, v.Chars, utf8.RuneCount(want))
		}
		if !v.Cut {
			var got, wantV any
			if err := json.Unmarshal([]byte(v.Text), &got); err != nil {
				t.Fatalf("#%d: text is not JSON: %v", i, err)
			}
			_ = json.Unmarshal(want, &wantV)
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(wantV)
			if string(gb) != string(wb) {
				t.Fatalf("#%d: text\n%s\nwant\n%s", i, gb, wb)
			}
		}
	}
}

func TestHintsKeepTheRestByteForByte(t *testing.T) {
	raw := `{"result":{"b":1, "medianNavigateTo":"/o/1","a":{"medianHighlight":"#x"},"medianHighlight":".s","z":[ 1 ]}}`
	v := Of(200, jsonType, []byte(raw))
	if want := `{"b":1,"a":{"medianHighlight":"#x"},"z":[ 1 ]}`; v.Text != want {
		t.Errorf("text %s, want %s", v.Text, want)
	}
	if v.Button != "/o/1" || v.Highlight != ".s" {
		t.Errorf("button %q highlight %q", v.Button, v.Highlight)
	}
	// A result without hints is read as sent.
	v = Of(200, jsonType, []byte(`{"result":{ "a" : 1 }}`))
	if v.Text != `{ "a" : 1 }` {
		t.Errorf("text %q", v.Text)
	}
}

func TestUnusableHintsShowNothing(t *testing.T) {
	for _, res := range []string{
		`{"medianNavigateTo":"https://evil.example/x","ok":true}`,
		`{"medianNavigateTo":"//evil.example","ok":true}`,
		`{"medianNavigateTo":"/\\\\evil.example","ok":true}`,
		`{"medianNavigateTo":5,"ok":true}`,
		`{"medianHighlight":"","ok":true}`,
		`{"medianHighlight":"` + strings.Repeat("a", 257) + `","ok":true}`,
	} {
		v := Of(200, jsonType, []byte(`{"result":`+res+`}`))
		if v.Button != "" || v.Highlight != "" || len(v.Notes) != 1 || v.Text != `{"ok":true}` {
			t.Errorf("%s: button %q highlight %q text %s notes %q", res, v.Button, v.Highlight, v.Text, v.Notes)
		}
	}
}

// TestRefusalStaysReadable: a refusal is read like any result, reason and
// detail included, even when long and carrying hints.
func TestRefusalStaysReadable(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for i := range 100 {
		detail := strings.Repeat("é", r.IntN(3000))
		res := map[string]any{"ok": false, "outcome": "blocked", "reason": "not_signed_in", "detail": detail, "medianNavigateTo": "/login"}
		v := Of(200, jsonType, body(t, res))
		if v.Told != ToldResult || !v.Refusal || v.Reason != "not_signed_in" || v.Button != "/login" {
			t.Fatalf("#%d: %+v", i, v)
		}
		if !strings.Contains(v.Text, `"reason":"not_signed_in"`) {
			t.Fatalf("#%d: the reason is not in the text", i)
		}
		if !v.Cut && !strings.Contains(v.Text, detail) {
			t.Fatalf("#%d: the detail is not in the text", i)
		}
	}
}

// TestRefusalReason: a refusal's reason is named, the contract's default
// when it names none; a result that is not a refusal has none.
func TestRefusalReason(t *testing.T) {
	for raw, want := range map[string]string{
		`{"result":{"ok":false,"allowed":false,"outcome":"blocked","reason":"rate_limited","detail":"later"}}`: "rate_limited",
		`{"result":{"ok":false,"outcome":"blocked"}}`:                                                          "tool_refused",
		`{"result":{"ok":true,"reason":"not a refusal"}}`:                                                      "",
	} {
		if v := Of(200, jsonType, []byte(raw)); v.Reason != want {
			t.Errorf("%s: reason %q, want %q", raw, v.Reason, want)
		}
	}
}

func TestWhatTheAgentIsTold(t *testing.T) {
	cases := []struct {
		name        string
		status      int
		contentType string
		body        string
		told        Told
		text        string
	}{
		{"result", 200, "application/json; charset=utf-8", `{"result":[1,2]}`, ToldResult, `[1,2]`},
		{"null result", 200, jsonType, `{"result":null}`, ToldResult, `null`},
		{"execution failed", 200, jsonType, `{"error":{"code":"execution_failed","message":"db down"}}`, ToldDoNotRetry, "db down"},
		{"invalid input", 400, jsonType, `{"error":{"code":"invalid_input","message":"orderId: missing"}}`, ToldFixInput, "orderId: missing"},
		{"invalid body", 400, jsonType, `{"error":{"code":"invalid_body","message":"not JSON"}}`, ToldNotAnswering, ""},
		{"unauthorized", 401, jsonType, `{"error":{"code":"signature_mismatch","message":"secret"}}`, ToldNotAnswering, ""},
		{"server error", 500, "text/html", `<h1>oops</h1>`, ToldNotAnswering, ""},
		{"404 unknown tool", 404, jsonType, `{"error":{"code":"unknown_tool","message":"x"}}`, ToldNotAnswering, ""},
		{"200 not JSON", 200, jsonType, `hello`, ToldOutside, ""},
		{"200 wrong type", 200, "text/plain", `{"result":1}`, ToldOutside, ""},
		{"200 no type", 200, "", `{"result":1}`, ToldOutside, ""},
		{"200 neither shape", 200, jsonType, `{"data":1}`, ToldOutside, ""},
		{"200 both", 200, jsonType, `{"result":1,"error":{"code":"x","message":"y"}}`, ToldOutside, ""},
		{"200 other error code", 200, jsonType, `{"error":{"code":"invalid_input","message":"y"}}`, ToldOutside, ""},
		{"200 error without message", 200, jsonType, `{"error":{"code":"execution_failed"}}`, ToldOutside, ""},
		{"200 error with an extra key", 200, jsonType, `{"error":{"code":"execution_failed","message":"m","retry":false}}`, ToldOutside, ""},
		{"200 error as text/plain", 200, "text/plain", `{"error":{"code":"execution_failed","message":"m"}}`, ToldOutside, ""},
		{"200 result twice", 200, jsonType, `{"result":1,"result":2}`, ToldOutside, ""},
		{"200 result and more", 200, jsonType, `{"result":1} {}`, ToldOutside, ""},
		{"400 invalid input with an extra key", 400, jsonType, `{"error":{"code":"invalid_input","message":"m","field":"x"}}`, ToldNotAnswering, ""},
		{"400 invalid input as text/plain", 400, "text/plain", `{"error":{"code":"invalid_input","message":"m"}}`, ToldNotAnswering, ""},
		// A wrong Content-Type is outside the contract on a 200 only: a
		// non-2xx is read by its status alone (docs/PROTOCOL.md §11).
		{"200 text/plain", 200, "text/plain", `upstream timeout`, ToldOutside, ""},
		{"503 text/plain", 503, "text/plain", `upstream timeout`, ToldNotAnswering, ""},
		{"204", 204, jsonType, ``, ToldOutside, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Of(c.status, c.contentType, []byte(c.body))
			if v.Told != c.told || v.Text != c.text {
				t.Errorf("told %s text %q, want %s %q (problem %q)", v.Told, v.Text, c.told, c.text, v.Problem)
			}
			if (v.Told == ToldOutside) != (v.Problem != "") {
				t.Errorf("problem %q with told %s", v.Problem, v.Told)
			}
			if v.Told == ToldNotAnswering && strings.Contains(strings.Join(v.Notes, " "), "secret") {
				t.Errorf("the message reached the view: %q", v.Notes)
			}
		})
	}
}

func TestDiagnosticsKeepsTwoThousand(t *testing.T) {
	long := `{"result":{"t":"` + strings.Repeat("€", 2500) + `"}}`
	v := OfDiagnostics(200, jsonType, []byte(long))
	if v.Told != ToldDiagnostics || !v.Cut || utf8.RuneCountInString(v.Text) != 2000 || !strings.HasPrefix(long, v.Text) {
		t.Errorf("told %s cut %v %d characters", v.Told, v.Cut, utf8.RuneCountInString(v.Text))
	}
	if v := OfDiagnostics(200, jsonType, []byte(`{"result":{}}`)); v.Cut || v.Text != `{"result":{}}` {
		t.Errorf("short: %+v", v)
	}
	if v := OfDiagnostics(503, jsonType, nil); v.Told != ToldNotAnswering {
		t.Errorf("503: %+v", v)
	}
	if v := OfDiagnostics(200, "text/plain", []byte("ok")); v.Told != ToldOutside {
		t.Errorf("text/plain: %+v", v)
	}
}

// FuzzOf: no answer makes Of panic, and a result's text never exceeds
// 4,000 characters.
func FuzzOf(f *testing.F) {
	f.Add(200, `{"result":{"medianNavigateTo":"/a","x":1}}`)
	f.Add(400, `{"error":{"code":"invalid_input","message":"m"}}`)
	f.Add(200, `{"result":{"a":1,,}}`)
	f.Fuzz(func(t *testing.T, status int, body string) {
		v := Of(status, jsonType, []byte(body))
		if utf8.RuneCountInString(v.Text) > 4000 {
			t.Fatalf("text of %d characters", utf8.RuneCountInString(v.Text))
		}
	})
}
