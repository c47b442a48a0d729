package fibermedian

import (
	"bytes"
	"io"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/median-go/median/protocol"
)

// The wire names the adapter reads and writes (PROTOCOL.md §1, §3).
const (
	signatureHeader = "Median-Signature"
	contentType     = "application/json"
)

// request builds the core's view of a fiber request. The raw body is passed
// as fasthttp holds it (never decoded: the signature covers the bytes as
// sent), as a reader: the core copies it into its own buffer only after the
// header checks, so nothing the core keeps (the Call's Body and RawInput)
// aliases fasthttp's buffers, which are reused once the handler returns. A
// streamed body is left unread for the core to read up to its limit; stream
// is nil unless the body is streamed.
func request(c *fiber.Ctx) (r protocol.Request, stream *streamedBody) {
	req := c.Request()
	r = protocol.Request{
		Method:        method(c.Method()),
		Signature:     string(req.Header.Peek(signatureHeader)),
		ContentLength: -1,
	}
	if req.IsBodyStream() {
		stream = &streamedBody{r: req.BodyStream()}
		r.Body = stream
		if n := req.Header.ContentLength(); n >= 0 {
			r.ContentLength = int64(n)
		}
		return r, stream
	}
	body := req.Body()
	r.Body, r.ContentLength = bytes.NewReader(body), int64(len(body))
	return r, nil
}

// streamedBody is a streamed request body (fiber.Config.StreamRequestBody)
// that remembers whether it was read to the end.
type streamedBody struct {
	r   io.Reader
	eof bool
}

func (s *streamedBody) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err == io.EOF {
		s.eof = true
	}
	return n, err
}

// closeIfUnread closes the connection after the answer when the core left
// part of a streamed body unread (a refusal before the body, a body over
// the limit): fasthttp would otherwise parse the rest as the next request
// on the connection and answer it with its own 400.
func (s *streamedBody) closeIfUnread(c *fiber.Ctx) {
	if s != nil && !s.eof {
		c.Context().SetConnectionClose()
	}
}

// method returns the request method as a string that does not alias
// fasthttp's reused buffers (the core hands it to Config.Observer, which may
// keep it). The usual methods cost no allocation.
func method(m string) string {
	switch m {
	case http.MethodGet:
		return http.MethodGet
	case http.MethodPost:
		return http.MethodPost
	case http.MethodPut:
		return http.MethodPut
	case http.MethodPatch:
		return http.MethodPatch
	case http.MethodDelete:
		return http.MethodDelete
	case http.MethodHead:
		return http.MethodHead
	case http.MethodOptions:
		return http.MethodOptions
	}
	return strings.Clone(m)
}

// write copies resp into fasthttp's response. The zero Response (a second
// answer to one call) writes nothing, so the first answer stands.
func write(c *fiber.Ctx, resp protocol.Response) {
	if resp.Status == 0 {
		return
	}
	res := c.Response()
	res.SetStatusCode(resp.Status)
	res.Header.SetContentType(contentType)
	if resp.Allow != "" {
		res.Header.Set(fiber.HeaderAllow, resp.Allow)
	}
	res.SetBody(resp.Body)
}
