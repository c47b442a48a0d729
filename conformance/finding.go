package conformance

import "fmt"

// finding is what a case function returns: how the case went and, when it
// failed, why.
type finding struct {
	status   string
	expected string
	actual   string
	message  string
	x        *roundTrip // the request judged, for the curl line
}

func pass(x *roundTrip) finding { return finding{status: statusPass, x: x} }
func skip(msg string) finding   { return finding{status: statusSkip, message: msg} }

// fail reports a failed case about the round trip x. When the answer is
// plainly a framework's or a proxy's, not the endpoint's, the message ends
// with what usually causes it and the recipe to read (hints.go).
func fail(x *roundTrip, expected, format string, a ...any) finding {
	o := finding{status: statusFail, expected: expected, message: fmt.Sprintf(format, a...), x: x}
	if x != nil {
		o.actual = x.actual()
		if h := hint(x); h != "" {
			o.message += ". Likely cause: " + h
		}
	}
	return o
}

// leaked fails a case whose round trip x got an answer carrying the MAC the
// server computed for x's request.
func leaked(x *roundTrip) finding {
	return fail(x, "an answer without the MAC the server computed for the request",
		"%s %s: the answer carries the MAC the server computed for this request (HMAC-SHA256 under Target.Key over its t and body); answers never carry computed MACs (docs/PROTOCOL.md §7): log them on the server, if anywhere", x.method, describe(x))
}
