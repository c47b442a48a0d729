package answerjson

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

const jsonType = "application/json"

func TestParseReadsTheContractsShapes(t *testing.T) {
	for _, c := range []struct {
		contentType, body string
		want              Answer
	}{
		{jsonType, `{"result":{"a":1}}`, Answer{Result: json.RawMessage(`{"a":1}`)}},
		{jsonType, `{"result":null}`, Answer{Result: json.RawMessage(`null`)}},
		{"application/json; charset=utf-8", ` {"result" : [ 1 ]} ` + "\n", Answer{Result: json.RawMessage(`[ 1 ]`)}},
		{"Application/JSON", `{"result":1}`, Answer{Result: json.RawMessage(`1`)}},
		{jsonType, `{"error":{"code":"execution_failed","message":"db down"}}`, Answer{Code: "execution_failed", Message: "db down"}},
		{jsonType, `{"error":{"message":"","code":"invalid_body"}}`, Answer{Code: "invalid_body"}},
	} {
		a, err := Parse(c.contentType, []byte(c.body))
		if err != nil {
			t.Errorf("%s %s: %v", c.contentType, c.body, err)
			continue
		}
		if string(a.Result) != string(c.want.Result) || a.Code != c.want.Code || a.Message != c.want.Message || a.IsError() != (c.want.Result == nil) {
			t.Errorf("%s: got %+v, want %+v", c.body, a, c.want)
		}
	}
}

// TestParseRefusesWhatTheContractDoesNot: each answer breaks one rule of
// docs/PROTOCOL.md §3, and the error says which.
func TestParseRefusesWhatTheContractDoesNot(t *testing.T) {
	for _, c := range []struct {
		contentType, body, says string
	}{
		{"text/plain", `{"result":1}`, `Content-Type is "text/plain", not application/json`},
		{"", `{"result":1}`, `Content-Type is "", not application/json`},
		{"application/jsonx", `{"result":1}`, "not application/json"},
		{"application/json; charset", `{"result":1}`, "not application/json"},
		{"text/html", "<h1>\n oops</h1>\n", `Content-Type is "text/html", not application/json, and the answer is not a JSON object: <h1> oops</h1>`},
		{jsonType, ``, "not a JSON object: (empty body)"},
		{jsonType, `null`, "not a JSON object"},
		{jsonType, `[{"result":1}]`, "not a JSON object"},
		{jsonType, `{"result":1`, "not a JSON object"},
		{jsonType, `{"result":1} x`, "not a JSON object"},
		{jsonType, `{"result":1}{}`, "not a JSON object"},
		{jsonType, `{}`, `exactly one key, "result" or "error"; it has no keys`},
		{jsonType, `{"data":1}`, `it has "data"`},
		{jsonType, `{"result":1,"error":{"code":"x","message":"y"}}`, `it has "error", "result"`},
		{jsonType, `{"result":1,"result":2}`, `it has "result", "result"`},
		{jsonType, `{"error":"db down"}`, `"error" must be an object with code and message, got "db down"`},
		{jsonType, `{"error":{"code":"execution_failed"}}`, `"error" must have exactly code and message; it has "code"`},
		{jsonType, `{"error":{"message":"m"}}`, `it has "message"`},
		{jsonType, `{"error":{"code":"execution_failed","message":"m","field":"orderId"}}`, `it has "code", "field", "message"`},
		{jsonType, `{"error":{"code":"a","code":"b","message":"m"}}`, `it has "code", "code", "message"`},
		{jsonType, `{"error":{"code":"","message":"m"}}`, `"error.code" must be a non-empty string, got ""`},
		{jsonType, `{"error":{"code":5,"message":"m"}}`, `"error.code" must be a non-empty string, got 5`},
		{jsonType, `{"error":{"code":"x","message":null}}`, `"error.message" must be a string, got null`},
	} {
		_, err := Parse(c.contentType, []byte(c.body))
		if err == nil {
			t.Errorf("%q %s: accepted", c.contentType, c.body)
			continue
		}
		if !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q %s: %q does not say %q", c.contentType, c.body, err, c.says)
		}
	}
}

func TestMembersKeepWhatWasSent(t *testing.T) {
	ms, ok := Members([]byte(`{ "b":1, "a" : {"x": [ 2 ]},"b":"\u00e9" }`))
	if !ok || len(ms) != 3 {
		t.Fatalf("%v %+v", ok, ms)
	}
	for i, want := range []Member{{"b", []byte(`1`), []byte(`"b":1`)}, {"a", []byte(`{"x": [ 2 ]}`), []byte(`"a" : {"x": [ 2 ]}`)}, {"b", []byte(`"\u00e9"`), []byte(`"b":"\u00e9"`)}} {
		if ms[i].Name != want.Name || string(ms[i].Value) != string(want.Value) || string(ms[i].Raw) != string(want.Raw) {
			t.Errorf("member %d: %q %s %s, want %q %s %s", i, ms[i].Name, ms[i].Value, ms[i].Raw, want.Name, want.Value, want.Raw)
		}
	}
	if ms, ok := Members([]byte("{}\n")); !ok || len(ms) != 0 {
		t.Errorf("{}: %v %v", ms, ok)
	}
}

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

// TestParseBodyIsParseWithoutTheContentType: ParseBody reads a body as
// Parse reads it with an application/json Content-Type, the same answer
// and the same error, and takes a body Parse refuses only for its
// Content-Type.
func TestParseBodyIsParseWithoutTheContentType(t *testing.T) {
	for _, body := range []string{
		`{"result":{"a":1}}`, ` {"result" : [ 1 ]} `, `{"error":{"code":"execution_failed","message":"db down"}}`,
		``, `null`, `{"result":1} x`, `{}`, `{"result":1,"result":2}`, `{"error":{"code":"x","message":null}}`,
		`{"error":{"code":"execution_failed","message":"m","field":"orderId"}}`,
	} {
		want, wantErr := Parse(jsonType, []byte(body))
		got, err := ParseBody([]byte(body))
		if string(got.Result) != string(want.Result) || got.Code != want.Code || got.Message != want.Message || fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Errorf("%s: ParseBody %+v, %v; Parse %+v, %v", body, got, err, want, wantErr)
		}
	}
	if _, err := Parse("text/plain", []byte(`{"result":1}`)); err == nil {
		t.Fatal("Parse took text/plain")
	}
	if a, err := ParseBody([]byte(`{"error":{"code":"unknown_tool","message":"m"}}`)); err != nil || a.Code != "unknown_tool" {
		t.Errorf("ParseBody: %+v, %v", a, err)
	}
}
