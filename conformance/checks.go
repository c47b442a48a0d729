package conformance

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Every request of the suite proves it is a check's, so that the
// endpoint's diagnostics report counts it in its checks section and the
// deployment's readings show nothing of the suite's deliberately unsigned,
// stale and badly signed probes (docs/PROTOCOL.md §10, "Checks are not
// traffic"). A request the suite signs with Target.Key and a fresh t
// carries its mark (protocol.Key.CheckMark) in the median-check header;
// every answer to such a request gives a check token
// (median-check-token), which every later request carries instead, the
// probes included. Before its first probe, a session without a token asks
// for one with a marked GET of the manifest.

// tokenFresh is how long the suite uses a token after it came: the
// endpoint's last five minutes by its own clock, less a margin for time
// in flight and for the answer that gave it.
const tokenFresh = 4 * time.Minute

// checkTokens is a session's check token.
type checkTokens struct {
	mu    sync.Mutex
	token string
	got   time.Time // when it came, on this machine's monotonic clock

	ask   sync.Mutex // one request for a token at a time
	asked time.Time  // the last request for a token that got none
}

// fresh returns the token while it is fresh, "" otherwise.
func (c *checkTokens) fresh() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token == "" || time.Since(c.got) >= tokenFresh {
		return ""
	}
	return c.token
}

// keep takes the token an answer gave, if any.
func (c *checkTokens) keep(h http.Header) {
	if v := h.Get(checkTokenHeader); v != "" {
		c.mu.Lock()
		c.token, c.got = v, time.Now()
		c.mu.Unlock()
	}
}

// checkHeader returns the median-check header of x: the token while it is
// fresh; otherwise x's mark when x is signed with Target.Key at a fresh t;
// otherwise, for a probe, a token asked for first ("" when the endpoint
// gives none).
func (s *session) checkHeader(x *roundTrip) string {
	if tok := s.checks.fresh(); tok != "" {
		return tok
	}
	if at, ok := s.ownSignature(x); ok {
		return s.signer.key.CheckMark(at)
	}
	return s.askToken()
}

// ownSignature returns the t of x's signature when it is the session's
// own, as Target.Key signs x's body, and fresh enough that the endpoint
// verifies it (and so reads its mark).
func (s *session) ownSignature(x *roundTrip) (time.Time, bool) {
	if !s.signer.ok || x.signature == "" {
		return time.Time{}, false
	}
	ts, _, _ := strings.Cut(strings.TrimPrefix(x.signature, "t="), ",")
	ms, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	at := time.UnixMilli(ms)
	if s.now().Sub(at).Abs() > window-time.Minute || x.signature != s.signer.sign(at, x.body) {
		return time.Time{}, false
	}
	return at, true
}

// askToken asks the endpoint for a token with a marked, signed GET of the
// manifest, unless a request in the last minute got none, and returns it
// ("" when none came).
func (s *session) askToken() string {
	c := &s.checks
	c.ask.Lock()
	defer c.ask.Unlock()
	if tok := c.fresh(); tok != "" {
		return tok // another probe asked meanwhile
	}
	if !s.signer.ok || !c.asked.IsZero() && time.Since(c.asked) < time.Minute {
		return ""
	}
	s.get() // marked: no token is fresh, and its signature is the session's own
	tok := c.fresh()
	if tok == "" {
		c.asked = time.Now()
	}
	return tok
}
