package inspector

import (
	"crypto/subtle"
	"net"
	"net/http"
	"strings"
)

// After the first visit, tokenHeader carries the run's token (the page's
// script sends it with every API call) and tokenCookie the asset token.
const (
	tokenCookie = "median_inspector"
	tokenHeader = "X-Inspector-Token"
)

// guard refuses, before anything else runs, a request with a foreign Host
// or Origin (403) or without its token (401): the page at / needs the
// run's token in the query, the API in the header, and the assets the
// asset token in the cookie, which opens nothing else.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			refuse(w, http.StatusForbidden, "the Host header must be a loopback address (127.0.0.1, ::1 or localhost)")
			return
		}
		if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host {
			refuse(w, http.StatusForbidden, "requests from another origin are refused")
			return
		}
		if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
			refuse(w, http.StatusForbidden, "cross-site requests are refused")
			return
		}
		given, want := "", s.token
		switch {
		case r.URL.Path == "/":
			given = r.URL.Query().Get("token")
		case strings.HasPrefix(r.URL.Path, "/api/"):
			given = r.Header.Get(tokenHeader)
		default:
			want = s.assetToken
			if c, err := r.Cookie(tokenCookie); err == nil {
				given = c.Value
			}
		}
		if subtle.ConstantTimeCompare([]byte(given), []byte(want)) != 1 {
			refuse(w, http.StatusUnauthorized, "missing or wrong token: open the URL mediancheck inspect printed")
			return
		}
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'none'; base-uri 'none'")
		next.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether a Host header names a loopback address.
func loopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	return isLoopback(strings.Trim(host, "[]"))
}

// refuse writes a plain-text refusal.
func refuse(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write([]byte("mediancheck inspect: " + msg + "\n"))
}
