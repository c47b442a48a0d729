package chimedian_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/median-go/median/chimedian"
	"github.com/median-go/median/internal/testonly/adaptertest"
	"github.com/median-go/median/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The shared adapter table and the conformance suite run against
// chimedian in internal/testonly/adapters.

// TestToolSeesChisRequestID checks that a tool mounted with Mount finds
// what chi's own RequestID middleware put on the request's context.
func TestToolSeesChisRequestID(t *testing.T) {
	reqID := protocol.NewTool("req_id", protocol.RiskLow, "Answers chi's request id.",
		func(ctx context.Context, _ protocol.ToolCall[struct{}]) (string, error) {
			return middleware.GetReqID(ctx), nil
		})
	h, err := protocol.New(protocol.Config{Keys: []string{adaptertest.Key}, Tools: []*protocol.Tool{reqID}, Now: func() time.Time { return adaptertest.Now }})
	assert.NoError(t, err)
	r := chi.NewRouter()
	r.Use(middleware.RequestID)
	chimedian.Mount(r, adaptertest.Path, h)

	body := adaptertest.ToolCall("req_id", "call_req_id", `{}`)
	req := adaptertest.NewSignedRequest(http.MethodPost, adaptertest.Path, body)
	req.Header.Set("X-Request-Id", "req-chi")
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	assert.JSONEq(t, `{"result":"req-chi"}`, w.Body.String())
}
