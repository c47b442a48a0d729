package wire

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/median-go/median/protocol"
)

// TestCallBodyIsReproducible: the same parts give the same bytes, so a
// repeat with the same toolCallId is the identical body.
func TestCallBodyIsReproducible(t *testing.T) {
	p := Persona{Risk: "high", Verified: false, ExternalID: "user_7", Email: "a@b.c", ApprovedBy: "Grace"}
	a, err := CallBody("cancel_order", "call_1", json.RawMessage(`{"orderId":"A-1"}`), p)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := CallBody("cancel_order", "call_1", json.RawMessage(`{"orderId":"A-1"}`), p)
	if string(a) != string(b) {
		t.Fatalf("%s\n%s", a, b)
	}
	want := `{"tool":"cancel_order","toolCallId":"call_1","input":{"orderId":"A-1"},"context":{"conversationId":"call_1","risk":"high","approvedBy":"Grace","visitor":{"verified":false,"email":"a@b.c"}}}`
	if string(a) != want {
		t.Errorf("body\n%s\nwant\n%s (externalId only when verified; the conversationId defaults to the toolCallId)", a, want)
	}
	if _, err := CallBody("x", "call_1", json.RawMessage(`{`), p); err == nil {
		t.Error("an input that is not JSON was accepted")
	}
}

// TestCallBodySendsTheInputAsItIs: the input's bytes (key order, numbers,
// "<" and escapes) are in the body as given, only the white space between
// its tokens removed, and no string is HTML-escaped.
func TestCallBodySendsTheInputAsItIs(t *testing.T) {
	const input = `{"z":"<b>&amp;</b>\u2028 \u2029","a":12345678901234567890,"e":"\u00e9"}`
	p := Persona{Risk: "low", Verified: true, ExternalID: "u<1>", Name: "Ada <ada@example.com>"}
	b, err := CallBody("lookup_order", "call_<1>", json.RawMessage(input), p)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"tool":"lookup_order","toolCallId":"call_<1>","input":` + input + `,"context":{"conversationId":"call_<1>","risk":"low","visitor":{"verified":true,"externalId":"u<1>","name":"Ada <ada@example.com>"}}}`
	if string(b) != want {
		t.Errorf("body\n%s\nwant\n%s", b, want)
	}
	if !json.Valid(b) {
		t.Errorf("not JSON: %s", b)
	}
	spaced, err := CallBody("lookup_order", "call_<1>", json.RawMessage(" {\n  \"z\" : \"<b>&amp;</b>\\u2028 \\u2029\",\t\"a\": 12345678901234567890, \"e\":\"\\u00e9\"\n} \n"), p)
	if err != nil || string(spaced) != want {
		t.Errorf("spaced input: %v\n%s\nwant\n%s", err, spaced, want)
	}
}

func TestCurlQuotes(t *testing.T) {
	x := Exchange{Method: "POST", URL: "http://127.0.0.1/a", Body: []byte(`{"s":"it's"}`), RequestHeader: map[string][]string{"Median-Signature": {"t=1,v1=ab"}}}
	got := x.Curl()
	want := `curl -sS -i -X POST 'http://127.0.0.1/a' -H 'median-signature: t=1,v1=ab' -H 'Content-Type: application/json' --data-binary '{"s":"it'\''s"}'`
	if got != want {
		t.Errorf("%s\nwant\n%s", got, want)
	}
	if !strings.HasPrefix(UserAgent(), "mediancheck/") {
		t.Errorf("User-Agent %q", UserAgent())
	}
}

func TestDeclaredRisk(t *testing.T) {
	tools := []Tool{{Name: "a", Risk: "high"}, {Name: "b", Risk: "critical"}}
	for tool, want := range map[string]string{"a": "high", "b": "low", "c": "low"} {
		if got := DeclaredRisk(tools, tool); got != want {
			t.Errorf("%s: %s, want %s", tool, got, want)
		}
	}
}

// TestManifestKeepsTheDecodeError: a manifest that is not JSON is an error
// wrapping the decoder's *json.SyntaxError, beside the answer's start.
func TestManifestKeepsTheDecodeError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("not json"))
	}))
	defer srv.Close()
	key, err := protocol.ParseKey("mk_test_0123456789abcdef0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{URL: srv.URL, Key: key}
	_, _, err = c.Manifest(t.Context())
	var syntax *json.SyntaxError
	if !errors.As(err, &syntax) || !strings.Contains(err.Error(), "not json") {
		t.Errorf("Manifest: %v (%T); want a *json.SyntaxError wrapped, with the answer", err, err)
	}
}

// TestClientRequestsAreChecks: every request a Client sends carries its
// mark, so the endpoint counts it in its report's checks section, not as
// Median's; its curl line carries the mark too.
func TestClientRequestsAreChecks(t *testing.T) {
	const key = "mk_test_0123456789abcdefghijklmnopqrstuv"
	h, err := protocol.New(protocol.Config{Keys: []string{key}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	k, _ := protocol.ParseKey(key)
	c := &Client{URL: srv.URL, Key: k}
	if x := c.Get(t.Context()); x.Status != 200 || x.Header.Get("Median-Check-Token") == "" {
		t.Fatalf("the manifest: %d, token %q", x.Status, x.Header.Get("Median-Check-Token"))
	}
	x := c.Post(t.Context(), []byte(`{"op":"nope"}`))
	if x.Status != 400 {
		t.Fatalf("unknown op: %d %s", x.Status, x.Answer)
	}
	if !strings.Contains(x.Curl(), "-H 'median-check: "+k.CheckMark(x.SignedAt)+"'") {
		t.Errorf("the curl line does not carry the mark: %s", x.Curl())
	}
	r := h.Report(t.Context())
	if r.Checks.Requests != 2 || r.Checks.Refused[protocol.CodeUnknownOp] != 1 || len(r.Refused) != 0 || r.Keys[0].Verified != 0 {
		t.Errorf("checks %+v, refused %v, verified %d: the client's requests must be counted as a check's only", r.Checks, r.Refused, r.Keys[0].Verified)
	}
}

// TestClockWords: the sign of §10 (server clock minus t) read once: a
// negative skew is a sender ahead.
func TestClockWords(t *testing.T) {
	for _, tc := range []struct {
		skewMs int64
		want   string
	}{
		{-360_000, "Median's clock is 6 minutes ahead of this server's"},
		{360_000, "Median's clock is 6 minutes behind this server's"},
		{90_000, "Median's clock is 1 minute 30 seconds behind this server's"},
		{-2_500, "Median's clock is 2.5 seconds ahead of this server's"},
		{1_000, "Median's clock is 1 second behind this server's"},
		{850, "Median's clock is 850 milliseconds behind this server's"},
		{-(3*3600 + 5*60) * 1000, "Median's clock is 3 hours 5 minutes ahead of this server's"},
		{(2*24 + 4) * 3600 * 1000, "Median's clock is 2 days 4 hours behind this server's"},
		{0, "Median's clock and this server's agree"},
		{-1 << 63, "Median's clock is 53375 days 23 hours ahead of this server's"},
	} {
		if got := ClockWords(tc.skewMs, "Median", "this server"); got != tc.want {
			t.Errorf("ClockWords(%d) = %q, want %q", tc.skewMs, got, tc.want)
		}
	}
}
