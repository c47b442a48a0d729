package answerjson

import (
	"encoding/json"
	"testing"
)

func TestIsRefusal(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"ok":false,"reason":"not_found"}`: true,
		`{"known":false}`:                   true,
		`{"allowed":false}`:                 true,
		`{"outcome":"blocked"}`:             true,
		`{"outcome":"unknown"}`:             true,
		`{"ok":true}`:                       false,
		`{"outcome":"done"}`:                false,
		`{"ok":"false"}`:                    false,
		`[false]`:                           false,
		`not json`:                          false,
	} {
		if got := IsRefusal(json.RawMessage(raw)); got != want {
			t.Errorf("IsRefusal(%s) = %v, want %v", raw, got, want)
		}
	}
}

func TestKeysOf(t *testing.T) {
	if got := KeysOf(nil); got != "no keys" {
		t.Errorf("no keys: got %q", got)
	}
	m := map[string]json.RawMessage{"result": nil, "error": nil}
	if got, want := KeysOf(m), `"error", "result"`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
