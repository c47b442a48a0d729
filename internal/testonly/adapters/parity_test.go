package adapters_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/median-go/median/internal/testonly/adapters"
	"github.com/median-go/median/internal/testonly/adaptertest"
	"github.com/median-go/median/protocol"
)

// TestParity sends every probe, every EndpointCases and MiddlewareCases
// request and a Respond without the middleware to the core on net/http and
// to each adapter, and requires the same answer from all of them, byte for
// byte: status, Content-Type, Allow and body. An adapter only moves bytes,
// so any difference is a bug in the adapter.
func TestParity(t *testing.T) {
	ref := adapters.NetHTTP
	all := adapters.All()

	t.Run("endpoint", func(t *testing.T) {
		all := append(all, adapters.Lambda()...) // every mount has an endpoint
		refClient := adaptertest.Start(t, ref.Endpoint(newHandler()))
		clients := make([]*adaptertest.Client, len(all))
		for i, a := range all {
			clients[i] = adaptertest.Start(t, a.Endpoint(newHandler()))
		}
		requests := probes()
		for _, tc := range adaptertest.EndpointCases() {
			requests = append(requests, probe{tc.Name, tc.Request})
		}
		for _, p := range requests {
			t.Run(p.name, func(t *testing.T) {
				want := refClient.Do(t, p.request)
				for i, a := range all {
					if a.LastHeaderLine != "" && p.request.Signatures != nil {
						continue // that mount passes on the last line alone
					}
					assertSame(t, a.Name, want, clients[i].Do(t, p.request))
				}
			})
		}
	})

	t.Run("middleware", func(t *testing.T) {
		refClient := adaptertest.Start(t, ref.Middleware(newHandler(), (&adaptertest.Recorder{}).Answer))
		clients := make([]*adaptertest.Client, len(all))
		for i, a := range all {
			clients[i] = adaptertest.Start(t, a.Middleware(newHandler(), (&adaptertest.Recorder{}).Answer))
		}
		for _, tc := range adaptertest.MiddlewareCases() {
			t.Run(tc.Name, func(t *testing.T) {
				want := refClient.Do(t, tc.Request)
				for i, a := range all {
					assertSame(t, a.Name, want, clients[i].Do(t, tc.Request))
				}
			})
		}
	})

	t.Run("respond without middleware", func(t *testing.T) {
		req := adaptertest.Signed(http.MethodPost, adaptertest.ToolCall(adaptertest.ToolCustom, "bare", `{}`))
		want := adaptertest.Start(t, ref.Bare((&adaptertest.Recorder{}).Answer)).Do(t, req)
		for _, a := range all {
			assertSame(t, a.Name, want, adaptertest.Start(t, a.Bare((&adaptertest.Recorder{}).Answer)).Do(t, req))
		}
	})
}

// probe is a request the parity test sends to every adapter.
type probe struct {
	name    string
	request adaptertest.Request
}

// probes are requests for each kind of answer the core gives, which every
// adapter must pass on unchanged. What each answer must be is the
// conformance suite's to judge (TestConformance); here they only have to
// be the same everywhere. Every tool call has its own toolCallId, so the
// probes can share one handler.
func probes() []probe {
	k := adaptertest.MustKey(adaptertest.Key)
	other := adaptertest.MustKey(adaptertest.OtherKey)
	now := adaptertest.Now
	echo := adaptertest.ToolCall(adaptertest.ToolEcho, "call_echo", `{"text":"hi"}`)
	signed := func(body []byte) adaptertest.Request { return adaptertest.Signed(http.MethodPost, body) }
	call := func(tool, id, input string) adaptertest.Request {
		return signed(adaptertest.ToolCall(tool, id, input))
	}
	// A rotation header: a v1 under a key the server does not hold, a v0
	// entry, then a v1 under Key.
	rotBody := adaptertest.ToolCall(adaptertest.ToolEcho, "call_rot", `{"text":"rot"}`)
	rotated := other.Sign(now, rotBody) + ", v0=00, " + strings.SplitN(k.Sign(now, rotBody), ",", 2)[1]
	over := adaptertest.Padded(adaptertest.ToolCall(adaptertest.ToolEcho, "call_over", `{"text":"over"}`), adaptertest.MaxBodyBytes+1)
	overChunked := signed(over)
	overChunked.Chunked = true
	slashed := call(adaptertest.ToolEcho, "call_slash", `{"text":"s"}`)
	slashed.Path = adaptertest.Path + "/"

	return []probe{
		{"tool call", call(adaptertest.ToolEcho, "call_echo", `{"text":"hi"}`)},
		{"unknown fields", signed([]byte(`{"tool":"echo","toolCallId":"call_x","input":{"text":"x"},"context":{"conversationId":"c","risk":"high","visitor":{"verified":false},"new":true},"later":[1]}`))},
		{"tool error", call(adaptertest.ToolFail, "call_fail", `{}`)},
		{"refusal", call(adaptertest.ToolRefuse, "call_refuse", `{}`)},
		{"panic", call(adaptertest.ToolPanic, "call_panic", `{}`)},
		{"diagnostics", signed([]byte(`{"op":"diagnostics"}`))},
		{"manifest", adaptertest.Signed(http.MethodGet, nil)},
		{"unsigned manifest", adaptertest.Unsigned(http.MethodGet, nil)},
		{"PUT", adaptertest.Signed(http.MethodPut, echo)},
		{"PATCH", adaptertest.Signed(http.MethodPatch, echo)},
		{"DELETE", adaptertest.Unsigned(http.MethodDelete, nil)},
		{"no signature", adaptertest.Unsigned(http.MethodPost, echo)},
		{"empty signature", adaptertest.WithHeader(http.MethodPost, echo, "")},
		{"malformed signature", adaptertest.WithHeader(http.MethodPost, echo, "t=soon,v1=abc")},
		{"signature in seconds", adaptertest.WithHeader(http.MethodPost, echo, k.Sign(time.UnixMilli(now.Unix()), echo))},
		{"timestamp too old", adaptertest.SignedAt(http.MethodPost, echo, now.Add(-adaptertest.Tolerance-time.Millisecond))},
		{"timestamp from the future", adaptertest.SignedAt(http.MethodPost, echo, now.Add(adaptertest.Tolerance+time.Millisecond))},
		{"timestamp at the tolerance", adaptertest.SignedAt(http.MethodPost, adaptertest.ToolCall(adaptertest.ToolEcho, "call_edge", `{"text":"edge"}`), now.Add(-adaptertest.Tolerance))},
		{"another key", adaptertest.WithHeader(http.MethodPost, echo, other.Sign(now, echo))},
		{"body changed after signing", adaptertest.WithHeader(http.MethodPost, adaptertest.ToolCall(adaptertest.ToolEcho, "call_echo", `{"text":"ho"}`), k.Sign(now, echo))},
		{"one of several v1", adaptertest.WithHeader(http.MethodPost, rotBody, rotated)},
		{"body over the limit", signed(over)},
		{"chunked body over the limit", overChunked},
		{"not JSON", signed([]byte(`tool=echo`))},
		{"array", signed([]byte(`[]`))},
		{"no toolCallId", signed([]byte(`{"tool":"echo","input":{},"context":{}}`))},
		{"unknown op", signed([]byte(`{"op":"restart"}`))},
		{"unknown tool", call("nope", "call_nope", `{}`)},
		{"input does not fit", call(adaptertest.ToolEcho, "call_bad", `{"text":7}`)},
		{"repeated call", call(adaptertest.ToolEcho, "call_echo", `{"text":"hi"}`)},
		{"reused toolCallId", call(adaptertest.ToolEcho, "call_echo", `{"text":"other"}`)},
		{"trailing slash", slashed},
	}
}

func assertSame(t *testing.T, adapter string, want, got adaptertest.Reply) {
	t.Helper()
	assert.Equal(t, want.Status, got.Status, "%s: status", adapter)
	assert.Equal(t, want.ContentType, got.ContentType, "%s: Content-Type", adapter)
	assert.Equal(t, want.Allow, got.Allow, "%s: Allow header", adapter)
	assert.Equal(t, string(untimed(want.Body)), string(untimed(got.Body)), "%s: body", adapter)
}

// timings are the diagnostics report's measured durations, which differ
// from one run to the next.
var timings = regexp.MustCompile(`"(p50Ms|p99Ms|latencyMs)":\d+`)

// untimed returns body with the report's durations set to 0.
func untimed(body []byte) []byte { return timings.ReplaceAll(body, []byte(`"$1":0`)) }

func newHandler() *protocol.Handler {
	h, _ := adaptertest.NewHandler()
	return h
}
