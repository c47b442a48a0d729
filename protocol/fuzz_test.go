package protocol

// Fuzz targets for the three places untrusted bytes enter the core: the
// median-signature header, the POST body and the whole Serve entry point.
//
// Run one at a time, for example:
//
//	go test ./protocol -run '^$' -fuzz '^FuzzServe$' -fuzztime 10m -parallel 1
//
// Interesting inputs found by past runs live in testdata/fuzz/<Target>/ and
// run as ordinary tests with `go test ./protocol`.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// fuzzKey is the Median key every fuzz handler accepts; fuzzOtherKey is a
// usable key the handler does not know.
const (
	fuzzKey      = "fuzz-key-0123456789abcdefghijklmnopqrstuvwxyz"
	fuzzOtherKey = "fuzz-other-key-ZYXWVUTSRQPONMLKJIHGFEDCBA9876543210"
)

// fuzzNow is the fixed server clock of the fuzz handler.
var fuzzNow = time.UnixMilli(1_760_000_000_000)

// fuzzMaxBody is a small body limit so that fuzzing reaches the 413 path.
const fuzzMaxBody = 4096

// fuzzSecret is the derived signing secret of fuzzKey, for the reference MAC.
var fuzzSecret = func() []byte {
	s, err := deriveSecret(fuzzKey)
	if err != nil {
		panic(err)
	}
	return s
}()

// fuzzMAC is the reference HMAC-SHA256 of "<ts>.<body>" under fuzzKey.
func fuzzMAC(ts string, body []byte) []byte {
	m := hmac.New(sha256.New, fuzzSecret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// fuzzRefSig is what the reference parser makes of a header.
type fuzzRefSig struct {
	missing   bool     // empty after trimming
	malformed bool     // not t=<ms>,v1=<hex>
	ts        string   // t as sent
	t         int64    // t parsed
	v1        [][]byte // every v1 entry, decoded
}

// fuzzParseRef is an independent reading of PROTOCOL.md §1.1, used as the
// oracle for ParseSignature and Serve.
func fuzzParseRef(header string) fuzzRefSig {
	header = strings.TrimSpace(header)
	if header == "" {
		return fuzzRefSig{missing: true}
	}
	var r fuzzRefSig
	seenT := false
	for _, part := range strings.Split(header, ",") {
		i := strings.IndexByte(strings.TrimSpace(part), '=')
		if i < 0 {
			return fuzzRefSig{malformed: true}
		}
		part = strings.TrimSpace(part)
		name, value := part[:i], part[i+1:]
		switch name {
		case "t":
			if seenT || !fuzzIsDecimal(value) {
				return fuzzRefSig{malformed: true}
			}
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil { // out of int64 range
				return fuzzRefSig{malformed: true}
			}
			seenT, r.ts, r.t = true, value, n
		case "v1":
			mac, err := hex.DecodeString(value)
			if len(value) != 64 || err != nil {
				return fuzzRefSig{malformed: true}
			}
			r.v1 = append(r.v1, mac)
		}
	}
	if !seenT || len(r.v1) == 0 {
		return fuzzRefSig{malformed: true}
	}
	return r
}

// fuzzIsDecimal reports whether s is an optional '-' and one or more digits.
func fuzzIsDecimal(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// fresh reports whether t is within tolerance of now, with exact arithmetic.
func (r fuzzRefSig) fresh(now time.Time, tolerance time.Duration) bool {
	d := new(big.Int).Sub(big.NewInt(now.UnixMilli()), big.NewInt(r.t))
	return d.Abs(d).Cmp(big.NewInt(tolerance.Milliseconds())) <= 0
}

// matches reports whether one v1 entry is the MAC of body under fuzzKey.
func (r fuzzRefSig) matches(body []byte) bool {
	want := fuzzMAC(r.ts, body)
	for _, m := range r.v1 {
		if hmac.Equal(m, want) {
			return true
		}
	}
	return false
}

func FuzzParseSignature(f *testing.F) {
	mac := hex.EncodeToString(fuzzMAC("1760000000000", []byte("{}")))
	for _, s := range []string{
		"t=1760000000000,v1=" + mac,
		"t=1760000000000, v1=" + strings.ToUpper(mac),
		"v1=" + mac + ",t=1760000000000",
		"t=1760000000000,v0=abc,v1=" + mac + ",v2=zz,v1=" + strings.Repeat("0", 64),
		"  t=1760000000000 ,  v1=" + mac + "  ",
		"", " ", "t=", "t=1", "v1=" + mac, "t=1,t=2,v1=" + mac,
		"t=+1,v1=" + mac, "t=-1,v1=" + mac, "t=1.5,v1=" + mac, "t=0x10,v1=" + mac,
		"t=9223372036854775807,v1=" + mac, "t=-9223372036854775808,v1=" + mac,
		"t=99999999999999999999,v1=" + mac, "t=1,v1=" + mac[:63], "t=1,v1=" + mac + "0",
		"t=1,v1=" + strings.Repeat("g", 64), "t=1,,v1=" + mac, "t=1,v1=" + mac + ",",
		"t=1;v1=" + mac, "t==1,v1=" + mac, "T=1,V1=" + mac, "t=1,v1=" + mac + "=",
		"t=1760000000,v1=" + mac, "t=١٢٣,v1=" + mac, "\tt=1,\nv1=" + mac,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		sig, err := parseSignature(header)
		ref := fuzzParseRef(header)
		switch {
		case ref.missing:
			if !errors.Is(err, CodeMissingSignature) || errorCode(err) != CodeMissingSignature {
				t.Fatalf("parseSignature(%q) = %v, want missing_signature", header, err)
			}
			return
		case ref.malformed:
			if !errors.Is(err, CodeMalformedSignature) || errorCode(err) != CodeMalformedSignature {
				t.Fatalf("parseSignature(%q) = %v, want malformed_signature", header, err)
			}
			if errors.Is(err, CodeMissingSignature) {
				t.Fatalf("parseSignature(%q) wraps two sentinels: %v", header, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("parseSignature(%q) = %v, want a signature (t=%s, %d v1)", header, err, ref.ts, len(ref.v1))
		}
		if sig.timestamp != ref.t {
			t.Fatalf("parseSignature(%q).Timestamp = %d, want %d", header, sig.timestamp, ref.t)
		}

		// Time: exact arithmetic, even for timestamps near the int64 limits.
		for _, tol := range []time.Duration{0, time.Millisecond, defaultTolerance} {
			gotFresh := sig.checkTime(fuzzNow, tol) == nil
			if gotFresh != ref.fresh(fuzzNow, tol) {
				t.Fatalf("CheckTime(t=%d, tolerance %s) fresh=%v, want %v", ref.t, tol, gotFresh, !gotFresh)
			}
			if err := sig.checkTime(fuzzNow, tol); err != nil && errorCode(err) != CodeStaleTimestamp {
				t.Fatalf("CheckTime error %v has code %q, want stale_timestamp", err, errorCode(err))
			}
		}

		// Verify agrees with the reference MAC over the t exactly as sent.
		key := mustParseKey(fuzzKey)
		for _, body := range [][]byte{nil, []byte("{}"), []byte(header)} {
			err := sig.verify(body, key)
			if (err == nil) != ref.matches(body) {
				t.Fatalf("Verify(%q) under %q = %v, reference says match=%v", body, header, err, ref.matches(body))
			}
			if err != nil && (!errors.Is(err, CodeInvalidSignature) || strings.Contains(err.Error(), hex.EncodeToString(fuzzMAC(ref.ts, body)))) {
				t.Fatalf("Verify error %q: want invalid_signature without the computed MAC", err)
			}
		}

		// Adding the correct v1 entry always makes the header verify.
		body := []byte(`{"op":"diagnostics"}`)
		good := header + ",v1=" + hex.EncodeToString(fuzzMAC(ref.ts, body))
		sig2, err := parseSignature(good)
		if err != nil {
			t.Fatalf("parseSignature(%q) = %v after adding a v1 entry", good, err)
		}
		if err := sig2.verify(body, mustParseKey(fuzzOtherKey), key); err != nil {
			t.Fatalf("Verify(%q) = %v, want a match under the second key", good, err)
		}
	})
}

// fuzzBodySeeds are bodies, good and bad, that seed the body fuzzers.
var fuzzBodySeeds = []string{
	`{"tool":"lookup_order","toolCallId":"call_0123456789abcdef0123456789abcdef","input":{"orderId":"A-1001"},"context":{"conversationId":"conv_42","risk":"low","visitor":{"verified":true,"externalId":"user_7","email":"a@b.c","name":"Ada"}}}`,
	`{"tool":"lookup_order","toolCallId":"test_6f1c2c3e-1b7a-4c55-9a3d-2f4f1f0e9b11","input":{"orderId":"A-1002","navigateTo":"/orders/A-1002"},"context":{"conversationId":"test_6f1c2c3e-1b7a-4c55-9a3d-2f4f1f0e9b11","risk":"high","visitor":{"verified":false},"approvedBy":"A test from the CLI"}}`,
	`{"tool":"lookup_order","toolCallId":"c1","input":{"orderId":"panic"},"context":{"conversationId":"c","risk":"medium","visitor":{"verified":true,"externalId":"u"}}}`,
	`{"tool":"lookup_order","toolCallId":"c2","input":{"orderId":"fail"},"context":{"conversationId":"c","risk":"reviewed","visitor":{"verified":true,"externalId":"u"},"approvedBy":"The reviewer"}}`,
	`{"tool":"lookup_order","toolCallId":"c3","input":{"orderId":"A-1","navigateTo":"//evil.example"},"context":{"conversationId":"c","risk":"low","visitor":{"verified":true,"externalId":"u"}}}`,
	`{"tool":"echo","toolCallId":"c4","input":{"a":[1,2.5,"x",null,true,{"b":{}}],"medianHighlight":"#order"},"context":{"conversationId":"c","risk":"low","visitor":{"verified":false,"email":"x"},"extra":1},"future":"field"}`,
	`{"tool":"lookup_order","toolCallId":"c5","input":{"orderId":12},"context":{"conversationId":"c","risk":"low","visitor":{"verified":true}}}`,
	`{"tool":"lookup_order","toolCallId":"c6","input":{},"context":{"conversationId":"c","risk":"low","visitor":{"verified":true}}}`,
	`{"tool":"nope","toolCallId":"c7","input":{},"context":{"conversationId":"c","risk":"low","visitor":{"verified":true}}}`,
	`{"tool":"lookup_order","toolCallId":"c8","input":[],"context":{"conversationId":"c","risk":"low","visitor":{"verified":true}}}`,
	`{"tool":"lookup_order","toolCallId":"c9","input":{"orderId":"A"},"context":{"conversationId":"c","risk":"extreme","visitor":{"verified":true}}}`,
	`{"tool":"lookup_order","toolCallId":"","input":{},"context":{"conversationId":"c","risk":"low","visitor":{"verified":true}}}`,
	`{"tool":"lookup_order","toolCallId":"c10","input":{"orderId":"A"},"context":{"conversationId":"c","risk":"low","visitor":{"verified":"yes"}}}`,
	`{"tool":"lookup_order","toolCallId":"c11","input":{"orderId":"A"},"context":{"risk":"low","visitor":{"verified":true}}}`,
	`{"tool":1}`, `{"tool":null,"toolCallId":"x"}`, `{"TOOL":"lookup_order"}`,
	`{"op":"diagnostics"}`, `{"op":"diagnostics","tool":"x"}`, `{"op":"reboot"}`, `{"op":7}`, `{"op":null}`,
	`{}`, `[]`, `null`, `"x"`, `12`, ``, `{`, `{"tool":"a"`, "\xff\xfe", `{"a":1e999}`,
	`{"tool":"echo","toolCallId":"c12","input":{"n":1e400},"context":{"conversationId":"c","risk":"low","visitor":{"verified":true}}}`,
	`{"tool":"echo","toolCallId":"c13","input":{"s":"\ud800"},"context":{"conversationId":"c","risk":"low","visitor":{"verified":true}}}`,
	`{"tool":"lookup_order","toolCallId":"c14","input":{"orderId":"A-1","quantity":99},"context":{"conversationId":"c","risk":"low","visitor":{"verified":true,"externalId":"u"}}}`,
	`{"tool":"lookup_order","toolCallId":"c15","input":{"orderId":"A-1","quantity":1e-1000001},"context":{"conversationId":"c","risk":"low","visitor":{"verified":true,"externalId":"u"}}}`,
}

func FuzzDecodeBody(f *testing.F) {
	for _, s := range fuzzBodySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		op, call, err := decodeBody(body)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("decodeBody(%q) error %T %v is not an *Error", body, err, err)
			}
			if (e.Code != CodeInvalidBody && e.Code != CodeUnknownOp) || e.Status != http.StatusBadRequest || e.Message == "" {
				t.Fatalf("decodeBody(%q) = %d %s %q, want 400 invalid_body or unknown_op with a message", body, e.Status, e.Code, e.Message)
			}
			return
		}
		if !jsontext.Value(body).IsValid(jsontext.AllowDuplicateNames(true)) || fuzzFirstByte(body) != '{' {
			t.Fatalf("decodeBody(%q) accepted a body that is not a JSON object", body)
		}
		if op == opDiagnostics {
			if call != nil {
				t.Fatalf("decodeBody(%q) returned both the diagnostics op and a call", body)
			}
			return
		}
		if op != "" || call == nil {
			t.Fatalf("decodeBody(%q) = op %q, call %v: want a call", body, op, call)
		}
		fuzzCheckCall(t, body, call)
		// A name may repeat only inside the input, which the schema check
		// refuses after the tool lookup.
		if !jsontext.Value(body).IsValid() && jsontext.Value(call.RawInput).IsValid() {
			t.Fatalf("decodeBody(%q) accepted a body that repeats a name outside its input", body)
		}

		// Round trip: the call, encoded with the contract's field names,
		// decodes to the same call.
		again := fuzzEncodeCall(call)
		_, call2, err := decodeBody(again)
		if err != nil {
			t.Fatalf("re-encoded call %s does not decode: %v", again, err)
		}
		if !fuzzSameCall(call, call2) {
			t.Fatalf("round trip changed the call:\n%+v\n%+v", call, call2)
		}
	})
}

// fuzzCheckCall checks the fields of a decoded call against the contract.
func fuzzCheckCall(t *testing.T, body []byte, call *Call) {
	t.Helper()
	if call.Tool == "" || call.ToolCallID == "" || call.Risk.rank() == 0 {
		t.Fatalf("decodeBody(%q) = tool %q, id %q, risk %q: required fields empty or invalid", body, call.Tool, call.ToolCallID, call.Risk)
	}
	if !json.Valid(call.RawInput) || fuzzFirstByte(call.RawInput) != '{' {
		t.Fatalf("decodeBody(%q) input %q is not a JSON object", body, call.RawInput)
	}
	if id, ok := call.Visitor.ExternalID(); ok && (!call.Visitor.Verified || id == "") {
		t.Fatalf("decodeBody(%q) gives externalId %q for an unverified visitor", body, id)
	}
}

// fuzzEncodeCall writes call back as a ToolCall body.
func fuzzEncodeCall(call *Call) []byte {
	visitor := map[string]any{"verified": call.Visitor.Verified, "email": call.Visitor.UnverifiedEmail, "name": call.Visitor.UnverifiedName}
	if id, ok := call.Visitor.ExternalID(); ok {
		visitor["externalId"] = id
	}
	ctx := map[string]any{"conversationId": call.ConversationID, "risk": call.Risk, "visitor": visitor}
	if call.ApprovedBy != "" {
		ctx["approvedBy"] = call.ApprovedBy
	}
	b, err := json.Marshal(map[string]any{"tool": call.Tool, "toolCallId": call.ToolCallID, "input": call.RawInput, "context": ctx})
	if err != nil {
		panic(err)
	}
	return b
}

// fuzzSameCall compares two calls field by field (RawInput as JSON).
func fuzzSameCall(a, b *Call) bool {
	ida, oka := a.Visitor.ExternalID()
	idb, okb := b.Visitor.ExternalID()
	return a.Tool == b.Tool && a.ToolCallID == b.ToolCallID && a.ConversationID == b.ConversationID &&
		a.Risk == b.Risk && a.ApprovedBy == b.ApprovedBy && a.Visitor.Verified == b.Visitor.Verified &&
		a.Visitor.UnverifiedEmail == b.Visitor.UnverifiedEmail && a.Visitor.UnverifiedName == b.Visitor.UnverifiedName &&
		ida == idb && oka == okb && fuzzSameJSON(a.RawInput, b.RawInput)
}

// fuzzSameJSON compares two JSON values by meaning: json.Marshal re-escapes
// strings ("&" becomes "\u0026"), so bytes may differ. Numbers compare as
// written.
func fuzzSameJSON(a, b []byte) bool {
	decode := func(raw []byte) (any, error) {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var v any
		return v, d.Decode(&v)
	}
	va, errA := decode(a)
	vb, errB := decode(b)
	return errA == nil && errB == nil && reflect.DeepEqual(va, vb)
}

func fuzzFirstByte(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// fuzzOrderIn is the input of the fuzz lookup_order tool.
type fuzzOrderIn struct {
	OrderID    string  `json:"orderId"`
	NavigateTo *string `json:"navigateTo,omitempty"`
	Quantity   *int    `json:"quantity,omitempty" jsonschema:"minimum=1,maximum=99"`
}

// fuzzServer is a Handler with two tools that count their runs, and a
// replay store that is emptied before every input so runs are repeatable.
type fuzzServer struct {
	h      *Handler
	runs   atomic.Int64
	events atomic.Int64
	last   atomic.Pointer[Event]
	mu     sync.Mutex
	store  Store
}

func (s *fuzzServer) Claim(ctx context.Context, id, fp string, lease time.Duration) (ClaimStatus, []byte, error) {
	s.mu.Lock()
	st := s.store
	s.mu.Unlock()
	return st.Claim(ctx, id, fp, lease)
}

func (s *fuzzServer) Save(ctx context.Context, id, fp string, answer []byte, ttl time.Duration) (int, error) {
	s.mu.Lock()
	st := s.store
	s.mu.Unlock()
	return st.Save(ctx, id, fp, answer, ttl)
}

func (s *fuzzServer) Renew(ctx context.Context, id, fp string, lease time.Duration) error {
	s.mu.Lock()
	st := s.store
	s.mu.Unlock()
	return st.Renew(ctx, id, fp, lease)
}

// reset forgets every run, event and stored answer.
func (s *fuzzServer) reset() {
	s.mu.Lock()
	s.store = newMemoryStore(0, func() time.Time { return fuzzNow })
	s.mu.Unlock()
	s.runs.Store(0)
	s.events.Store(0)
	s.last.Store(nil)
}

// fuzzTools are the names the fuzz server registers.
var fuzzTools = []string{"echo", "lookup_order"}

func newFuzzServer(tb testing.TB) *fuzzServer {
	tb.Helper()
	s := &fuzzServer{}
	s.reset()
	lookup := NewTool("lookup_order", RiskLow, "Looks up an order by id.",
		func(ctx context.Context, call ToolCall[fuzzOrderIn]) (any, error) {
			s.runs.Add(1)
			if _, ok := call.Visitor.ExternalID(); !ok {
				return nil, notSignedIn("Sign in to see orders.")
			}
			switch call.Input.OrderID {
			case "panic":
				panic("fuzz tool panicked")
			case "fail":
				return nil, errors.New("the order service is down")
			case "refuse":
				return nil, Refuse("not_yours", "This order belongs to someone else.")
			}
			out := map[string]any{"orderId": call.Input.OrderID, "status": "shipped"}
			if call.Input.NavigateTo != nil {
				out["medianNavigateTo"] = *call.Input.NavigateTo
			}
			return out, nil
		})
	echo := NewTool("echo", RiskMedium, "Returns its input.",
		func(ctx context.Context, call ToolCall[map[string]any]) (map[string]any, error) {
			s.runs.Add(1)
			return call.Input, nil
		}, WithInputSchema(json.RawMessage(`{"type":"object"}`)))
	h, err := New(Config{
		Keys:         []string{fuzzOtherKey, fuzzKey},
		Tools:        []*Tool{lookup, echo},
		MaxBodyBytes: fuzzMaxBody,
		Now:          func() time.Time { return fuzzNow },
		Logger:       slog.New(slog.DiscardHandler),
		Store:        s,
		Diagnostics: func(ctx context.Context) (any, error) {
			return map[string]any{"ok": true}, nil
		},
		Observer: func(_ context.Context, ev Event) {
			s.events.Add(1)
			s.last.Store(&ev)
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	s.h = h
	return s
}

// Modes of FuzzServe, from the low bits of its mode argument.
const (
	fuzzSignRaw   = 0 // send the header as given
	fuzzSignGood  = 1 // sign the body with fuzzKey at now+skew
	fuzzSignWrong = 2 // sign with a key the server does not hold
	fuzzSignFlip  = 3 // sign correctly, then change one hex digit of v1

	fuzzMethodGiven = 0 << 2 // the method as given
	fuzzMethodPOST  = 1 << 2
	fuzzMethodGET   = 2 << 2

	fuzzViaHTTP      = 1 << 4 // through ServeHTTP instead of Serve
	fuzzStreamBody   = 1 << 5 // Body as a reader, not BodyBytes
	fuzzUnknownLen   = 1 << 6 // ContentLength -1
	fuzzSendTwice    = 1 << 7 // send the same request again (replay)
	fuzzSignModeMask = 3
	fuzzMethodMask   = 3 << 2
)

func FuzzServe(f *testing.F) {
	for i, body := range fuzzBodySeeds {
		mode := uint8(fuzzSignGood | fuzzMethodPOST)
		if i%3 == 1 {
			mode |= fuzzViaHTTP | fuzzStreamBody
		}
		if i%4 == 2 {
			mode |= fuzzSendTwice
		}
		f.Add(mode, "POST", "", []byte(body), int64(0))
	}
	good := []byte(fuzzBodySeeds[0])
	sig := mustParseKey(fuzzKey).Sign(fuzzNow, good)
	for _, seed := range []struct {
		mode   uint8
		method string
		header string
		body   []byte
		skew   int64
	}{
		{fuzzSignRaw, "POST", sig, good, 0},
		{fuzzSignRaw | fuzzViaHTTP, "POST", sig, good, 0},
		{fuzzSignRaw, "POST", "", good, 0},
		{fuzzSignRaw, "POST", "t=1,v1=zz", good, 0},
		{fuzzSignRaw, "POST", sig, append(good, ' '), 0},
		{fuzzSignRaw, "PUT", sig, good, 0},
		{fuzzSignRaw | fuzzViaHTTP, "DELETE", "", nil, 0},
		{fuzzSignRaw, "post", sig, good, 0},
		{fuzzSignRaw, "", "", nil, 0},
		{fuzzSignGood | fuzzMethodGET, "GET", "", nil, 0},
		{fuzzSignGood | fuzzMethodGET | fuzzViaHTTP, "GET", "", []byte("{}"), 0},
		{fuzzSignGood | fuzzMethodPOST, "", "", good, 300_000},
		{fuzzSignGood | fuzzMethodPOST, "", "", good, -300_000},
		{fuzzSignGood | fuzzMethodPOST, "", "", good, 300_001},
		{fuzzSignGood | fuzzMethodPOST, "", "", good, -300_001},
		{fuzzSignGood | fuzzMethodPOST, "", "", good, -1_760_000_000_000 + 1_760_000_000},
		{fuzzSignWrong | fuzzMethodPOST, "", "", good, 0},
		{fuzzSignFlip | fuzzMethodPOST | fuzzViaHTTP, "", "", good, 0},
		{fuzzSignGood | fuzzMethodPOST | fuzzStreamBody, "", "", bytes.Repeat([]byte("x"), fuzzMaxBody+1), 0},
		{fuzzSignGood | fuzzMethodPOST | fuzzStreamBody | fuzzUnknownLen, "", "", bytes.Repeat([]byte(" "), fuzzMaxBody+1), 0},
		{fuzzSignGood | fuzzMethodPOST, "", "", append(bytes.Repeat([]byte(" "), fuzzMaxBody-2), '{', '}'), 0},
		{fuzzSignRaw, "POST", "t=1760000000000,v1=" + strings.Repeat("a", 64), bytes.Repeat([]byte("x"), fuzzMaxBody+1), 0},
	} {
		f.Add(seed.mode, seed.method, seed.header, seed.body, seed.skew)
	}

	s := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, mode uint8, method, header string, body []byte, skew int64) {
		s.reset()
		switch mode & fuzzMethodMask {
		case fuzzMethodPOST:
			method = http.MethodPost
		case fuzzMethodGET:
			method = http.MethodGet
		}
		signedAt := fuzzNow.Add(time.Duration(skew%(1<<40)) * time.Millisecond)
		switch mode & fuzzSignModeMask {
		case fuzzSignGood:
			header = mustParseKey(fuzzKey).Sign(signedAt, body)
		case fuzzSignWrong:
			header = mustParseKey("fuzz-unknown-key-00000000000000000000000").Sign(signedAt, body)
		case fuzzSignFlip:
			h := []byte(mustParseKey(fuzzKey).Sign(signedAt, body))
			i := len(h) - 1 - int(uint64(skew)%64)
			h[i] = "01"[fuzzBoolInt(h[i] == '0')]
			header = string(h)
		}

		want := fuzzExpect(method, header, body)
		for round := 0; round < 1+fuzzBoolInt(mode&fuzzSendTwice != 0); round++ {
			resp := fuzzDo(t, s, mode, method, header, body)
			fuzzCheckAnswer(t, s, want, resp, round)
		}
	})
}

// fuzzExpectation is what the contract allows for one request.
type fuzzExpectation struct {
	status int    // the one allowed status, or 0 when several are
	code   Code   // the one allowed code, or "" when several are
	signed bool   // the signature is valid and fresh: the body may reach a tool
	mac    string // the correct MAC hex for this request, never to be echoed
	get    bool   // a signed GET: the answer is the manifest
}

// fuzzExpect is the oracle: PROTOCOL.md §5 applied with the reference parser.
func fuzzExpect(method, header string, body []byte) fuzzExpectation {
	ref := fuzzParseRef(header)
	var e fuzzExpectation
	if !ref.missing && !ref.malformed {
		e.mac = hex.EncodeToString(fuzzMAC(ref.ts, body))
	}
	switch {
	case method != http.MethodGet && method != http.MethodPost:
		e.status, e.code = http.StatusMethodNotAllowed, CodeMethodNotAllowed
	case ref.missing:
		e.status, e.code = http.StatusUnauthorized, CodeMissingSignature
	case ref.malformed:
		e.status, e.code = http.StatusUnauthorized, CodeMalformedSignature
	case !ref.fresh(fuzzNow, defaultTolerance):
		e.status, e.code = http.StatusUnauthorized, CodeStaleTimestamp
	case len(body) > fuzzMaxBody:
		e.status, e.code = http.StatusRequestEntityTooLarge, CodeInvalidBody
	case !ref.matches(body):
		e.status, e.code = http.StatusUnauthorized, CodeInvalidSignature
	case method == http.MethodGet:
		e.status, e.signed, e.get = http.StatusOK, true, true
	default:
		e.signed = true
	}
	return e
}

// fuzzAnswer is one answer as the client sees it.
type fuzzAnswer struct {
	status      int
	body        []byte
	contentType string // "" when called through Serve
	allow       string
	code        Code
}

// fuzzDo sends one request through Serve or ServeHTTP.
func fuzzDo(t *testing.T, s *fuzzServer, mode uint8, method, header string, body []byte) fuzzAnswer {
	t.Helper()
	length := int64(len(body))
	if mode&fuzzUnknownLen != 0 {
		length = -1
	}
	if mode&fuzzViaHTTP != 0 {
		r := &http.Request{Method: method, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: length}
		if header != "" {
			r.Header.Set(signatureHeader, header)
		}
		w := httptest.NewRecorder()
		s.h.ServeHTTP(w, r)
		return fuzzAnswer{status: w.Code, body: w.Body.Bytes(), contentType: w.Header().Get("Content-Type"), allow: w.Header().Get("Allow"), code: "?"}
	}
	req := Request{Method: method, Signature: header, BodyBytes: body, ContentLength: length}
	if mode&fuzzStreamBody != 0 {
		req.Body = bytes.NewReader(body)
	}
	resp := s.h.Serve(context.Background(), req)
	return fuzzAnswer{status: resp.Status, body: resp.Body, contentType: "application/json", allow: resp.Allow, code: resp.code}
}

// fuzzCheckAnswer checks one answer against the oracle and the envelope.
func fuzzCheckAnswer(t *testing.T, s *fuzzServer, want fuzzExpectation, a fuzzAnswer, round int) {
	t.Helper()
	if a.contentType != "application/json" {
		t.Fatalf("Content-Type %q, want %q", a.contentType, "application/json")
	}
	if a.status >= 500 {
		t.Fatalf("status %d with a usable key: %s", a.status, a.body)
	}
	if want.mac != "" && bytes.Contains(bytes.ToLower(a.body), []byte(want.mac)) {
		t.Fatalf("the answer contains the computed MAC: %s", a.body)
	}
	if bytes.Contains(a.body, []byte(fuzzKey)) || bytes.Contains(a.body, []byte(hex.EncodeToString(fuzzSecret))) {
		t.Fatalf("the answer contains the key or its secret: %s", a.body)
	}
	if !want.signed && s.runs.Load() != 0 {
		t.Fatalf("a request that is not validly signed (want %d %s) ran a tool %d times", want.status, want.code, s.runs.Load())
	}
	if s.runs.Load() > 1 {
		t.Fatalf("one call ran its tool %d times", s.runs.Load())
	}
	if want.status != 0 && a.status != want.status {
		t.Fatalf("status %d (%s), want %d %s", a.status, a.body, want.status, want.code)
	}
	if (a.status == http.StatusMethodNotAllowed) != (a.allow == "GET, POST") {
		t.Fatalf("status %d with Allow %q", a.status, a.allow)
	}
	if ev := s.last.Load(); ev == nil || ev.Status != a.status || s.events.Load() != int64(round+1) {
		t.Fatalf("observer saw %d events (last %+v) for %d answers with status %d", s.events.Load(), ev, round+1, a.status)
	}

	if want.get {
		var m struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(a.body, &m); err != nil || len(m.Tools) != len(fuzzTools) {
			t.Fatalf("signed GET answered %s, want the manifest of %v", a.body, fuzzTools)
		}
		return
	}

	code, isResult := fuzzEnvelope(t, a.body)
	if a.code != "?" && a.code != code {
		t.Fatalf("Response.Code() = %q, body carries %q", a.code, code)
	}
	if want.code != "" && code != want.code {
		t.Fatalf("code %q (%s), want %q", code, a.body, want.code)
	}
	switch {
	case isResult && a.status != http.StatusOK:
		t.Fatalf("a result with status %d", a.status)
	case !isResult && code == CodeInvalidBody:
		if !slices.Contains([]int{http.StatusBadRequest, http.StatusConflict, http.StatusRequestEntityTooLarge}, a.status) {
			t.Fatalf("invalid_body with status %d", a.status)
		}
	case !isResult && a.status != code.status():
		t.Fatalf("code %s with status %d, want %d", code, a.status, code.status())
	}
	if want.signed {
		if a.status == http.StatusUnauthorized || a.status == http.StatusMethodNotAllowed {
			t.Fatalf("a validly signed POST answered %d: %s", a.status, a.body)
		}
		if s.runs.Load() == 1 && a.status != http.StatusOK {
			t.Fatalf("the tool ran but the answer is %d: %s", a.status, a.body)
		}
		if code == CodeUnknownTool || code == CodeInvalidInput || code == CodeUnknownOp {
			if s.runs.Load() != 0 {
				t.Fatalf("%s answered after the tool ran", code)
			}
		}
	}
}

// fuzzEnvelope checks that body is exactly {"result": any} or
// {"error": {"code", "message"}} with a contract code, and returns the code.
func fuzzEnvelope(t *testing.T, body []byte) (Code, bool) {
	t.Helper()
	if !utf8.Valid(body) || !json.Valid(body) {
		t.Fatalf("answer is not valid UTF-8 JSON: %q", body)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || len(top) != 1 {
		t.Fatalf("answer %s is not an object with exactly one field", body)
	}
	if _, ok := top["result"]; ok {
		return "", true
	}
	raw, ok := top["error"]
	if !ok {
		t.Fatalf("answer %s has neither result nor error", body)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || len(fields) != 2 {
		t.Fatalf("error %s is not {code, message}", raw)
	}
	var e struct {
		Code    Code   `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(raw, &e); err != nil || e.Message == "" || !slices.Contains(allCodes, e.Code) {
		t.Fatalf("error %s: want a contract code and a message", raw)
	}
	return e.Code, false
}

func fuzzBoolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// FuzzDecodeUsual holds the tool call read off the tokens to the one
// decoded through wireBody: whatever decodeUsual takes, decodeAny takes
// too, with the same fields.
func FuzzDecodeUsual(f *testing.F) {
	for _, s := range fuzzBodySeeds {
		f.Add([]byte(s))
	}
	for _, s := range usualBodies {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkUsualAgrees(t, body) })
}
