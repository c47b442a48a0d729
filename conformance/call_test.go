package conformance

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/median-go/median/conformance/internal/wire"
)

// TestEditedCallKeepsTheInput: a call no case edits is wire.CallBody's
// bytes; one a case edits is encoded again without HTML escaping, its
// members in name order and its input still the bytes CallBody wrote
// (compact, "<" kept).
func TestEditedCallKeepsTheInput(t *testing.T) {
	const input, compact = `{ "z": "<b>", "a": 1.50 }`, `{"z":"<b>","a":1.50}`
	p := wire.Persona{Risk: "low", Name: "Ada <a@b.c>"}
	built, err := wire.CallBody("echo", "call_1", json.RawMessage(input), p)
	if err != nil {
		t.Fatal(err)
	}
	if got := newCall("echo", "call_1", json.RawMessage(input), p).bytes(); string(got) != string(built) {
		t.Errorf("unedited\n%s\nwant\n%s", got, built)
	}
	got := newCall("echo", "call_1", json.RawMessage(input), p).
		setPath("context.risk", "<high>", false).
		setPath("extra", map[string]any{"x": "<y>"}, false).bytes()
	want := `{"context":{"conversationId":"call_1","risk":"<high>","visitor":{"name":"Ada <a@b.c>","verified":false}},"extra":{"x":"<y>"},"input":` + compact + `,"tool":"echo","toolCallId":"call_1"}`
	if string(got) != want {
		t.Errorf("edited\n%s\nwant\n%s", got, want)
	}
	if got := newCall("echo", "call_1", json.RawMessage(input), p).setPath("input", "not an object", false).bytes(); !strings.Contains(string(got), `"input":"not an object","tool"`) || !json.Valid(got) {
		t.Errorf("input retyped: %s", got)
	}
	if got := newCall("echo", "call_1", json.RawMessage(input), p).setPath("input", nil, true).bytes(); strings.Contains(string(got), `"input"`) || !json.Valid(got) {
		t.Errorf("input removed: %s", got)
	}
}
