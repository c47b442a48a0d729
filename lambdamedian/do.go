package lambdamedian

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

// DoTimeout is the deadline Do gives each invocation when the request's
// context has none: Lambda's largest function timeout, 15 minutes.
const DoTimeout = 15 * time.Minute

// Do returns a function that sends one net/http request to fn in memory as
// a Lambda Function URL does, and returns its answer, like http.Client.Do:
// what conformance.Target.Do takes, so the conformance suite can check a
// function built with [New] without deploying it. The request becomes a
// payload 2.0 event (header names in lower case, a header sent more than
// once joined with ",", the body base64-encoded), the invocation's ctx
// is the request's, with a deadline DoTimeout away when it has none, and
// the answer is read back as the Function URL would read it (a base64
// body decoded). An error fn returns is returned as is, where Lambda
// would answer 502.
//
// In tests: conformance.Target{Do: lambdamedian.Do(lambdamedian.New(h)),
// URL: "https://fn.example.test/", Key: key, Replay: true} describes the
// function; Target.BuildWithKey returns Do of the function your
// constructor builds with a bad key. What Do leaves out is the service:
// its limits (6 MB each way, an ALB's 1 MB) and what it does to headers.
func Do(fn lambda.Handler) func(*http.Request) (*http.Response, error) {
	return func(r *http.Request) (*http.Response, error) {
		event, err := functionURLEvent(r)
		if err != nil {
			return nil, err
		}
		ctx := r.Context()
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, DoTimeout)
			defer cancel()
		}
		payload, err := fn.Invoke(ctx, event)
		if err != nil {
			return nil, err
		}
		return functionURLResponse(r, payload)
	}
}

// functionURLEvent is r as a Function URL's event.
func functionURLEvent(r *http.Request) ([]byte, error) {
	ev := events.LambdaFunctionURLRequest{
		Version:        "2.0",
		RawPath:        r.URL.EscapedPath(),
		RawQueryString: r.URL.RawQuery,
		Headers:        make(map[string]string, len(r.Header)),
		RequestContext: events.LambdaFunctionURLRequestContext{
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: r.Method, Path: r.URL.Path},
		},
	}
	for name, values := range r.Header {
		ev.Headers[strings.ToLower(name)] = strings.Join(values, ",")
	}
	if r.Body != nil {
		body, err := io.ReadAll(r.Body)
		_ = r.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("lambdamedian: reading the request body: %w", err)
		}
		if len(body) > 0 {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
			ev.Headers["content-length"] = strconv.Itoa(len(body))
		}
	}
	return json.Marshal(ev)
}

// functionURLResponse reads fn's answer to r as a Function URL does.
func functionURLResponse(r *http.Request, payload []byte) (*http.Response, error) {
	var a events.LambdaFunctionURLResponse
	if err := json.Unmarshal(payload, &a); err != nil {
		return nil, fmt.Errorf("lambdamedian: the function's answer is not a Function URL response: %w", err)
	}
	body := []byte(a.Body)
	if a.IsBase64Encoded {
		var err error
		if body, err = base64.StdEncoding.DecodeString(a.Body); err != nil {
			return nil, fmt.Errorf("lambdamedian: the function's answer says base64 but is not: %w", err)
		}
	}
	hdr := make(http.Header, len(a.Headers))
	for name, value := range a.Headers {
		hdr.Set(name, value)
	}
	if r.Method == http.MethodHead {
		body = nil
	}
	return &http.Response{
		Status:        strconv.Itoa(a.StatusCode) + " " + http.StatusText(a.StatusCode),
		StatusCode:    a.StatusCode,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        hdr,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       r,
	}, nil
}
