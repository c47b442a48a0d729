package loadtest_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/median-go/median/loadtest"
	"github.com/median-go/median/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testKey = "loadtest-key-0123456789abcdefghijklmnopqrstuvwxyz"

type orderIn struct {
	OrderID string `json:"orderId"`
}

// newServer serves a Handler with a lookup_order tool like the examples'.
func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	lookup := protocol.NewTool("lookup_order", protocol.RiskLow, "Looks up an order.",
		func(ctx context.Context, call protocol.ToolCall[orderIn]) (any, error) {
			if _, ok := call.Visitor.ExternalID(); !ok {
				return nil, protocol.Refuse("not_signed_in", "Sign in to see orders.")
			}
			return map[string]string{"orderId": call.Input.OrderID, "status": "processing"}, nil
		})
	h, err := protocol.New(protocol.Config{Keys: []string{testKey}, Tools: []*protocol.Tool{lookup}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestRunAgainstACorrectServerIsClean(t *testing.T) {
	srv := newServer(t)
	rep, err := loadtest.Run(context.Background(), loadtest.Options{URL: srv.URL, Key: testKey, Concurrency: 4, Requests: 400, Duration: time.Minute})
	require.NoError(t, err)
	assert.Equal(t, 400, rep.Requests)
	assert.Zero(t, rep.Errors(), "unexpected: %v", rep.Unexpected)
	assert.Zero(t, rep.ServerErrors)
	for _, k := range loadtest.Kinds() {
		assert.Positive(t, rep.Kinds[k], "kind %s was sent", k)
	}
	for _, s := range []int{200, 400, 401, 404, 405} {
		assert.Positive(t, rep.Statuses[s], "status %d was seen", s)
	}
	assert.Positive(t, rep.P50)
	assert.LessOrEqual(t, rep.P50, rep.P99)
	assert.LessOrEqual(t, rep.P99, rep.Max)
}

func TestRunCountsBrokenAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	rep, err := loadtest.Run(context.Background(), loadtest.Options{URL: srv.URL, Key: testKey, Concurrency: 2, Requests: 40})
	require.NoError(t, err)
	assert.Equal(t, 40, rep.ServerErrors)
	assert.Equal(t, 40, rep.Errors())
}

func TestRunCountsTransportErrors(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	rep, err := loadtest.Run(context.Background(), loadtest.Options{URL: url, Key: testKey, Concurrency: 2, Requests: 10})
	require.NoError(t, err)
	assert.Equal(t, 10, rep.TransportErrors)
	assert.Equal(t, 10, rep.Errors())
}

func TestRunStopsAtItsDuration(t *testing.T) {
	srv := newServer(t)
	rep, err := loadtest.Run(context.Background(), loadtest.Options{URL: srv.URL, Key: testKey, Concurrency: 2, Requests: loadtest.MaxRequests, Duration: 200 * time.Millisecond})
	require.NoError(t, err)
	assert.Less(t, rep.Requests, loadtest.MaxRequests)
	assert.Zero(t, rep.Errors(), "unexpected: %v", rep.Unexpected)
}

func TestOnlyLoopback(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:8080/api/median", "http://localhost/x", "http://[::1]:9/x", "https://127.0.0.2/"} {
		assert.NoError(t, loadtest.CheckLoopback(u), u)
	}
	for _, u := range []string{"http://example.com/api/median", "http://10.0.0.1/", "ftp://127.0.0.1/", "http://0.0.0.0:8080/", "://"} {
		assert.Error(t, loadtest.CheckLoopback(u), u)
	}
	_, err := loadtest.Run(context.Background(), loadtest.Options{URL: "http://192.0.2.1/", Key: testKey})
	assert.ErrorContains(t, err, "loopback")
	_, err = loadtest.Run(context.Background(), loadtest.Options{URL: "http://127.0.0.1:1/", Key: testKey, Concurrency: loadtest.MaxConcurrency + 1})
	assert.Error(t, err)
}
