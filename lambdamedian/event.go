package lambdamedian

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/median-go/median/internal/adapt/httpwire"
	"github.com/median-go/median/protocol"
)

// Lambda's limits on a synchronous invocation: the event and the function's
// answer are at most 6 MB each (6 MiB, as Lambda counts).
const maxPayloadBytes = 6 << 20

// envelopeBytes bounds what an answer's payload holds beside its body: the
// status, the headers (Content-Type, Allow, Median-Check-Token) and the
// JSON around them.
const envelopeBytes = 1 << 10

// maxALBBytes is an Application Load Balancer's own limit on the request
// body it sends a Lambda target and on the answer's JSON: 1 MB.
const maxALBBytes = 1_000_000

// maxAnswerBytes is the longest answer body that fits Lambda's response
// once encoded: a body escaped as a JSON string may grow, so one that
// grows past base64's 4/3 is sent base64-encoded.
const maxAnswerBytes = (maxPayloadBytes - envelopeBytes) / 4 * 3

// maxALBAnswerBytes is maxAnswerBytes behind an ALB.
const maxALBAnswerBytes = (maxALBBytes - envelopeBytes) / 4 * 3

// maxDeliveredBody is the longest request body Lambda delivers whichever
// way the service encodes it: a service sends a body base64-encoded
// (4/3 of its size) unless it knows its type is text.
const maxDeliveredBody = maxAnswerBytes

// kind is the service an event came from, which decides the answer's shape.
type kind int

const (
	payloadV2     kind = iota // a Function URL or an API Gateway HTTP API (payload 2.0)
	payloadV1                 // an API Gateway REST API, or an HTTP API with payload 1.0
	alb                       // an ALB target group without multi-value headers
	albMultiValue             // an ALB target group with multi-value headers
)

// maxAnswer is the longest answer body the service of kind k returns.
func (k kind) maxAnswer() int {
	if k == alb || k == albMultiValue {
		return maxALBAnswerBytes
	}
	return maxAnswerBytes
}

// event is the union of the events Lambda receives HTTP with: only the
// fields the endpoint reads, decoded once.
type event struct {
	Version        string `json:"version"`
	RequestContext struct {
		HTTP struct {
			Method string `json:"method"`
		} `json:"http"`
		ELB *struct {
			TargetGroupArn string `json:"targetGroupArn"`
		} `json:"elb"`
	} `json:"requestContext"`
	HTTPMethod        string              `json:"httpMethod"`
	Headers           map[string]string   `json:"headers"`
	MultiValueHeaders map[string][]string `json:"multiValueHeaders"`
	Body              string              `json:"body"`
	IsBase64Encoded   bool                `json:"isBase64Encoded"`

	kind kind
}

// errNotHTTP is returned to Lambda for an event none of the services sends.
var errNotHTTP = errors.New("lambdamedian: the event is not an HTTP request from a Lambda Function URL, an API Gateway HTTP API (payload 2.0) or REST API (payload 1.0), or an Application Load Balancer: expected requestContext.http.method with version \"2.0\", httpMethod, or requestContext.elb; invoke the function through one of those, or send a test event of one of their shapes")

// decode reads an event and tells which service sent it.
func decode(payload []byte) (*event, error) {
	ev := &event{}
	if err := json.Unmarshal(payload, ev); err != nil {
		return nil, fmt.Errorf("%w (the payload is not a JSON object: %v)", errNotHTTP, err)
	}
	switch {
	case ev.RequestContext.ELB != nil && ev.HTTPMethod != "":
		ev.kind = alb
		if ev.MultiValueHeaders != nil {
			ev.kind = albMultiValue
		}
	case ev.Version == "2.0" && ev.RequestContext.HTTP.Method != "":
		ev.kind = payloadV2
	case ev.HTTPMethod != "":
		ev.kind = payloadV1
	default:
		return nil, errNotHTTP
	}
	return ev, nil
}

// method is the request's HTTP method.
func (ev *event) method() string {
	if ev.kind == payloadV2 {
		return ev.RequestContext.HTTP.Method
	}
	return ev.HTTPMethod
}

// request is the core's view of the event's request: the method, the
// median-signature and Median-Check headers (each sent more than once
// joined with ","), and the body, decoded when it came base64-encoded.
func (ev *event) request() (protocol.Request, error) {
	body := []byte(ev.Body)
	if ev.IsBase64Encoded {
		var err error
		if body, err = base64.StdEncoding.DecodeString(ev.Body); err != nil {
			return protocol.Request{}, fmt.Errorf("lambdamedian: the event's body is marked isBase64Encoded but is not base64: %w", err)
		}
	}
	return protocol.Request{
		Method:        ev.method(),
		Signature:     ev.header(httpwire.SignatureHeader),
		Check:         ev.header(httpwire.CheckHeader),
		BodyBytes:     body,
		ContentLength: int64(len(body)),
	}, nil
}

// header returns every value of the header name, in any case, joined with
// "," in the order received: multiValueHeaders when the event has them
// (REST, ALB with multi-value headers), headers otherwise, whose values a
// Function URL and an HTTP API have already joined. "" when absent. When
// the name comes in several spellings (as a REST API passes them), their
// values are joined in the order of the spellings.
func (ev *event) header(name string) string {
	if ev.MultiValueHeaders != nil {
		var vals []string
		for _, k := range spellings(ev.MultiValueHeaders, name) {
			vals = append(vals, ev.MultiValueHeaders[k]...)
		}
		if len(vals) > 0 {
			return strings.Join(vals, ",")
		}
	}
	var vals []string
	for _, k := range spellings(ev.Headers, name) {
		vals = append(vals, ev.Headers[k])
	}
	return strings.Join(vals, ",")
}

// spellings returns the keys of m equal to name in any case, sorted.
func spellings[V any](m map[string]V, name string) []string {
	var keys []string
	for k := range m {
		if strings.EqualFold(k, name) {
			keys = append(keys, k)
		}
	}
	if len(keys) > 1 {
		slices.Sort(keys)
	}
	return keys
}

// answer is a response in the shape every service reads: the status, the
// headers (multiValueHeaders for an ALB target group with them on, which
// reads no other) and the body. StatusDescription is the ALB's.
type answer struct {
	StatusCode        int                 `json:"statusCode"`
	StatusDescription string              `json:"statusDescription,omitempty"`
	Headers           map[string]string   `json:"headers,omitempty"`
	MultiValueHeaders map[string][]string `json:"multiValueHeaders,omitempty"`
	Body              string              `json:"body"`
	IsBase64Encoded   bool                `json:"isBase64Encoded"`
}

// encode writes the core's answer in the event's shape. The body is sent as
// it is, or base64-encoded when escaping it as a JSON string would grow it
// past base64's size (or it is not UTF-8), so that every answer the core
// keeps under its kind's maxAnswer fits the service's response.
func (ev *event) encode(resp protocol.Response) ([]byte, error) {
	if resp.Status == 0 { // never for Serve's answers; nothing to write
		resp.Status = http.StatusNoContent
	}
	hdr := map[string]string{"Content-Type": httpwire.ContentType}
	if resp.Allow != "" {
		hdr["Allow"] = resp.Allow
	}
	if resp.CheckToken != "" {
		hdr[httpwire.CheckTokenHeader] = resp.CheckToken
	}
	a := answer{StatusCode: resp.Status, Body: string(resp.Body)}
	switch ev.kind {
	case alb:
		a.StatusDescription = strconv.Itoa(resp.Status) + " " + http.StatusText(resp.Status)
		a.Headers = hdr
	case albMultiValue:
		a.StatusDescription = strconv.Itoa(resp.Status) + " " + http.StatusText(resp.Status)
		a.MultiValueHeaders = make(map[string][]string, len(hdr))
		for k, v := range hdr {
			a.MultiValueHeaders[k] = []string{v}
		}
	default:
		a.Headers = hdr
	}
	out, err := marshal(a)
	if err != nil {
		return nil, fmt.Errorf("lambdamedian: encoding the answer: %w", err)
	}
	if len(out) > envelopeBytes+base64.StdEncoding.EncodedLen(len(resp.Body)) || !utf8.Valid(resp.Body) {
		a.Body, a.IsBase64Encoded = base64.StdEncoding.EncodeToString(resp.Body), true
		if out, err = marshal(a); err != nil {
			return nil, fmt.Errorf("lambdamedian: encoding the answer: %w", err)
		}
	}
	return out, nil
}

// marshal encodes v as JSON without escaping <, > and &, which would grow
// an answer's body for nothing.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
