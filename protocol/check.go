package protocol

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// This file tells a check's requests from Median's (PROTOCOL.md §10,
// "Checks are not traffic"): the conformance suite, mediancheck, the
// inspector or an operator's own probe send requests whose refusals and
// calls must not read as the deployment's. A request is a check's only
// when it proves it with the key:
//
//   - a signed request that verified carries, in its Median-Check header,
//     its mark: the HMAC-SHA256 under the key it verified under of
//     "median-check.<t as sent>", in hex ([Key.CheckMark]). The mark is
//     bound to the request's signed t, so a request of Median's cannot be
//     marked by whoever copies it, and a copied mark lasts only as long
//     as its request's t is fresh;
//   - any other request (a check's deliberately unsigned, stale or badly
//     signed probe) carries a check token, "<expiry ms>.<hex HMAC-SHA256
//     of "median-check-token.<expiry ms>">", which the answer to a marked
//     request gave in its Median-Check-Token header. A token is good
//     until its expiry, at most checkTokenLifetime after it was given, and
//     under any key in force.
//
// Both MACs are over strings that begin with a letter, where a request's
// signed string begins with its t, so neither is ever a request's
// signature, and a signature is never a mark or a token. Everything else
// (no header, a bad mark, a forged or expired token) is not a check: the
// request counts as what it is. A request without the header costs one
// header lookup and no allocation; one with it, an HMAC more per key
// tried and, for a check's signed request, the token given back.

// checkTokenLifetime is how long a check token is good: as long as a
// signed request stays fresh (§1.1), so a check that keeps sending signed
// requests keeps a good token, and a token taken from a check's traffic
// hides nothing for longer than its signed request could be replayed.
const checkTokenLifetime = defaultTolerance

// Domains of the check MACs; "<domain>.<value>" is what each MAC covers.
const (
	checkMarkDomain  = "median-check"
	checkTokenDomain = "median-check-token"
)

// CheckMark returns the value of the Median-Check header that marks a
// request signed at t (with [Key.Sign] and the same t) as a check's
// rather than Median's: the hex HMAC-SHA256, under the key's signing
// secret, of "median-check.<t in ms>". The diagnostics report counts a
// marked request in its checks section, apart from the deployment's
// readings (PROTOCOL.md §10), and its answer carries a check token in the
// Median-Check-Token header, which the check's unsigned or stale probes
// then send in their Median-Check header. Use it in a probe, monitor or
// test that calls a Median endpoint, so that its requests do not read as
// Median's; Median never sends the header. The zero Key returns "".
func (k Key) CheckMark(t time.Time) string {
	if k.st == nil {
		return ""
	}
	var sum [sha256.Size]byte
	k.mac(checkMarkDomain, []byte(strconv.FormatInt(t.UnixMilli(), 10)), &sum)
	return hex.EncodeToString(sum[:])
}

// markMatches reports whether mark is the check mark of a request signed
// with t as sent (ts), under k.
func (k Key) markMatches(ts, mark string) bool {
	var want [sha256.Size]byte
	if !decodeHex32(&want, mark) {
		return false
	}
	var sum [sha256.Size]byte
	k.checkMAC(checkMarkDomain, ts, &sum)
	return hmac.Equal(sum[:], want[:])
}

// checkMAC puts the HMAC-SHA256 of "<domain>.<value>" under k in sum, as
// mac computes a signature's. It costs one small allocation, a copy of
// value (mac's body may reach crypto/hmac in FIPS 140-3 mode), and runs
// only for requests that carry the Median-Check header.
func (k Key) checkMAC(domain, value string, sum *[sha256.Size]byte) {
	k.mac(domain, []byte(value), sum)
}

// checkToken returns a check token good until now plus
// checkTokenLifetime, under k.
func (k Key) checkToken(now time.Time) string {
	exp := strconv.FormatInt(now.Add(checkTokenLifetime).UnixMilli(), 10)
	var sum [sha256.Size]byte
	k.checkMAC(checkTokenDomain, exp, &sum)
	return exp + "." + hex.EncodeToString(sum[:])
}

// validCheckToken reports whether token is a check token one of keys
// gave that is still good at now: its expiry is after now and no further
// than checkTokenLifetime from it (a token good for longer was not given
// by this library), and its MAC matches under one of keys.
func validCheckToken(token string, now time.Time, keys []Key) bool {
	exp, mac, ok := strings.Cut(token, ".")
	if !ok || len(exp) == 0 || len(exp) > 18 {
		return false
	}
	ms, ok := parseMillis(exp)
	if !ok {
		return false
	}
	left := ms - now.UnixMilli()
	if left <= 0 || left > checkTokenLifetime.Milliseconds() {
		return false
	}
	var want [sha256.Size]byte
	if !decodeHex32(&want, mac) {
		return false
	}
	ok = false
	for _, k := range keys {
		if k.st == nil {
			continue
		}
		var sum [sha256.Size]byte
		k.checkMAC(checkTokenDomain, exp, &sum)
		ok = hmac.Equal(sum[:], want[:]) || ok // every key is tried: the time taken does not say which matched
	}
	return ok
}

// signedCheck reports whether a request signed with t as sent (ts) that
// verified under k proves it is a check's: its Median-Check header is its
// mark under k, or a check token still good under one of keys.
func signedCheck(header, ts string, k Key, now time.Time, keys []Key) bool {
	if header == "" {
		return false
	}
	if len(header) == 2*sha256.Size {
		return k.markMatches(ts, header)
	}
	return validCheckToken(header, now, keys)
}
