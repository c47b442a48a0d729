package wire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/median-go/median/internal/base/version"
	"github.com/median-go/median/protocol"
)

// SignatureHeader is the header that carries a request's signature (§1.1).
const SignatureHeader = "median-signature"

// CheckHeader marks a request as a check's (§10, "Checks are not
// traffic"): every request a Client sends carries its mark
// (protocol.Key.CheckMark), so the endpoint's diagnostics report counts
// it in its checks section, not as Median's.
const CheckHeader = "median-check"

// MaxAnswer is the most bytes of an answer a Client reads; a longer answer
// is kept cut at that length and marked TooLong.
const MaxAnswer = 8 << 20

// Client signs and sends requests to one endpoint.
type Client struct {
	URL     string           // the endpoint, mount path included
	Key     protocol.Key     // the key requests are signed with
	HTTP    *http.Client     // nil: a client that follows no redirect
	Timeout time.Duration    // bounds each request; 0: 30 seconds
	Skew    time.Duration    // added to the clock a request is signed with
	Now     func() time.Time // the clock; nil: time.Now
}

// Exchange is one request as sent and its answer as received.
type Exchange struct {
	Method        string
	URL           string
	RequestHeader http.Header // as sent: the signature, User-Agent, Content-Type
	Body          []byte      // the request body; nil for a GET
	SignedAt      time.Time   // the clock the request was signed with (Skew included)
	Status        int         // 0 when no answer came (Err says why)
	Header        http.Header // the answer's headers
	Answer        []byte      // the answer's body, at most MaxAnswer bytes
	TooLong       bool        // the answer was longer than MaxAnswer and is cut
	Elapsed       time.Duration
	Err           error // why no answer came, or why it could not be read whole
}

// UserAgent is the User-Agent of every request: "mediancheck/" and the
// module's version ("(devel)" in a build from a work tree, as conformance
// says it).
func UserAgent() string { return "mediancheck/" + version.Module() }

// Post sends body, signed now (plus Skew).
func (c *Client) Post(ctx context.Context, body []byte) Exchange {
	return c.do(ctx, http.MethodPost, body)
}

// Get sends a signed GET: the manifest request (§6).
func (c *Client) Get(ctx context.Context) Exchange {
	return c.do(ctx, http.MethodGet, nil)
}

func (c *Client) do(ctx context.Context, method string, body []byte) Exchange {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	x := Exchange{Method: method, URL: c.URL, Body: body, SignedAt: now().Add(c.Skew), RequestHeader: http.Header{}}
	x.RequestHeader.Set(SignatureHeader, c.Key.Sign(x.SignedAt, body))
	x.RequestHeader.Set(CheckHeader, c.Key.CheckMark(x.SignedAt))
	x.RequestHeader.Set("User-Agent", UserAgent())
	if body != nil {
		x.RequestHeader.Set("Content-Type", "application/json")
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL, rd)
	if err != nil {
		x.Err = fmt.Errorf("the URL %q %w: %w", c.URL, ErrBadURL, err)
		return x
	}
	req.Header = x.RequestHeader.Clone()
	hc := c.HTTP
	if hc == nil {
		hc = noRedirects
	}
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		x.Elapsed = time.Since(start)
		x.Err = describe(err, timeout)
		return x
	}
	defer resp.Body.Close()
	x.Status, x.Header = resp.StatusCode, resp.Header
	x.Answer, err = io.ReadAll(io.LimitReader(resp.Body, MaxAnswer+1))
	x.Elapsed = time.Since(start)
	if len(x.Answer) > MaxAnswer {
		x.Answer, x.TooLong = x.Answer[:MaxAnswer], true
	}
	if err != nil {
		x.Err = fmt.Errorf("reading the answer: %w", describe(err, timeout))
	}
	return x
}

// ErrBadURL is in an Exchange's Err when its URL cannot be requested at
// all (a malformed -url): nothing was sent, and the fault is the caller's.
var ErrBadURL = errors.New("cannot be requested")

// noRedirects is the default client: a redirect is shown as the answer it
// is, never followed with the signature to another place.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// describe says what a transport error means for the user.
func describe(err error, timeout time.Duration) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %s (-timeout): %w", timeout, err)
	}
	return err
}

// ContentType is the answer's Content-Type header.
func (x Exchange) ContentType() string { return x.Header.Get("Content-Type") }

// Curl is a command that sends the same request again, marked as a
// check's like the request. Its signature expires 5 minutes after
// SignedAt.
func (x Exchange) Curl() string {
	var b strings.Builder
	b.WriteString("curl -sS -i -X " + x.Method + " " + shellQuote(x.URL))
	b.WriteString(" -H " + shellQuote(SignatureHeader+": "+x.RequestHeader.Get(SignatureHeader)))
	if mark := x.RequestHeader.Get(CheckHeader); mark != "" {
		b.WriteString(" -H " + shellQuote(CheckHeader+": "+mark))
	}
	if x.Body != nil {
		b.WriteString(" -H 'Content-Type: application/json' --data-binary " + shellQuote(string(x.Body)))
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
