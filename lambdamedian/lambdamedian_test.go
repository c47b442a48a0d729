package lambdamedian_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/median-go/median/internal/testonly/lambdatest"
	"github.com/median-go/median/internal/testonly/testsupport"
	"github.com/median-go/median/lambdamedian"
	"github.com/median-go/median/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const key = "lambdamedian-test-key-0123456789abcdef"

// fixture is a Handler with the tools these tests call, its log and how
// often each tool ran.
type fixture struct {
	h       *protocol.Handler
	logs    *testsupport.Buffer
	stuck   atomic.Int64 // runs of "stuck"
	release chan struct{}
}

type textIn struct {
	Text string `json:"text"`
}

type sizeIn struct {
	Bytes int    `json:"bytes"`
	Char  string `json:"char"`
}

// newFixture builds the Handler: "echo" answers its text, "stuck" ignores
// its ctx until the test ends, "honest" returns when its ctx ends, and
// "big" answers a string of Bytes copies of Char.
func newFixture(t *testing.T, configure ...func(*protocol.Config)) *fixture {
	f := &fixture{logs: &testsupport.Buffer{}, release: make(chan struct{})}
	t.Cleanup(func() { close(f.release) })
	tools := []*protocol.Tool{
		protocol.NewTool("echo", protocol.RiskLow, "Echoes its text.", func(_ context.Context, call protocol.ToolCall[textIn]) (string, error) {
			return call.Input.Text, nil
		}),
		protocol.NewTool("stuck", protocol.RiskLow, "Ignores its context.", func(context.Context, protocol.ToolCall[struct{}]) (string, error) {
			f.stuck.Add(1)
			<-f.release
			return "late", nil
		}),
		protocol.NewTool("honest", protocol.RiskLow, "Returns when its context ends.", func(ctx context.Context, _ protocol.ToolCall[struct{}]) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		}),
		protocol.NewTool("big", protocol.RiskLow, "Answers a long string.", func(_ context.Context, call protocol.ToolCall[sizeIn]) (string, error) {
			return strings.Repeat(call.Input.Char, call.Input.Bytes), nil
		}),
	}
	cfg := protocol.Config{Keys: []string{key}, Tools: tools, Logger: slog.New(slog.NewJSONHandler(f.logs, nil))}
	for _, c := range configure {
		c(&cfg)
	}
	h, err := protocol.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	f.h = h
	return f
}

// call is a tool call's body.
func call(tool, id, input string) string {
	return fmt.Sprintf(`{"tool":%q,"toolCallId":%q,"input":%s,"context":{"conversationId":"conv_1","risk":"low","visitor":{"verified":false}}}`, tool, id, input)
}

// sign returns the median-signature header of body, signed now.
func sign(t testing.TB, body string) string {
	k, err := protocol.ParseKey(key)
	require.NoError(t, err)
	return k.Sign(time.Now(), []byte(body))
}

// signed is a signed POST of body, with Content-Type contentType ("" for
// none).
func signed(t testing.TB, body, contentType string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "https://fn.example/median", strings.NewReader(body))
	r.Header.Set("Median-Signature", sign(t, body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	return r
}

// reply is an answer as the client read it.
type reply struct {
	status int
	header http.Header
	body   string
}

func do(t testing.TB, fn lambdatest.Function, r *http.Request) reply {
	t.Helper()
	res, err := fn.Do(r)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return reply{res.StatusCode, res.Header, string(b)}
}

// invoke sends event to the function directly and returns its answer
// payload decoded.
func invoke(t testing.TB, h *protocol.Handler, event string) map[string]any {
	t.Helper()
	out, err := lambdamedian.New(h).Invoke(context.Background(), []byte(event))
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(out, &got))
	return got
}

// TestBodies: every kind of event, with the body sent as it is (a JSON
// Content-Type) and base64-encoded (none), reaches the tool.
func TestBodies(t *testing.T) {
	f := newFixture(t)
	for _, kind := range lambdatest.Kinds() {
		for _, ct := range []string{"application/json", ""} {
			t.Run(fmt.Sprintf("%s %q", kind, ct), func(t *testing.T) {
				body := call("echo", fmt.Sprintf("call_%d_%s", kind, ct), `{"text":"héllo <&>"}`)
				ev, err := lambdatest.Event(kind, signed(t, body, ct))
				require.NoError(t, err)
				var shape struct{ IsBase64Encoded bool }
				require.NoError(t, json.Unmarshal(ev, &shape))
				require.Equal(t, ct == "" && kind != lambdatest.RESTAPI, shape.IsBase64Encoded, "the event's body is base64 unless its type is text (REST: never)")
				got := do(t, lambdatest.Function{Kind: kind, Invoke: lambdamedian.New(f.h).Invoke}, signed(t, body, ct))
				assert.Equal(t, http.StatusOK, got.status, got.body)
				assert.Equal(t, "application/json", got.header.Get("Content-Type"))
				assert.JSONEq(t, `{"result":"héllo <&>"}`, got.body)
			})
		}
	}
}

// TestHeaderNamesInAnyCase: a service that passes header names as sent
// (REST) or one that lower-cases them: the signature is found either way.
func TestHeaderNamesInAnyCase(t *testing.T) {
	f := newFixture(t)
	for i, name := range []string{"MEDIAN-SIGNATURE", "median-signature", "Median-Signature", "mEdIaN-sIgNaTuRe"} {
		body := call("echo", fmt.Sprintf("call_case_%d", i), `{"text":"x"}`)
		bodyJSON, _ := json.Marshal(body)
		sig := sign(t, body)
		rest := fmt.Sprintf(`{"resource":"/median","path":"/median","httpMethod":"POST","headers":{%q:%q},"multiValueHeaders":{%q:[%q]},"requestContext":{"stage":"prod"},"body":%s,"isBase64Encoded":false}`, name, sig, name, sig, bodyJSON)
		got := invoke(t, f.h, rest)
		assert.EqualValues(t, 200, got["statusCode"], "REST with %s: %v", name, got)
		body = call("echo", fmt.Sprintf("call_case_v2_%d", i), `{"text":"x"}`)
		bodyJSON, _ = json.Marshal(body)
		v2 := fmt.Sprintf(`{"version":"2.0","rawPath":"/","headers":{%q:%q},"requestContext":{"http":{"method":"POST","path":"/"}},"body":%s,"isBase64Encoded":false}`, name, sign(t, body), bodyJSON)
		got = invoke(t, f.h, v2)
		assert.EqualValues(t, 200, got["statusCode"], "payload 2.0 with %s: %v", name, got)
	}
}

// TestRepeatedSignatureHeader: a median-signature header a proxy split
// in two (t=… and v1=…) reaches the core joined with ",", in the order
// received, from every service that passes repeated headers on (an ALB
// without multi-value headers passes only the last); the core checks the
// joined value as any other.
func TestRepeatedSignatureHeader(t *testing.T) {
	f := newFixture(t)
	other, err := protocol.ParseKey("another-key-0123456789abcdef0123456789")
	require.NoError(t, err)
	for _, kind := range []lambdatest.Kind{lambdatest.FunctionURL, lambdatest.HTTPAPI, lambdatest.RESTAPI, lambdatest.ALBMultiValue} {
		t.Run(kind.String(), func(t *testing.T) {
			fn := lambdatest.Function{Kind: kind, Invoke: lambdamedian.New(f.h).Invoke}
			body := call("echo", "call_split_"+kind.String(), `{"text":"split"}`)
			r := signed(t, body, "application/json")
			parts := strings.SplitN(r.Header.Get("Median-Signature"), ",", 2)
			r.Header["Median-Signature"] = parts
			got := do(t, fn, r)
			assert.Equal(t, http.StatusOK, got.status, got.body)
			assert.JSONEq(t, `{"result":"split"}`, got.body)

			// The joined value under another key is refused as any other.
			body = call("echo", "call_split_other_"+kind.String(), `{"text":"split"}`)
			r = signed(t, body, "application/json")
			r.Header["Median-Signature"] = strings.SplitN(other.Sign(time.Now(), []byte(body)), ",", 2)
			got = do(t, fn, r)
			assert.Equal(t, http.StatusUnauthorized, got.status, got.body)
			assert.Contains(t, got.body, `"code":"invalid_signature"`)
		})
	}
}

// TestNotAnHTTPEvent: an event none of the services sends is an error
// returned to Lambda, saying what was expected.
func TestNotAnHTTPEvent(t *testing.T) {
	fn := lambdamedian.New(newFixture(t).h)
	for name, payload := range map[string]string{
		"empty object":   `{}`,
		"not JSON":       `GET / HTTP/1.1`,
		"array":          `[1,2]`,
		"SQS":            `{"Records":[{"messageId":"1","body":"hi","eventSource":"aws:sqs"}]}`,
		"version only":   `{"version":"2.0","headers":{}}`,
		"ELB, no method": `{"requestContext":{"elb":{"targetGroupArn":"arn"}}}`,
	} {
		out, err := fn.Invoke(context.Background(), []byte(payload))
		require.Error(t, err, name)
		assert.Nil(t, out, name)
		assert.Contains(t, err.Error(), "is not an HTTP request from a Lambda Function URL", name)
		assert.Contains(t, err.Error(), `expected requestContext.http.method with version "2.0", httpMethod, or requestContext.elb`, name)
	}
	_, err := fn.Invoke(context.Background(), []byte(`{"version":"2.0","requestContext":{"http":{"method":"POST"}},"body":"%%%","isBase64Encoded":true}`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not base64")
}

// TestAnswerShape: each service gets the answer in its own shape: an ALB
// target group the status description, and with multi-value headers on,
// multiValueHeaders only (Allow on a 405 included).
func TestAnswerShape(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		kind      lambdatest.Kind
		multi     bool
		statusDes bool
	}{{lambdatest.FunctionURL, false, false}, {lambdatest.HTTPAPI, false, false}, {lambdatest.RESTAPI, false, false}, {lambdatest.ALB, false, true}, {lambdatest.ALBMultiValue, true, true}} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPut, "https://fn.example/median", nil)
			ev, err := lambdatest.Event(tc.kind, r)
			require.NoError(t, err)
			out, err := lambdamedian.New(f.h).Invoke(context.Background(), ev)
			require.NoError(t, err)
			var a struct {
				StatusCode        int
				StatusDescription *string
				Headers           map[string]string
				MultiValueHeaders map[string][]string
				Body              string
			}
			require.NoError(t, json.Unmarshal(out, &a))
			assert.Equal(t, http.StatusMethodNotAllowed, a.StatusCode)
			assert.Contains(t, a.Body, `"code":"method_not_allowed"`)
			if tc.multi {
				assert.Nil(t, a.Headers, "an ALB with multi-value headers reads multiValueHeaders only")
				assert.Equal(t, []string{"GET, POST"}, a.MultiValueHeaders["Allow"])
				assert.Equal(t, []string{"application/json"}, a.MultiValueHeaders["Content-Type"])
			} else {
				assert.Nil(t, a.MultiValueHeaders)
				assert.Equal(t, "GET, POST", a.Headers["Allow"])
				assert.Equal(t, "application/json", a.Headers["Content-Type"])
			}
			if tc.statusDes {
				require.NotNil(t, a.StatusDescription)
				assert.Equal(t, "405 Method Not Allowed", *a.StatusDescription)
			} else {
				assert.Nil(t, a.StatusDescription)
			}
		})
	}
}

// TestDeadline: the core answers by Lambda's deadline less the margin: a
// tool that ignores its ctx, and one that honours it, are answered
// execution_failed saying they timed out, instead of the service's bare
// 502; the claim is settled, so a repeat gets the same answer without
// running the tool; and the late tool's result is dropped with a warning.
func TestDeadline(t *testing.T) {
	f := newFixture(t)
	fn := lambdatest.Function{Kind: lambdatest.FunctionURL, Timeout: 1500 * time.Millisecond, Invoke: lambdamedian.New(f.h, lambdamedian.WithMargin(time.Second)).Invoke}

	body := call("stuck", "call_stuck", `{}`)
	first := do(t, fn, signed(t, body, "application/json"))
	assert.Equal(t, http.StatusOK, first.status, first.body)
	assert.JSONEq(t, `{"error":{"code":"execution_failed","message":"tool stuck timed out: it had not finished when the request had to be answered"}}`, first.body)
	again := do(t, fn, signed(t, body, "application/json"))
	assert.Equal(t, first, again, "the repeat gets the kept answer")
	assert.EqualValues(t, 1, f.stuck.Load(), "the repeat does not run the tool")

	honest := do(t, fn, signed(t, call("honest", "call_honest", `{}`), "application/json"))
	assert.JSONEq(t, `{"error":{"code":"execution_failed","message":"tool honest timed out: it had not finished when the request had to be answered"}}`, honest.body)

	f.release <- struct{}{} // the stuck tool returns now
	testsupport.Eventually(t, "the late tool's warning", func() bool {
		return strings.Contains(f.logs.String(), "returned after its call was answered execution_failed")
	})
	f.release = make(chan struct{}) // for the cleanup
}

// TestShortTimeout: a function whose timeout is shorter than twice the
// margin keeps half of its time for its tools, instead of answering every
// call timed out at once.
func TestShortTimeout(t *testing.T) {
	f := newFixture(t)
	fn := lambdatest.Function{Kind: lambdatest.HTTPAPI, Timeout: time.Second, Invoke: lambdamedian.New(f.h).Invoke}
	got := do(t, fn, signed(t, call("echo", "call_short", `{"text":"in time"}`), "application/json"))
	assert.JSONEq(t, `{"result":"in time"}`, got.body)
	got = do(t, fn, signed(t, call("stuck", "call_short_stuck", `{}`), "application/json"))
	assert.Contains(t, got.body, "tool stuck timed out", "answered before the deadline, not the service's 502")
}

// TestAnswerTooLarge: an answer longer than Lambda can return is answered
// execution_failed saying so (and kept, so its repeat gets the same),
// instead of a failed invocation; one that fits only base64-encoded is
// sent so.
func TestAnswerTooLarge(t *testing.T) {
	f := newFixture(t)
	fn := lambdatest.Function{Kind: lambdatest.RESTAPI, Invoke: lambdamedian.New(f.h).Invoke}
	body := call("big", "call_big", `{"bytes":5000000,"char":"a"}`)
	got := do(t, fn, signed(t, body, "application/json"))
	assert.Equal(t, http.StatusOK, got.status)
	assert.Contains(t, got.body, `{"error":{"code":"execution_failed","message":"the answer of tool big is too large for this server to return (5000013 bytes, at most`)
	assert.Equal(t, got, do(t, fn, signed(t, body, "application/json")), "the repeat gets the same answer")
	assert.Contains(t, f.logs.String(), "longer than the server's platform can return")

	// 2,000,000 quotes: a 4 MB answer ({"result":"\"\"…"}), which escaping
	// again in the payload would double past 6 MB.
	body = call("big", "call_quotes", `{"bytes":2000000,"char":"\""}`)
	ev, err := lambdatest.Event(lambdatest.RESTAPI, signed(t, body, "application/json"))
	require.NoError(t, err)
	out, err := lambdamedian.New(f.h).Invoke(context.Background(), ev)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(out), lambdatest.MaxPayloadBytes)
	assert.True(t, strings.HasSuffix(string(out), `"isBase64Encoded":true}`), "sent base64-encoded")
	res, err := lambdatest.Response(lambdatest.RESTAPI, out, nil)
	require.NoError(t, err)
	answer, _ := io.ReadAll(res.Body)
	assert.Equal(t, `{"result":"`+strings.Repeat(`\"`, 2000000)+`"}`, string(answer))
}

// TestAnswerTooLargeForALB: behind an ALB, whose limit on the answer is
// 1 MB, an answer that a Function URL returns whole is answered
// execution_failed saying so, never the load balancer's 502.
func TestAnswerTooLargeForALB(t *testing.T) {
	f := newFixture(t)
	body := call("big", "call_alb_big", `{"bytes":800000,"char":"a"}`)
	for _, kind := range []lambdatest.Kind{lambdatest.ALB, lambdatest.ALBMultiValue} {
		fn := lambdatest.Function{Kind: kind, Invoke: lambdamedian.New(f.h).Invoke}
		got := do(t, fn, signed(t, body, "application/json"))
		assert.Equal(t, http.StatusOK, got.status, kind)
		assert.Contains(t, got.body, `{"error":{"code":"execution_failed","message":"the answer of tool big is too large for this server to return (800013 bytes, at most`, kind)
	}
	fits := call("big", "call_alb_fits", `{"bytes":700000,"char":"a"}`)
	got := do(t, lambdatest.Function{Kind: lambdatest.ALB, Invoke: lambdamedian.New(f.h).Invoke}, signed(t, fits, "application/json"))
	assert.Equal(t, http.StatusOK, got.status)
	assert.Len(t, got.body, 700013, "an answer under the ALB's limit is returned whole")
	url := do(t, lambdatest.Function{Kind: lambdatest.FunctionURL, Invoke: lambdamedian.New(f.h).Invoke}, signed(t, call("big", "call_url_big", `{"bytes":800000,"char":"a"}`), "application/json"))
	assert.Len(t, url.body, 800013, "a Function URL returns it whole")
}

// TestWarnings: New warns, through the Handler's logger, when the body
// limit is above what Lambda delivers, and on Lambda when answers are kept
// in memory.
func TestWarnings(t *testing.T) {
	const bodyWarning, storeWarning = "Config.MaxBodyBytes is above what AWS Lambda delivers", "in-memory replay store"
	t.Run("body limit", func(t *testing.T) {
		f := newFixture(t, func(c *protocol.Config) { c.MaxBodyBytes = 8 << 20 })
		lambdamedian.New(f.h)
		assert.Contains(t, f.logs.String(), bodyWarning)
		f = newFixture(t, func(c *protocol.Config) { c.MaxBodyBytes = 4 << 20 })
		lambdamedian.New(f.h)
		assert.NotContains(t, f.logs.String(), bodyWarning)
	})
	t.Run("memory store on Lambda", func(t *testing.T) {
		f := newFixture(t)
		lambdamedian.New(f.h)
		assert.NotContains(t, f.logs.String(), storeWarning, "not on Lambda")

		t.Setenv("AWS_LAMBDA_FUNCTION_NAME", "median-tools")
		f = newFixture(t)
		lambdamedian.New(f.h)
		assert.Contains(t, f.logs.String(), storeWarning)
		assert.Equal(t, 1, strings.Count(f.logs.String(), storeWarning), "once")
		assert.Contains(t, f.logs.String(), `"function":"median-tools"`)

		f = newFixture(t, func(c *protocol.Config) { c.DisableReplayProtection = true })
		lambdamedian.New(f.h)
		assert.NotContains(t, f.logs.String(), storeWarning, "no store at all")
	})
}

// invokeFunc is a lambda.Handler made of a function, for Do's tests.
type invokeFunc func(ctx context.Context, payload []byte) ([]byte, error)

func (f invokeFunc) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return f(ctx, payload)
}

// TestDo: Do sends a request as a Function URL's event (lower-case header
// names, a repeated header joined, the body base64-encoded) with a
// deadline on the invocation's ctx, reads a base64 answer back, and
// returns the function's error as is.
func TestDo(t *testing.T) {
	var got events.LambdaFunctionURLRequest
	var deadline bool
	fn := invokeFunc(func(ctx context.Context, payload []byte) ([]byte, error) {
		_, deadline = ctx.Deadline()
		require.NoError(t, json.Unmarshal(payload, &got))
		return []byte(`{"statusCode":201,"headers":{"Content-Type":"application/json"},"body":"eyJvayI6dHJ1ZX0=","isBase64Encoded":true}`), nil
	})
	req := httptest.NewRequest(http.MethodPost, "/api/median?x=1", strings.NewReader(`{"a":1}`))
	req.Header.Add("Median-Signature", "t=1")
	req.Header.Add("Median-Signature", "v1=2")
	res, err := lambdamedian.Do(fn)(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	assert.Equal(t, http.StatusCreated, res.StatusCode)
	assert.Equal(t, "application/json", res.Header.Get("Content-Type"))
	assert.Equal(t, `{"ok":true}`, string(body))
	assert.True(t, deadline, "the invocation's ctx has a deadline, as Lambda's has")
	assert.Equal(t, "2.0", got.Version)
	assert.Equal(t, http.MethodPost, got.RequestContext.HTTP.Method)
	assert.Equal(t, "/api/median", got.RawPath)
	assert.Equal(t, "x=1", got.RawQueryString)
	assert.Equal(t, "t=1,v1=2", got.Headers["median-signature"])
	assert.True(t, got.IsBase64Encoded)
	assert.Equal(t, base64.StdEncoding.EncodeToString([]byte(`{"a":1}`)), got.Body)

	failing := invokeFunc(func(context.Context, []byte) ([]byte, error) { return nil, errors.New("boom") })
	_, err = lambdamedian.Do(failing)(httptest.NewRequest(http.MethodGet, "/", nil))
	assert.EqualError(t, err, "boom")
}

// TestDefaultMargin: without WithMargin, a tool's ctx ends the Handler's
// store timeout plus ReturnTime before Lambda's deadline, so a shared
// store has its whole timeout to keep the answer; WithMargin sets it.
func TestDefaultMargin(t *testing.T) {
	deadlineTool := protocol.NewTool("deadline", protocol.RiskLow, "Answers its ctx's deadline.", func(ctx context.Context, _ protocol.ToolCall[struct{}]) (int64, error) {
		d, _ := ctx.Deadline()
		return d.UnixNano(), nil
	})
	h, err := protocol.New(protocol.Config{Keys: []string{key}, Tools: []*protocol.Tool{deadlineTool}, StoreTimeout: 2 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	lambdaDeadline := time.Now().Add(time.Minute)
	for i, tc := range []struct {
		fn   lambda.Handler
		want time.Duration
	}{
		{lambdamedian.New(h), 2*time.Second + lambdamedian.ReturnTime},
		{lambdamedian.New(h, lambdamedian.WithMargin(5*time.Second)), 5 * time.Second},
	} {
		ev, err := lambdatest.Event(lambdatest.FunctionURL, signed(t, call("deadline", fmt.Sprintf("call_margin_%d", i), `{}`), "application/json"))
		require.NoError(t, err)
		ctx, cancel := context.WithDeadline(context.Background(), lambdaDeadline)
		out, err := tc.fn.Invoke(ctx, ev)
		cancel()
		require.NoError(t, err)
		res, err := lambdatest.Response(lambdatest.FunctionURL, out, nil)
		require.NoError(t, err)
		var answer struct{ Result int64 }
		require.NoError(t, json.NewDecoder(res.Body).Decode(&answer))
		assert.Equal(t, tc.want, lambdaDeadline.Sub(time.Unix(0, answer.Result)), "case %d", i)
	}
}
