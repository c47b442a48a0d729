package conformance

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/median-go/median/protocol"
)

// signer signs requests with one Median key, parsed once. The key of a
// signer that could not parse it is unusable: its signatures cannot verify,
// which is what a case signing with such a key wants to send anyway.
type signer struct {
	key protocol.Key
	ok  bool
}

// newSigner parses key.
func newSigner(key string) signer {
	k, err := protocol.ParseKey(key)
	return signer{key: k, ok: err == nil}
}

// sign returns the median-signature header for body sent at at.
func (g signer) sign(at time.Time, body []byte) string {
	if !g.ok {
		return fmt.Sprintf("t=%d,v1=%064x", at.UnixMilli(), 0)
	}
	return g.key.Sign(at, body)
}

// serverMAC returns, in lowercase hex, the MAC a server running with the
// signer's key computes for a request carrying header and body: HMAC-SHA256
// over "<t as sent>.<body>" (§1.1). It returns "" when header has no single
// base-10 t (the server computes nothing then) or the key is unusable.
func (g signer) serverMAC(header string, body []byte) string {
	if !g.ok || header == "" {
		return ""
	}
	var ts string
	n := 0
	for part := range strings.SplitSeq(header, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "t="); ok {
			ts, n = v, n+1
		}
	}
	ms, err := strconv.ParseInt(ts, 10, 64)
	if n != 1 || err != nil || strconv.FormatInt(ms, 10) != ts {
		return ""
	}
	_, v1, _ := strings.Cut(g.key.Sign(time.UnixMilli(ms), body), ",v1=")
	return v1
}

// sign returns the signature header for body at time at, under the target's key.
func (s *session) sign(at time.Time, body []byte) string {
	return s.signer.sign(at, body)
}

// signWith signs with key; an unusable key yields a header that cannot
// verify, which is what a case signing with it wants to send anyway.
func signWith(key string, at time.Time, body []byte) string {
	return newSigner(key).sign(at, body)
}
