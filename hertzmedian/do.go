package hertzmedian

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/cloudwego/hertz/pkg/common/ut"
	"github.com/cloudwego/hertz/pkg/route"
)

// Do returns a function that sends one net/http request through engine
// in memory, with Hertz's own test helper (ut.PerformRequest), and returns
// its answer, like http.Client.Do: what conformance.Target.Do takes, so
// the conformance suite can check a Hertz app without a listener. Pass
// the server's engine (hz.Engine for hz := server.Default()). The body is
// read first and sent with its length, every header is passed on, and a
// HEAD answer has no body, as a server would send it.
//
// In tests: conformance.Target{Do: hertzmedian.Do(hz.Engine), URL: "http://example.test/api/median", Key: key, Replay: true}
// describes the app; Target.BuildWithKey returns hertzmedian.Do of the
// engine your constructor builds with a bad key.
//
// ut.PerformRequest runs the engine's handlers only: server options that
// act on the connection (server.WithMaxRequestBodySize, WithStreamBody,
// timeouts) do not apply, so test those over a listener.
func Do(engine *route.Engine) func(*http.Request) (*http.Response, error) {
	return func(r *http.Request) (*http.Response, error) {
		var body *ut.Body
		if r.Body != nil && r.Body != http.NoBody {
			b, err := io.ReadAll(r.Body)
			_ = r.Body.Close()
			if err != nil {
				return nil, fmt.Errorf("hertzmedian: reading the request body: %w", err)
			}
			body = &ut.Body{Body: bytes.NewReader(b), Len: len(b)}
		}
		host := r.Host
		if host == "" {
			host = r.URL.Host
		}
		headers := []ut.Header{{Key: "Host", Value: host}}
		for k, vs := range r.Header {
			for _, v := range vs {
				headers = append(headers, ut.Header{Key: k, Value: v})
			}
		}
		rec := ut.PerformRequest(engine, r.Method, r.URL.RequestURI(), body, headers...)
		res := &http.Response{
			Status:     strconv.Itoa(rec.Code) + " " + http.StatusText(rec.Code),
			StatusCode: rec.Code,
			Proto:      "HTTP/1.1",
			ProtoMajor: 1,
			ProtoMinor: 1,
			Header:     http.Header{},
			Request:    r,
		}
		rec.Header().VisitAll(func(k, v []byte) { res.Header.Add(string(k), string(v)) })
		out := rec.Body.Bytes()
		if r.Method == http.MethodHead {
			out = nil
		}
		res.Header.Set("Content-Length", strconv.Itoa(len(out)))
		res.ContentLength = int64(len(out))
		res.Body = io.NopCloser(bytes.NewReader(out))
		return res, nil
	}
}
