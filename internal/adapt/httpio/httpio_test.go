package httpio_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/median-go/median/internal/adapt/httpio"
	"github.com/median-go/median/internal/testonly/adaptertest"
)

// TestServeAnswersAsServeHTTP sends the same requests to the Handler's own
// ServeHTTP and to httpio.Serve, and wants the same status, headers and body.
func TestServeAnswersAsServeHTTP(t *testing.T) {
	h, _ := adaptertest.NewHandler()
	call := adaptertest.ToolCall(adaptertest.ToolEcho, "call_httpio", `{"text":"hi"}`)
	for name, r := range map[string]adaptertest.Request{
		"call":     adaptertest.Signed(http.MethodPost, call),
		"manifest": adaptertest.Signed(http.MethodGet, nil),
		"unsigned": adaptertest.Unsigned(http.MethodPost, call),
		"put":      adaptertest.Signed(http.MethodPut, call),
	} {
		t.Run(name, func(t *testing.T) {
			send := func(serve func(w http.ResponseWriter, req *http.Request)) *httptest.ResponseRecorder {
				req := httptest.NewRequest(r.Method, adaptertest.Path, bytes.NewReader(r.Body))
				if r.Signature != nil {
					req.Header.Set(adaptertest.SignatureHeader, *r.Signature)
				}
				w := httptest.NewRecorder()
				serve(w, req)
				return w
			}
			want := send(h.ServeHTTP)
			got := send(func(w http.ResponseWriter, req *http.Request) { httpio.Serve(context.Background(), h, w, req) })
			if got.Code != want.Code || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
				t.Fatalf("httpio.Serve answered %d %s, ServeHTTP %d %s", got.Code, got.Body, want.Code, want.Body)
			}
			for _, k := range []string{"Content-Type", "Allow"} {
				if got.Header().Get(k) != want.Header().Get(k) {
					t.Fatalf("%s: httpio.Serve wrote %q, ServeHTTP %q", k, got.Header().Get(k), want.Header().Get(k))
				}
			}
		})
	}
}
