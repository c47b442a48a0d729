package conformance

import (
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strings"
)

// Beyond what each case checks, every answer is searched for the MAC the
// server computed for its request (the suite knows the key): answers never
// carry computed MACs (docs/PROTOCOL.md §7). sendWith notes such an answer,
// runCase takes it and fails the case.

// noteLeak records x when its answer carries the MAC the server computed
// for its request: runCase then fails the case, whatever it checked.
func (s *session) noteLeak(x *roundTrip) {
	s.leakMu.Lock()
	defer s.leakMu.Unlock()
	if s.leak == nil {
		s.leak = x
	}
}

// takeLeak returns and clears the round trip noteLeak recorded.
func (s *session) takeLeak() *roundTrip {
	s.leakMu.Lock()
	defer s.leakMu.Unlock()
	x := s.leak
	s.leak = nil
	return x
}

// carriesMAC reports whether the answer of x (its body or a header value)
// shows mac, the MAC the server computed for x's request, in hex of either
// case or in base64. §7: answers never carry computed MACs.
func carriesMAC(x *roundTrip, mac string) bool {
	if mac == "" || x.err != nil {
		return false
	}
	raw, err := hex.DecodeString(mac)
	if err != nil {
		return false
	}
	forms := []string{mac, base64.StdEncoding.EncodeToString(raw), base64.RawURLEncoding.EncodeToString(raw)}
	shows := func(s string) bool {
		if strings.Contains(strings.ToLower(s), forms[0]) {
			return true
		}
		return strings.Contains(s, forms[1]) || strings.Contains(s, forms[2])
	}
	if shows(string(x.resp)) {
		return true
	}
	for name, values := range x.header {
		if http.CanonicalHeaderKey(name) == "Date" {
			continue
		}
		for _, v := range values {
			if shows(v) {
				return true
			}
		}
	}
	return false
}
