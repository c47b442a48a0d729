package adaptertest_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/median-go/median/internal/adaptertest"
	"github.com/median-go/median/protocol"
)

// TestParity sends every case of the kit to the core on net/http and to
// each adapter, and requires the same answer from all of them, byte for
// byte: status, Content-Type, Allow and body. An adapter only moves bytes,
// so any difference is a bug in the adapter.
func TestParity(t *testing.T) {
	ref := adaptertest.NetHTTP
	adapters := adaptertest.All()

	t.Run("endpoint", func(t *testing.T) {
		refClient := adaptertest.Start(t, ref.Endpoint(newHandler()))
		clients := make([]*adaptertest.Client, len(adapters))
		for i, a := range adapters {
			clients[i] = adaptertest.Start(t, a.Endpoint(newHandler()))
		}
		for _, tc := range adaptertest.EndpointCases() {
			t.Run(tc.Name, func(t *testing.T) {
				want := refClient.Do(t, tc.Request)
				for i, a := range adapters {
					assertSame(t, a.Name, want, clients[i].Do(t, tc.Request))
				}
			})
		}
	})

	t.Run("middleware", func(t *testing.T) {
		refClient := adaptertest.Start(t, ref.Middleware(newHandler(), (&adaptertest.Recorder{}).Answer))
		clients := make([]*adaptertest.Client, len(adapters))
		for i, a := range adapters {
			clients[i] = adaptertest.Start(t, a.Middleware(newHandler(), (&adaptertest.Recorder{}).Answer))
		}
		for _, tc := range adaptertest.MiddlewareCases() {
			t.Run(tc.Name, func(t *testing.T) {
				want := refClient.Do(t, tc.Request)
				for i, a := range adapters {
					assertSame(t, a.Name, want, clients[i].Do(t, tc.Request))
				}
			})
		}
	})

	t.Run("respond without middleware", func(t *testing.T) {
		req := adaptertest.Signed(http.MethodPost, adaptertest.ToolCall(adaptertest.ToolCustom, "bare", `{}`))
		want := adaptertest.Start(t, ref.Bare((&adaptertest.Recorder{}).Answer)).Do(t, req)
		for _, a := range adapters {
			assertSame(t, a.Name, want, adaptertest.Start(t, a.Bare((&adaptertest.Recorder{}).Answer)).Do(t, req))
		}
	})
}

func assertSame(t *testing.T, adapter string, want, got adaptertest.Reply) {
	t.Helper()
	assert.Equal(t, want.Status, got.Status, "%s: status", adapter)
	assert.Equal(t, want.ContentType, got.ContentType, "%s: Content-Type", adapter)
	assert.Equal(t, want.Allow, got.Allow, "%s: Allow header", adapter)
	assert.Equal(t, string(want.Body), string(got.Body), "%s: body", adapter)
}

func newHandler() *protocol.Handler {
	h, _ := adaptertest.NewHandler()
	return h
}
