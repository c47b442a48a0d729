package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"syscall"
)

// send performs x with the target's request function.
func (s *session) send(x *roundTrip) *roundTrip { return s.sendWith(s.t.Do, x) }

// sendEarlyAnswer performs x, a request the server may answer before it has
// read the whole body (one over the limit). A server that answers and closes
// then can have its answer reset by TCP before the client reads it: a race
// of the transport, not a fault of the server, so such a send is tried up
// to three times.
func (s *session) sendEarlyAnswer(x *roundTrip) *roundTrip {
	for attempt := 1; ; attempt++ {
		try := *x
		s.send(&try)
		if attempt == 3 || try.err == nil || !(errors.Is(try.err, syscall.ECONNRESET) || errors.Is(try.err, syscall.EPIPE)) {
			*x = try
			return x
		}
	}
}

// sendWith performs x with do.
func (s *session) sendWith(do func(*http.Request) (*http.Response, error), x *roundTrip) *roundTrip {
	if x.url == "" {
		x.url = s.t.URL
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.timeout)
	defer cancel()
	req, err := newRequest(ctx, x.method, x.url, x.body)
	if err != nil {
		x.err = err
		return x
	}
	req.Header.Set("User-Agent", s.t.UserAgent)
	if lines := x.headerLines(); lines != nil {
		req.Header[http.CanonicalHeaderKey(signatureHeader)] = lines
	}
	if x.check = s.checkHeader(x); x.check != "" {
		req.Header.Set(checkHeader, x.check)
	}
	if x.chunked {
		req.ContentLength = -1
		req.Body = struct{ readCloser }{readCloser{req.Body}}
	}
	x.read(s.doSafely(do, req))
	s.checks.keep(x.header)
	if x.mac = s.signer.serverMAC(x.signature, x.body); carriesMAC(x, x.mac) {
		s.noteLeak(x)
	}
	return x
}

// readCloser hides the concrete body type, so net/http cannot learn its
// length and sends it chunked.
type readCloser struct {
	rc interface {
		Read([]byte) (int, error)
		Close() error
	}
}

func (r readCloser) Read(p []byte) (int, error) { return r.rc.Read(p) }
func (r readCloser) Close() error               { return r.rc.Close() }

// doSafely calls do, turning a panic into an error.
func (s *session) doSafely(do func(*http.Request) (*http.Response, error), req *http.Request) (resp *http.Response, err error) {
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, fmt.Errorf("the request function panicked: %v", p)
		}
	}()
	return do(req)
}

// post sends body signed now.
func (s *session) post(body []byte) *roundTrip {
	return s.send(&roundTrip{method: http.MethodPost, body: body, signature: s.sign(s.now(), body)})
}

// get sends a signed GET.
func (s *session) get() *roundTrip {
	return s.send(&roundTrip{method: http.MethodGet, signature: s.sign(s.now(), nil)})
}

// newRequest builds a request to the target with body.
func newRequest(ctx context.Context, method, url string, body []byte) (*http.Request, error) {
	var req *http.Request
	var err error
	if body == nil {
		req, err = http.NewRequestWithContext(ctx, method, url, nil)
	} else {
		req, err = http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	}
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}
