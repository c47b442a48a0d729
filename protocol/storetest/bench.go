package storetest

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/median-go/median/protocol"
)

// lookupInput is the benchmark tool's input.
type lookupInput struct {
	OrderID string `json:"orderId"`
}

// BenchmarkServe measures a signed tool call served by a [protocol.Handler]
// with store, a new toolCallId each iteration; with a nil store, replay
// protection is off. Run it with and without your store to see what the
// store costs per call. Signing the request is part of each iteration in
// both, so the difference is the store's cost.
func BenchmarkServe(b *testing.B, store protocol.Store) {
	b.Helper()
	h, err := protocol.New(protocol.Config{
		Keys:                    []string{Key},
		Store:                   store,
		DisableReplayProtection: store == nil,
		Logger:                  slog.New(slog.DiscardHandler),
		Tools: []*protocol.Tool{protocol.NewTool("lookup_order", protocol.RiskLow, "Looks an order up.",
			func(ctx context.Context, c protocol.ToolCall[lookupInput]) (map[string]string, error) {
				return map[string]string{"orderId": c.Input.OrderID, "status": "shipped"}, nil
			})},
	})
	if err != nil {
		b.Fatal(err)
	}
	key, err := protocol.ParseKey(Key)
	if err != nil {
		b.Fatal(err)
	}
	prefix := NewID() // ids unique across runs, for a store that outlives them
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		body := fmt.Appendf(nil, `{"tool":"lookup_order","toolCallId":"%s_%d","input":{"orderId":"A-1001"},`+
			`"context":{"conversationId":"conv_1","risk":"low","visitor":{"verified":false}}}`, prefix, i)
		resp := h.Serve(ctx, protocol.Request{Method: http.MethodPost, Signature: key.Sign(time.Now(), body), BodyBytes: body, ContentLength: int64(len(body))})
		if resp.Status != http.StatusOK {
			b.Fatalf("status %d: %s", resp.Status, resp.Body)
		}
	}
}
