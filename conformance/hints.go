package conformance

import (
	"bytes"
	"mime"
	"net/http"
	"strings"

	"github.com/median-go/median/conformance/internal/answerjson"
)

// mountingDoc is the page of recipes a hint links, with an anchor per
// stack: docs/MOUNTING.md in this module.
const mountingDoc = "docs/MOUNTING.md"

// hint returns what usually puts the answer of x in place of the
// Handler's, and the recipe that avoids it, when the answer is plainly not
// the core's (a redirect, a router's empty 405, a framework's 413, 401,
// 403 or 503, an error page or error model of a framework, API Gateway's
// own answer); "" when x got no answer or an answer in the contract's
// shape, whose failure is the core's to explain. fail adds it to every
// failure, so each case's message stays about what the contract asks.
func hint(x *roundTrip) string {
	if x == nil || x.err != nil || x.status == 0 || contractShaped(x) {
		return ""
	}
	for _, h := range hints {
		if h.matches(x) {
			return h.text(x)
		}
	}
	return ""
}

// contractShaped reports whether x is a JSON answer with exactly a
// "result" or an "error" member, as the core writes every answer.
func contractShaped(x *roundTrip) bool {
	if !x.isJSON() {
		return false
	}
	_, err := answerjson.ParseBody(x.resp)
	return err == nil
}

// frameworkHint is one answer a framework or a proxy gives in place of the
// Handler, and what to do about it.
type frameworkHint struct {
	matches func(x *roundTrip) bool
	text    func(x *roundTrip) string
}

// link names the recipe of anchor in docs/MOUNTING.md.
func link(anchor string) string { return mountingDoc + "#" + anchor }

// hints are checked in order; the first that matches speaks. The ones that
// recognise a sender by its signature (API Gateway's headers, huma's
// problem type, Kratos's error shape, Beego's page) come before the ones
// that go by status alone.
var hints = []frameworkHint{
	{ // API Gateway (or a Lambda function URL) answered for the function.
		matches: func(x *roundTrip) bool {
			return x.header.Get("X-Amzn-Errortype") != "" || x.header.Get("Apigw-Requestid") != "" ||
				(x.header.Get("X-Amzn-Requestid") != "" && jsonMember(x, "message"))
		},
		text: func(x *roundTrip) string {
			return "this is API Gateway's own answer, not the function's (a 502 or 500 {\"message\":…} is the function failing or answering in a shape the integration does not take; a 403 \"Missing Authentication Token\" a route or stage not deployed at this path; a 413 the gateway's payload limit): see " + link("lambda")
		},
	},
	{ // huma's error model (RFC 9457).
		matches: func(x *roundTrip) bool { return mediaType(x) == "application/problem+json" },
		text: func(x *roundTrip) string {
			return "an application/problem+json answer is huma's error model: huma answered itself (its own validation or routing ran instead of the Handler); serve the Handler on the router beside huma's operations, not as one, and feed huma's schema to protocol.WithInputSchema: see " + link("huma")
		},
	},
	{ // Kratos's default error encoder: {"code":404,"reason":…,"message":…}.
		matches: func(x *roundTrip) bool { return x.isJSON() && jsonMember(x, "code") && jsonMember(x, "reason") },
		text: func(x *roundTrip) string {
			return "a JSON body with code and reason is Kratos's error encoder: a route, middleware or timeout of Kratos's own answered (its server Timeout is 1 s by default); mount the Handler with srv.HandlePrefix so Kratos passes requests to it as they are: see " + link("kratos")
		},
	},
	{ // Beego's error pages.
		matches: func(x *roundTrip) bool {
			return mediaType(x) == "text/html" && bytes.Contains(bytes.ToLower(x.resp), []byte("beego"))
		},
		text: func(x *roundTrip) string {
			return "this HTML page is Beego's: the path or the method is not routed to the Handler (register it as a plain handler, app.Handler(\"/api/median\", h), which takes every method and the trailing-slash path): see " + link("beego")
		},
	},
	{ // A redirect: the router corrected the path.
		matches: func(x *roundTrip) bool {
			switch x.status {
			case http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
				return true
			}
			return false
		},
		text: func(x *roundTrip) string {
			to := ""
			if loc := x.header.Get("Location"); loc != "" {
				to = " to " + loc
			}
			return "a redirect" + to + " is the router correcting the path instead of passing it to the Handler: gorilla/mux's StrictSlash(true), Iris's path correction, gin's or Hertz's trailing-slash redirect (on by default) when only one of the path and the path with a trailing slash is registered, echo's trailing-slash middleware with a RedirectCode; register both paths and turn the correction off (Iris folds both into one route: turn off only its redirection, iris.WithoutPathCorrectionRedirection; see " + link("gorillamux") + ", " + link("iris") + ") and see " + link("what-any-mount-must-do")
		},
	},
	{ // A router's 405: the route exists for some methods only.
		matches: func(x *roundTrip) bool { return x.status == http.StatusMethodNotAllowed && x.method != http.MethodHead },
		text: func(x *roundTrip) string {
			return "an empty or non-JSON 405 is the router's, not the Handler's: the route is registered for some methods only (gorilla/mux's .Methods(\"POST\"), go-zero's one route per method, gin or Hertz with HandleMethodNotAllowed); register every method so that the Handler answers the contract's 405 with Allow: see " + link("gorillamux") + ", " + link("go-zero") + " and " + link("what-any-mount-must-do")
		},
	},
	{ // A body limit in front of the Handler.
		matches: func(x *roundTrip) bool { return x.status == http.StatusRequestEntityTooLarge },
		text: func(x *roundTrip) string {
			return "a 413 without the contract's body is a body limit in front of the Handler, at or below its MaxBodyBytes (default 1 MiB): go-zero's MaxBytes (default 1 MiB), fiber's BodyLimit, Hertz's server.WithMaxRequestBodySize, a proxy's limit (nginx client_max_body_size); set it above the Handler's limit so that the Handler answers oversized bodies: see " + link("go-zero") + " and " + link("what-any-mount-must-do")
		},
	},
	{ // An auth middleware in front of the endpoint.
		matches: func(x *roundTrip) bool {
			return x.status == http.StatusUnauthorized || x.status == http.StatusForbidden
		},
		text: func(x *roundTrip) string {
			return "this 401 or 403 is not the Handler's: an auth middleware in front of the endpoint answered (the app's login check, a JWT or basic-auth middleware, a gorilla/mux subrouter's middleware); Median proves itself with its signature, not with your users' credentials, so mount the endpoint outside that middleware: see " + link("what-any-mount-must-do") + " and " + link("gorillamux")
		},
	},
	{ // A timeout or load shedder in front of the Handler.
		matches: func(x *roundTrip) bool {
			return x.status == http.StatusServiceUnavailable || x.status == http.StatusGatewayTimeout
		},
		text: func(x *roundTrip) string {
			return "this 503 or 504 is not the Handler's: a timeout or a load shedder in front of it answered (go-zero's Timeout, 3 s by default, and its CPU shedding; http.TimeoutHandler; a proxy's read timeout); set the timeout above your tools' own (protocol.WithTimeout): see " + link("go-zero") + " and " + link("what-any-mount-must-do")
		},
	},
	{ // Any other answer that is not JSON.
		matches: func(x *roundTrip) bool { return !x.isJSON() },
		text: func(x *roundTrip) string {
			return "a median-go Handler answers JSON only, so a router, a middleware or a proxy in front of it usually sent this (a 404 page: the path or the method is not routed to the Handler): see " + link("what-any-mount-must-do") + ", and " + link("any-other-stack") + " for a stack with no recipe"
		},
	},
}

// mediaType is the answer's media type, lower case, without parameters.
func mediaType(x *roundTrip) string {
	mt, _, err := mime.ParseMediaType(x.header.Get("Content-Type"))
	if err != nil {
		return strings.ToLower(strings.TrimSpace(strings.Split(x.header.Get("Content-Type"), ";")[0]))
	}
	return mt
}

// jsonMember reports whether the answer is a JSON object with a member
// called name.
func jsonMember(x *roundTrip, name string) bool {
	members, ok := answerjson.Members(x.resp)
	if !ok {
		return false
	}
	for _, m := range members {
		if m.Name == name {
			return true
		}
	}
	return false
}
