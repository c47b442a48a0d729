package lambdatest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestResponse: an answer a service cannot use is its 502, as each
// service reads it.
func TestResponse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kind    Kind
		payload string
		status  int
		body    string
	}{
		{"function URL", FunctionURL, `{"statusCode":201,"headers":{"X-A":"1"},"body":"ok"}`, 201, "ok"},
		{"base64", RESTAPI, `{"statusCode":200,"body":"aGk=","isBase64Encoded":true}`, 200, "hi"},
		{"not base64", RESTAPI, `{"statusCode":200,"body":"%%","isBase64Encoded":true}`, 502, "not base64"},
		{"payload 2.0 infers 200", HTTPAPI, `"just text"`, 200, `"just text"`},
		{"REST needs statusCode", RESTAPI, `"just text"`, 502, "no statusCode"},
		{"ALB needs statusDescription", ALB, `{"statusCode":200,"headers":{},"body":""}`, 502, "statusDescription"},
		{"ALB reads headers", ALB, `{"statusCode":200,"statusDescription":"200 OK","multiValueHeaders":{"A":["1"]},"body":""}`, 502, "does not read multiValueHeaders"},
		{"ALB multi-value reads multiValueHeaders", ALBMultiValue, `{"statusCode":200,"statusDescription":"200 OK","headers":{"A":"1"},"body":""}`, 502, "does not read headers"},
		{"over 6 MB", FunctionURL, `{"statusCode":200,"body":"` + strings.Repeat("a", MaxPayloadBytes) + `"}`, 502, "6 MB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Response(tc.kind, []byte(tc.payload), nil)
			require.NoError(t, err)
			body, _ := io.ReadAll(res.Body)
			assert.Equal(t, tc.status, res.StatusCode, "%s", body)
			assert.Contains(t, string(body), tc.body)
		})
	}
}

// TestFunction: an event over 6 MB is refused before the function runs; a
// function that fails, panics or outlives its timeout is answered 502;
// the invocation's ctx carries the deadline.
func TestFunction(t *testing.T) {
	post := func(body string) *http.Request {
		return httptest.NewRequest(http.MethodPost, "https://fn.example/", strings.NewReader(body))
	}
	ran := false
	fn := Function{Kind: FunctionURL, Invoke: func(context.Context, []byte) ([]byte, error) { ran = true; return nil, nil }}
	res, err := fn.Do(post(strings.Repeat("a", MaxPayloadBytes)))
	require.NoError(t, err)
	assert.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode)
	assert.False(t, ran)

	fn.Invoke = func(context.Context, []byte) ([]byte, error) { return nil, errors.New("broken") }
	res, err = fn.Do(post("x"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadGateway, res.StatusCode)

	fn.Invoke = func(context.Context, []byte) ([]byte, error) { panic("broken") }
	res, err = fn.Do(post("x"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadGateway, res.StatusCode)

	release := make(chan struct{})
	done := make(chan struct{})
	fn = Function{Kind: RESTAPI, Timeout: 50 * time.Millisecond, Invoke: func(ctx context.Context, _ []byte) ([]byte, error) {
		defer close(done)
		_, ok := ctx.Deadline()
		assert.True(t, ok, "the invocation has a deadline")
		<-release
		return []byte(`{"statusCode":200,"body":""}`), nil
	}}
	res, err = fn.Do(post("x"))
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	assert.Equal(t, http.StatusBadGateway, res.StatusCode)
	assert.Contains(t, string(body), "timed out")
	close(release)
	<-done
}
