package conformance

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/median-go/median/protocol"
)

// methodCases check §1: every method but GET and POST is refused 405.
func methodCases() []testCase {
	var out []testCase
	for _, m := range []string{http.MethodPut, http.MethodDelete, http.MethodPatch} {
		out = append(out, c("methods/"+strings.ToLower(m), "§1", m+" is refused 405 method_not_allowed with Allow: GET, POST, before any signature check", false,
			func(s *session) finding {
				x := s.send(&roundTrip{method: m, body: []byte(`{}`)})
				o := expectError(x, http.StatusMethodNotAllowed, protocol.CodeMethodNotAllowed)
				if o.status != statusPass {
					return o
				}
				if !sameMethods(x.header.Values("Allow"), []string{"GET", "POST"}) {
					return fail(x, "Allow: GET, POST", "the Allow header is %q", strings.Join(x.header.Values("Allow"), ", "))
				}
				return o
			}))
	}
	return out
}

// sameMethods compares Allow header values as a set of methods.
func sameMethods(values, want []string) bool {
	got := map[string]bool{}
	for _, v := range values {
		for m := range strings.SplitSeq(v, ",") {
			got[strings.ToUpper(strings.TrimSpace(m))] = true
		}
	}
	if len(got) != len(want) {
		return false
	}
	for _, m := range want {
		if !got[m] {
			return false
		}
	}
	return true
}

// wrongKey is a usable key no endpoint should run with.
const wrongKey = "mediancheck-wrong-key-0123456789abcdef0123456789"

// signatureCases check §1.1: the header's presence, form and HMAC.
func signatureCases() []testCase {
	// signed returns a valid probe body and its header, for cases to alter.
	signed := func(s *session) ([]byte, string, time.Time) {
		body := probe().bytes()
		at := s.now()
		return body, s.sign(at, body), at
	}
	hexOf := func(sig string) string { // the v1 of a header built by Sign
		_, v1, _ := strings.Cut(sig, ",v1=")
		return v1
	}
	malformed := func(id, title string, header func(ms int64, v1 string) string) testCase {
		return c("signature/malformed-"+id, "§1.1", "a header "+title+" is refused 401 malformed_signature", false,
			func(s *session) finding {
				body, sig, at := signed(s)
				x := s.send(&roundTrip{method: http.MethodPost, body: body, signature: header(at.UnixMilli(), hexOf(sig)), sendSig: true})
				return expectError(x, http.StatusUnauthorized, protocol.CodeMalformedSignature)
			})
	}
	return []testCase{
		c("signature/valid", "§1.1", "a correctly signed POST is accepted (control for the cases below)", false,
			func(s *session) finding {
				return expectAccepted(s.post(probe().bytes()), "signed with Target.Key")
			}),
		c("signature/missing", "§1.1", "a POST without the median-signature header is refused 401 missing_signature", false,
			func(s *session) finding {
				x := s.send(&roundTrip{method: http.MethodPost, body: probe().bytes()})
				return expectError(x, http.StatusUnauthorized, protocol.CodeMissingSignature)
			}),
		c("signature/empty", "§1.1", "an empty median-signature header is refused 401 missing_signature", false,
			func(s *session) finding {
				x := s.send(&roundTrip{method: http.MethodPost, body: probe().bytes(), sendSig: true})
				return expectError(x, http.StatusUnauthorized, protocol.CodeMissingSignature)
			}),
		malformed("garbage", "that is not name=value entries", func(int64, string) string { return "not a signature" }),
		malformed("no-t", "with no t entry", func(_ int64, v1 string) string { return "v1=" + v1 }),
		malformed("two-t", "with two t entries", func(ms int64, v1 string) string { return fmt.Sprintf("t=%d,t=%d,v1=%s", ms, ms, v1) }),
		malformed("t-not-integer", "whose t is not a base-10 integer", func(ms int64, v1 string) string { return fmt.Sprintf("t=%d.5,v1=%s", ms, v1) }),
		malformed("no-v1", "with no v1 entry", func(ms int64, _ string) string { return fmt.Sprintf("t=%d", ms) }),
		malformed("only-other-scheme", "whose only signature is a v0 entry", func(ms int64, v1 string) string { return fmt.Sprintf("t=%d,v0=%s", ms, v1) }),
		malformed("v1-short", "whose v1 has 63 hex digits", func(ms int64, v1 string) string { return fmt.Sprintf("t=%d,v1=%s", ms, v1[:63]) }),
		malformed("v1-not-hex", "whose v1 has 64 characters that are not all hex", func(ms int64, v1 string) string { return fmt.Sprintf("t=%d,v1=%s", ms, "zz"+v1[2:]) }),
		c("signature/wrong-key", "§1.1", "a request signed with another key is refused 401 invalid_signature", false,
			func(s *session) finding {
				body := probe().bytes()
				x := s.send(&roundTrip{method: http.MethodPost, body: body, signature: signWith(wrongKey, s.now(), body)})
				return expectError(x, http.StatusUnauthorized, protocol.CodeInvalidSignature)
			}),
		c("signature/tampered-body", "§1.1", "a body changed after signing is refused 401 invalid_signature", false,
			func(s *session) finding {
				body, sig, _ := signed(s)
				tampered := []byte(strings.Replace(string(body), `"low"`, `"high"`, 1))
				x := s.send(&roundTrip{method: http.MethodPost, body: tampered, signature: sig})
				return expectError(x, http.StatusUnauthorized, protocol.CodeInvalidSignature)
			}),
		c("signature/reencoded-body", "§1.1", "the same JSON re-encoded (indented) after signing is refused 401 invalid_signature: the HMAC is over the raw bytes", false,
			func(s *session) finding {
				body, sig, _ := signed(s)
				x := s.send(&roundTrip{method: http.MethodPost, body: indentJSON(body), signature: sig})
				return expectError(x, http.StatusUnauthorized, protocol.CodeInvalidSignature)
			}),
		c("signature/timestamp-changed", "§1.1", "a header whose t was changed after signing is refused 401 invalid_signature: t is part of the signed bytes", false,
			func(s *session) finding {
				body, sig, at := signed(s)
				x := s.send(&roundTrip{method: http.MethodPost, body: body, signature: fmt.Sprintf("t=%d,v1=%s", at.UnixMilli()-1000, hexOf(sig))})
				return expectError(x, http.StatusUnauthorized, protocol.CodeInvalidSignature)
			}),
		c("signature/no-mac-in-answer", "§1.1, §7", "an invalid_signature answer keeps the MAC the server computed to itself: it is not in the answer, in hex of either case or base64 (nor in any other case's answer)", false,
			func(s *session) finding {
				if !s.signer.ok {
					return fail(nil, "a usable Target.Key", "Target.Key is not usable, so the suite cannot compute the MAC the server computes")
				}
				body, sig, at := signed(s)
				tampered := []byte(strings.Replace(string(body), `"low"`, `"medium"`, 1))
				var last *roundTrip
				for _, x := range []*roundTrip{
					{method: http.MethodPost, body: body, signature: signWith(wrongKey, at, body)},
					{method: http.MethodPost, body: tampered, signature: sig},
					{method: http.MethodPost, body: body, signature: fmt.Sprintf("t=%d,v1=%s", at.UnixMilli()-1000, hexOf(sig))},
				} {
					last = s.send(x)
					if x.err != nil {
						return fail(x, "an answer", "the request got no answer")
					}
					if carriesMAC(x, x.mac) {
						return leaked(x)
					}
				}
				return pass(last)
			}),
		c("signature/several-v1", "§1.1", "a header with several v1 entries (a key rotation), one of them valid, is accepted", false,
			func(s *session) finding {
				body, sig, at := signed(s)
				other := hexOf(signWith(wrongKey, at, body))
				h := fmt.Sprintf("t=%d,v1=%s,v1=%s", at.UnixMilli(), other, hexOf(sig))
				return expectAccepted(s.send(&roundTrip{method: http.MethodPost, body: body, signature: h}), "one of two v1 entries is valid")
			}),
		c("signature/repeated-header", "§1.1", "a header sent as two lines, t=… and v1=… (a proxy that splits it on commas), is joined with \",\" and accepted", false,
			func(s *session) finding {
				body, sig, _ := signed(s)
				x := &roundTrip{method: http.MethodPost, body: body, signature: sig, lines: strings.Split(sig, ",")}
				return splitHeaderLost(expectAccepted(s.send(x), "the signature's entries on header lines of their own"))
			}),
		c("signature/repeated-header-two-t", "§1.1", "a header sent as two lines that are each a whole signature is read joined, with two t entries, and refused 401 malformed_signature (a server that reads only the first line accepts it)", false,
			func(s *session) finding {
				body, sig, _ := signed(s)
				x := s.send(&roundTrip{method: http.MethodPost, body: body, signature: sig + "," + sig, lines: []string{sig, sig}})
				return splitHeaderLost(expectError(x, http.StatusUnauthorized, protocol.CodeMalformedSignature))
			}),
		c("signature/uppercase-hex", "§1.1", "a v1 in uppercase hex is accepted", false,
			func(s *session) finding {
				body, sig, at := signed(s)
				h := fmt.Sprintf("t=%d,v1=%s", at.UnixMilli(), strings.ToUpper(hexOf(sig)))
				return expectAccepted(s.send(&roundTrip{method: http.MethodPost, body: body, signature: h}), "v1 in uppercase hex")
			}),
		c("signature/spaces-after-commas", "§1.1", "optional spaces after the commas of the header are tolerated", false,
			func(s *session) finding {
				body, sig, _ := signed(s)
				return expectAccepted(s.send(&roundTrip{method: http.MethodPost, body: body, signature: strings.ReplaceAll(sig, ",", ", ")}), "spaces after commas")
			}),
		c("signature/other-schemes-ignored", "§1.1", "entries with other scheme names (v0, v2) beside a valid v1 are ignored", false,
			func(s *session) finding {
				body, sig, _ := signed(s)
				h := sig + ",v0=abc,v2=" + strings.Repeat("0", 64)
				return expectAccepted(s.send(&roundTrip{method: http.MethodPost, body: body, signature: h}), "v0 and v2 entries beside a valid v1")
			}),
	}
}

// splitHeaderLost adds to a failed repeated-header case what usually
// causes it: a layer that passes on one line of a header sent several
// times, not all of them joined.
func splitHeaderLost(o finding) finding {
	if o.status == statusFail {
		o.message += ". Likely cause: a layer between the client and the Handler passed on only one line of the repeated median-signature header (an ALB target group without multi-value headers passes the last; a mount that reads the header with Get, the first); every line must reach the Handler joined with \",\" (PROTOCOL.md §1.1): see " + link("lambda") + " and " + link("what-any-mount-must-do")
	}
	return o
}

// timestampCases check the 5-minute window of §1.1, in both directions.
func timestampCases() []testCase {
	at := func(s *session, offset time.Duration) *roundTrip {
		body := probe().bytes()
		return s.send(&roundTrip{method: http.MethodPost, body: body, signature: s.sign(s.now().Add(offset), body)})
	}
	return []testCase{
		c("timestamp/past", "§1.1", "a timestamp more than 5 minutes in the past is refused 401 stale_timestamp", false,
			func(s *session) finding {
				return expectError(at(s, -(window+s.t.ClockSkew)), http.StatusUnauthorized, protocol.CodeStaleTimestamp)
			}),
		c("timestamp/future", "§1.1", "a timestamp more than 5 minutes in the future is refused 401 stale_timestamp", false,
			func(s *session) finding {
				return stale(at(s, window+s.t.ClockSkew), fmt.Sprintf("t was %s in the future", window+s.t.ClockSkew))
			}),
		c("timestamp/seconds", "§1.1", "a timestamp in seconds instead of milliseconds is refused 401 stale_timestamp", false,
			func(s *session) finding {
				body := probe().bytes()
				secs := s.now().Truncate(time.Second)
				sig := signWith(s.t.Key, time.UnixMilli(secs.Unix()), body)
				return stale(s.send(&roundTrip{method: http.MethodPost, body: body, signature: sig}), "t was in seconds, i.e. in January 1970 as milliseconds")
			}),
		c("timestamp/edge-past", "§1.1", "a timestamp just inside the window in the past (5 minutes minus Target.ClockSkew) is accepted", false,
			func(s *session) finding {
				return expectAccepted(at(s, -(window-s.t.ClockSkew)), fmt.Sprintf("t is %s old, %s inside the window, a margin for clock skew", window-s.t.ClockSkew, s.t.ClockSkew))
			}),
		c("timestamp/edge-future", "§1.1", "a timestamp just inside the window in the future (5 minutes minus Target.ClockSkew) is accepted", false,
			func(s *session) finding {
				return expectAccepted(at(s, window-s.t.ClockSkew), fmt.Sprintf("t is %s ahead, %s inside the window, a margin for clock skew", window-s.t.ClockSkew, s.t.ClockSkew))
			}),
	}
}

// stale expects 401 stale_timestamp and says when t was.
func stale(x *roundTrip, when string) finding {
	o := expectError(x, http.StatusUnauthorized, protocol.CodeStaleTimestamp)
	if o.status == statusFail {
		o.message = when + ": " + o.message
	}
	return o
}

// keyCases check §1.2: an endpoint without a usable key answers 500, or is
// refused when it is built.
func keyCases() []testCase {
	notHere := func(s *session) string {
		if s.t.BuildWithKey == nil && s.t.Deployed {
			return "the endpoint is deployed: the suite cannot build it with another key; check docs/PROTOCOL.md §1.2 in your app's tests with Target.BuildWithKey"
		}
		return ""
	}
	return []testCase{
		c("key/missing", "§1.2", "an endpoint built with no key is refused when built (an error naming missing_secret) or answers every request 500 missing_secret (never fail-open)", false,
			withKey("", protocol.CodeMissingSecret)).unless(notHere),
		c("key/too-short", "§1.2", "an endpoint built with a key shorter than 32 characters is refused when built (invalid_median_key) or answers 500 invalid_median_key", false,
			withKey("short-median-key", protocol.CodeInvalidMedianKey)).unless(notHere),
		c("key/not-visible-ascii", "§1.2", "an endpoint built with a key containing a space or non-ASCII character is refused when built (invalid_median_key) or answers 500 invalid_median_key", false,
			withKey("a median key with spaces inside it é 0123456789", protocol.CodeInvalidMedianKey)).unless(notHere),
	}
}

// withKey is a key case: build the endpoint with key and expect code.
func withKey(key string, code protocol.Code) func(s *session) finding {
	return func(s *session) finding {
		want := fmt.Sprintf("Target.BuildWithKey(%q) returns an error naming %s, or an endpoint that answers 500 %s", key, code, code)
		if s.t.BuildWithKey == nil {
			return skip("needs Target.BuildWithKey, a function that builds your endpoint with a given key (conformance.HandlerBuilder(NewRouter) fits a constructor NewRouter(key) (http.Handler, error))")
		}
		do, err := buildApart(s.t.BuildWithKey, key)
		named := err != nil && namesCode(err, code)
		switch {
		case err != nil && !named && do == nil:
			other := protocol.CodeMissingSecret
			if code == other {
				other = protocol.CodeInvalidMedianKey
			}
			if namesCode(err, other) {
				return fail(nil, want, "Target.BuildWithKey(%q) reported %s, but this key is %s: %v", key, other, code, err)
			}
			return fail(nil, want, "Target.BuildWithKey(%q) returned an error that does not name the key problem (its text has no %q): %v", key, code, err)
		case do == nil && named:
			return pass(nil) // refused when built, as §1.2 allows
		case do == nil:
			return fail(nil, want, "Target.BuildWithKey(%q) returned no request function and no error: the endpoint was built with an unusable key without a word", key)
		}
		body := probe().bytes()
		x := s.sendWith(do, &roundTrip{method: http.MethodPost, body: body, signature: s.sign(s.now(), body)})
		o := expectError(x, http.StatusInternalServerError, code)
		if o.status == statusFail && named {
			o.message = "the constructor reported " + string(code) + ", but the endpoint it returned anyway does not refuse: " + o.message
		}
		if o.status == statusFail {
			o.message += fmt.Sprintf(" (the request went to Target.URL, %s, through the request function BuildWithKey returned: that URL must be the endpoint's mount path in the app it builds)", s.t.URL)
		}
		return o
	}
}

// keyEnv are the environment variables an app reads its Median keys from
// when its code gives none (docs/PROTOCOL.md §1.2): MEDIAN_KEY and the
// others the core reads (protocol.Config.Keys).
var keyEnv = []string{"MEDIAN_KEY", "MEDIAN_KEY_PREVIOUS", "MEDIAN_KEY_FILE", "MEDIAN_KEY_PREVIOUS_FILE"}

// envMu serializes the builds that unset keyEnv.
var envMu sync.Mutex

// buildApart calls build with keyEnv unset, so that a constructor which
// falls back to the environment when given no key, as production code
// should, builds with the key the case gives it and not with the one
// exported in the shell that runs the tests; the variables are set back
// when it returns.
func buildApart(build func(string) (func(*http.Request) (*http.Response, error), error), key string) (func(*http.Request) (*http.Response, error), error) {
	envMu.Lock()
	defer envMu.Unlock()
	for _, name := range keyEnv {
		if v, ok := os.LookupEnv(name); ok {
			_ = os.Unsetenv(name)
			defer os.Setenv(name, v)
		}
	}
	return buildSafely(build, key)
}

// buildSafely calls build, turning a panic into an error that names no code.
func buildSafely(build func(string) (func(*http.Request) (*http.Response, error), error), key string) (do func(*http.Request) (*http.Response, error), err error) {
	defer func() {
		if p := recover(); p != nil {
			do, err = nil, fmt.Errorf("Target.BuildWithKey panicked (return an error instead): %v", p)
		}
	}()
	return build(key)
}

// namesCode reports whether err identifies the contract code: its text
// contains the code, or errors.Is matches it. The second test applies once
// protocol.Code implements error (the core's errors then match their code
// with errors.Is); until then a Code is not an error and only the text
// counts.
func namesCode(err error, code protocol.Code) bool {
	if target, ok := any(code).(error); ok && errors.Is(err, target) {
		return true
	}
	return strings.Contains(err.Error(), string(code))
}
