// Package lambdatest stands in for the AWS services that invoke a Lambda
// function with HTTP requests, so that a function's handler (an
// Invoke(ctx, payload) function, as lambdamedian.New returns) can be
// tested with net/http requests:
//
//   - [Event] turns an *http.Request into the event one [Kind] of service
//     sends (Function URL, API Gateway HTTP API, REST API, ALB with and
//     without multi-value headers), as that service builds it: header names
//     lower-cased or as sent, repeated headers joined or listed, bodies
//     base64-encoded unless their type is text;
//   - [Response] reads a function's answer back into an *http.Response as
//     that service does, answering 502 for one it cannot use;
//   - [Function] serves requests through an Invoke function, as an
//     http.Handler, an http.RoundTripper or a conformance.Target's Do,
//     with Lambda's deadline on the invocation's ctx and its 6 MB limits.
//
// It is a harness of the module's own tests (internal/testonly): only test
// files and other harnesses import it, never shipped code
// (internal/testonly/surface checks).
package lambdatest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Kind is a service that invokes a function with an HTTP request.
type Kind int

// The kinds of HTTP event.
const (
	FunctionURL   Kind = iota // a Lambda Function URL (payload 2.0)
	HTTPAPI                   // an API Gateway HTTP API (payload 2.0)
	RESTAPI                   // an API Gateway REST API, proxy integration (payload 1.0)
	ALB                       // an Application Load Balancer target group, multi-value headers off
	ALBMultiValue             // an Application Load Balancer target group, multi-value headers on
)

// Kinds lists every Kind.
func Kinds() []Kind { return []Kind{FunctionURL, HTTPAPI, RESTAPI, ALB, ALBMultiValue} }

// String names the kind, for subtests.
func (k Kind) String() string {
	switch k {
	case FunctionURL:
		return "function URL"
	case HTTPAPI:
		return "HTTP API"
	case RESTAPI:
		return "REST API"
	case ALB:
		return "ALB"
	case ALBMultiValue:
		return "ALB multi-value"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// MaxPayloadBytes is Lambda's limit on a synchronous invocation's event
// and on its answer: 6 MB (6 MiB).
const MaxPayloadBytes = 6 << 20

// MaxALBBytes is an Application Load Balancer's own limit on the request
// body it sends a Lambda target and on the answer's JSON: 1 MB.
const MaxALBBytes = 1_000_000

// isALB reports whether k is one of the ALB kinds.
func (k Kind) isALB() bool { return k == ALB || k == ALBMultiValue }

// The identifiers the events carry.
const (
	accountID      = "123456789012"
	targetGroupARN = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/median/0123456789abcdef"
)

// Event returns the event JSON kind's service sends the function for r,
// reading r's body (r.Body is consumed).
func Event(kind Kind, r *http.Request) ([]byte, error) {
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return nil, fmt.Errorf("lambdatest: reading the request body: %w", err)
		}
		_ = r.Body.Close()
	}
	host := r.Host
	if host == "" {
		host = r.URL.Host
	}
	hdr := r.Header.Clone()
	if hdr == nil {
		hdr = http.Header{}
	}
	hdr.Set("Host", host)
	hdr.Set("X-Forwarded-Proto", "https")
	hdr.Set("X-Amzn-Trace-Id", "Root=1-5e1b4151-5ac6c58f5b5daa6532e4f0c7")
	if len(body) > 0 && hdr.Get("Content-Length") == "" {
		hdr.Set("Content-Length", strconv.Itoa(len(body)))
	}
	text, encoded := string(body), false
	if len(body) > 0 && (kind != RESTAPI && !isText(hdr.Get("Content-Type"))) {
		text, encoded = base64.StdEncoding.EncodeToString(body), true
	}
	in := incoming{r: r, host: host, path: r.URL.EscapedPath(), query: r.URL.Query(), hdr: hdr, body: text, encoded: encoded, now: time.Now()}
	switch kind {
	case FunctionURL, HTTPAPI:
		return json.Marshal(payloadV2(kind, in))
	case RESTAPI:
		return json.Marshal(rest(in))
	case ALB, ALBMultiValue:
		return json.Marshal(alb(kind, in))
	}
	return nil, fmt.Errorf("lambdatest: unknown kind %d", int(kind))
}

// incoming is a request as a service received it, for its event.
type incoming struct {
	r       *http.Request
	host    string
	path    string // escaped
	query   url.Values
	hdr     http.Header // the request's, with the service's own added
	body    string      // as the event carries it
	encoded bool        // body is base64
	now     time.Time
}

// payloadV2 is a Function URL's or an HTTP API's event (payload 2.0):
// header names lower-cased, repeated values joined with ",", cookies
// apart.
func payloadV2(kind Kind, in incoming) events.APIGatewayV2HTTPRequest {
	joined := map[string]string{}
	var cookies []string
	for k, vs := range in.hdr {
		if k == "Cookie" {
			for _, v := range vs {
				cookies = append(cookies, strings.Split(v, "; ")...)
			}
			continue
		}
		joined[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	route := "$default" // a Function URL's; an HTTP API's is the route that matched
	if kind == HTTPAPI {
		route = "ANY " + in.path
	}
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: route, RawPath: in.path, RawQueryString: in.r.URL.RawQuery, Cookies: cookies, Headers: joined,
		QueryStringParameters: single(in.query), Body: in.body, IsBase64Encoded: in.encoded,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: route, Stage: "$default", AccountID: accountID, RequestID: "req-1", APIID: "abcdefghij", DomainName: in.host, DomainPrefix: "abcdefghij",
			Time: in.now.UTC().Format("02/Jan/2006:15:04:05 -0700"), TimeEpoch: in.now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: in.r.Method, Path: in.path, Protocol: "HTTP/1.1", SourceIP: "203.0.113.7", UserAgent: in.r.UserAgent()},
		},
	}
}

// rest is a REST API's event (payload 1.0): header names as sent; headers
// holds each one's last value, multiValueHeaders all of them.
func rest(in incoming) events.APIGatewayProxyRequest {
	e := events.APIGatewayProxyRequest{
		Resource: in.path, Path: in.path, HTTPMethod: in.r.Method,
		Headers: map[string]string{}, MultiValueHeaders: map[string][]string{},
		RequestContext: events.APIGatewayProxyRequestContext{
			AccountID: accountID, ResourceID: "abc123", Stage: "prod", DomainName: in.host, RequestID: "req-1",
			Protocol: "HTTP/1.1", ResourcePath: in.path, Path: "/prod" + in.path, HTTPMethod: in.r.Method,
			RequestTimeEpoch: in.now.UnixMilli(), APIID: "abcdefghij",
		},
		Body: in.body, IsBase64Encoded: in.encoded,
	}
	for k, vs := range in.hdr {
		e.Headers[k] = vs[len(vs)-1]
		e.MultiValueHeaders[k] = slices.Clone(vs)
	}
	if len(in.query) > 0 {
		e.QueryStringParameters, e.MultiValueQueryStringParameters = single(in.query), in.query
	}
	return e
}

// alb is an ALB target group's event: header names lower-cased; without
// multi-value headers a repeated header passes its last value only.
func alb(kind Kind, in incoming) events.ALBTargetGroupRequest {
	e := events.ALBTargetGroupRequest{
		HTTPMethod: in.r.Method, Path: in.path, Body: in.body, IsBase64Encoded: in.encoded,
		RequestContext: events.ALBTargetGroupRequestContext{ELB: events.ELBContext{TargetGroupArn: targetGroupARN}},
	}
	if kind == ALB {
		e.Headers, e.QueryStringParameters = map[string]string{}, single(in.query)
		for k, vs := range in.hdr {
			e.Headers[strings.ToLower(k)] = vs[len(vs)-1]
		}
		return e
	}
	e.MultiValueHeaders, e.MultiValueQueryStringParameters = map[string][]string{}, in.query
	for k, vs := range in.hdr {
		e.MultiValueHeaders[strings.ToLower(k)] = slices.Clone(vs)
	}
	return e
}

// isText reports whether a body of this Content-Type reaches the function
// as it is: the services base64-encode every other body.
func isText(contentType string) bool {
	t, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return strings.HasPrefix(t, "text/") || t == "application/json" || strings.HasSuffix(t, "+json") ||
		t == "application/javascript" || t == "application/xml"
}

// single is each query parameter's last value, nil when there is none.
func single(q map[string][]string) map[string]string {
	if len(q) == 0 {
		return nil
	}
	out := make(map[string]string, len(q))
	for k, vs := range q {
		out[k] = vs[len(vs)-1]
	}
	return out
}

// answer is a function's answer, in any service's shape.
type answer struct {
	StatusCode        *int                `json:"statusCode"`
	StatusDescription string              `json:"statusDescription"`
	Headers           map[string]string   `json:"headers"`
	MultiValueHeaders map[string][]string `json:"multiValueHeaders"`
	Body              string              `json:"body"`
	IsBase64Encoded   bool                `json:"isBase64Encoded"`
	Cookies           []string            `json:"cookies"`
}

// Response reads the function's answer to req as kind's service does and
// returns the response the client gets. An answer the service cannot use
// (not a JSON object with a statusCode, a body that is not base64 when it
// says so, or over MaxPayloadBytes, or MaxALBBytes for an ALB) is answered 502 with the service's own
// text, as is an answer with the headers the service does not read (an
// ALB with multi-value headers reads multiValueHeaders only, one without
// them headers only). A payload 2.0 answer that is not such an object is
// the body of a 200, as Function URLs and HTTP APIs read it.
func Response(kind Kind, payload []byte, req *http.Request) (*http.Response, error) {
	if len(payload) > MaxPayloadBytes {
		return badGateway(req, "the function's answer is over Lambda's 6 MB response limit"), nil
	}
	if kind.isALB() && len(payload) > MaxALBBytes {
		return badGateway(req, "the function's answer is over the load balancer's 1 MB limit"), nil
	}
	var a answer
	if err := json.Unmarshal(payload, &a); err != nil || a.StatusCode == nil {
		if kind == FunctionURL || kind == HTTPAPI {
			return build(req, http.StatusOK, http.Header{"Content-Type": {"application/json"}}, payload), nil
		}
		return badGateway(req, "the function's answer has no statusCode"), nil
	}
	body := []byte(a.Body)
	if a.IsBase64Encoded {
		var err error
		if body, err = base64.StdEncoding.DecodeString(a.Body); err != nil {
			return badGateway(req, "the function's answer is marked isBase64Encoded but is not base64"), nil
		}
	}
	hdr, why := a.header(kind)
	if why != "" {
		return badGateway(req, why), nil
	}
	return build(req, *a.StatusCode, hdr, body), nil
}

// header is the answer's headers as kind's service reads them, or why it
// cannot use the answer.
func (a *answer) header(kind Kind) (http.Header, string) {
	hdr := http.Header{}
	set := func(m map[string]string) {
		for k, v := range m {
			hdr.Set(k, v)
		}
	}
	add := func(m map[string][]string) {
		for k, vs := range m {
			for _, v := range vs {
				hdr.Add(k, v)
			}
		}
	}
	switch kind {
	case FunctionURL, HTTPAPI:
		set(a.Headers)
		for _, c := range a.Cookies {
			hdr.Add("Set-Cookie", c)
		}
	case RESTAPI:
		set(a.Headers)
		add(a.MultiValueHeaders)
	case ALB, ALBMultiValue:
		switch {
		case a.StatusDescription == "":
			return nil, "an ALB target's answer has no statusDescription"
		case kind == ALB && a.MultiValueHeaders != nil:
			return nil, "an ALB target group without multi-value headers does not read multiValueHeaders"
		case kind == ALBMultiValue && a.Headers != nil:
			return nil, "an ALB target group with multi-value headers does not read headers"
		}
		set(a.Headers)
		add(a.MultiValueHeaders)
	}
	return hdr, ""
}

// badGateway is the 502 a service answers when the function fails or
// answers what it cannot use.
func badGateway(req *http.Request, why string) *http.Response {
	return build(req, http.StatusBadGateway, http.Header{"Content-Type": {"text/plain; charset=utf-8"}}, []byte("lambdatest: Bad Gateway: "+why))
}

// build is an *http.Response to req with a body of its own; a HEAD answer
// has none.
func build(req *http.Request, status int, hdr http.Header, body []byte) *http.Response {
	if req != nil && req.Method == http.MethodHead {
		body = nil
	}
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	return &http.Response{
		Status:     strconv.Itoa(status) + " " + http.StatusText(status),
		StatusCode: status,
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        hdr,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// Invoke is a function's handler: aws-lambda-go's lambda.Handler.Invoke.
type Invoke func(ctx context.Context, payload []byte) ([]byte, error)

// DefaultTimeout is a Function's timeout when it sets none.
const DefaultTimeout = 30 * time.Second

// Function serves HTTP requests through a function's handler as one Kind
// of service does: each request becomes an event, the handler is invoked
// with a ctx whose deadline is Timeout away (as Lambda sets it), and its
// answer becomes the response. An event over MaxPayloadBytes (behind an
// ALB, a body over MaxALBBytes) is refused 413 before the handler runs, a handler that returns an error (or panics)
// is answered 502, and one that has not returned by the deadline 502 too,
// without waiting for it further, as Lambda ends the invocation.
type Function struct {
	Kind    Kind
	Invoke  Invoke
	Timeout time.Duration // default DefaultTimeout
	// Context, when set, is the parent of each invocation's ctx (for the
	// values Lambda's runtime puts there); default context.Background().
	Context context.Context
}

// Do serves one request: it is a conformance.Target's Do.
func (f Function) Do(r *http.Request) (*http.Response, error) {
	if f.Kind.isALB() && r.Body != nil {
		// The load balancer refuses a body over its limit itself.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, fmt.Errorf("lambdatest: reading the request body: %w", err)
		}
		_ = r.Body.Close()
		if len(body) > MaxALBBytes {
			return build(r, http.StatusRequestEntityTooLarge, http.Header{"Content-Type": {"text/html"}}, []byte("<html><body><h1>413 Request Entity Too Large</h1></body></html>")), nil
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	payload, err := Event(f.Kind, r)
	if err != nil {
		return nil, err
	}
	if len(payload) > MaxPayloadBytes {
		return build(r, http.StatusRequestEntityTooLarge, http.Header{"Content-Type": {"text/plain; charset=utf-8"}}, []byte("lambdatest: Request Entity Too Large: the event is over Lambda's 6 MB limit")), nil
	}

	parent := f.Context
	if parent == nil {
		parent = context.Background()
	}
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1) // buffered: a late handler never blocks
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: fmt.Errorf("the handler panicked: %v", p)}
			}
		}()
		out, err := f.Invoke(ctx, payload)
		done <- result{out, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			return badGateway(r, "the function failed: "+res.err.Error()), nil
		}
		return Response(f.Kind, res.out, r)
	case <-ctx.Done():
		return badGateway(r, "the function timed out"), nil
	}
}

// RoundTrip implements http.RoundTripper.
func (f Function) RoundTrip(r *http.Request) (*http.Response, error) { return f.Do(r) }

// ServeHTTP implements http.Handler: it answers r with what Do returns.
func (f Function) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	res, err := f.Do(r)
	if err != nil { // the request's body could not be read: the client is gone
		if conn, _, herr := http.NewResponseController(w).Hijack(); herr == nil {
			_ = conn.Close() // at once, not after net/http's half a second of lingering
			return
		}
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	defer res.Body.Close()
	for k, vs := range res.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(res.StatusCode)
	_, _ = io.Copy(w, res.Body)
}
