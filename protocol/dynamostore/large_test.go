package dynamostore_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/dynamostore"
	"github.com/median-go/median/protocol/storetest"
)

// An item holds at most 400 KB. An answer over 8 KiB is stored
// gzip-compressed; one that does not fit even so is not kept, and Save
// reports it as evicted, as the memory store reports an answer larger than
// its budget.

const mib = 1 << 20

// compressible is a 1 MiB answer that gzip makes small: a list of orders.
func compressible() []byte {
	var b strings.Builder
	b.WriteString(`{"result":{"orders":[`)
	for i := 0; b.Len() < mib-64; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"orderId":"A-%07d","status":"shipped","total":%d.%02d}`, i, i%997, i%100)
	}
	b.WriteString(`]}}`)
	return []byte(b.String())
}

// incompressible is a 1 MiB answer gzip cannot bring under 400 KB: random
// bytes in base64, which compress to about three quarters.
func incompressible() []byte {
	raw := make([]byte, mib*3/4)
	_, _ = rand.Read(raw)
	return []byte(`{"result":"` + base64.StdEncoding.EncodeToString(raw) + `"}`)
}

func TestLargeAnswerIsCompressed(t *testing.T) {
	_, c := startWithTable(t)
	s := newStore(t, c, dynamostore.Options{})
	ctx := context.Background()
	answer := compressible()
	require.Greater(t, len(answer), mib-100)
	k := key("large")
	_, _, err := s.Claim(ctx, k, fp, time.Minute)
	require.NoError(t, err)
	evicted, err := s.Save(ctx, k, fp, answer, time.Minute)
	require.NoError(t, err)
	require.Zero(t, evicted, "a compressible 1 MiB answer is kept")

	item := getItem(t, c, k)
	require.Equal(t, "gzip", item["enc"].(*types.AttributeValueMemberS).Value)
	stored := item["answer"].(*types.AttributeValueMemberB).Value
	require.Less(t, len(stored), 400*1024, "the item fits")
	st, got, err := s.Claim(ctx, k, fp, time.Minute)
	require.NoError(t, err)
	require.Equal(t, protocol.ClaimDone, st)
	require.Equal(t, string(answer), string(got), "the answer comes back byte for byte")

	// Just over the threshold: compressed too; an answer gzip cannot
	// shrink is stored as is.
	mid := []byte(`{"result":"` + strings.Repeat("ab", 5000) + `"}`)
	raw := make([]byte, 9000) // random bytes: gzip only adds to them
	_, _ = rand.Read(raw)
	for _, a := range [][]byte{mid, raw} {
		k := key("mid")
		_, err := s.Save(ctx, k, fp, a, time.Minute)
		require.NoError(t, err)
		_, enc := getItem(t, c, k)["enc"]
		require.Equal(t, len(a) == len(mid), enc, "an answer of %d bytes is compressed only when that makes it smaller", len(a))
		_, got, err := s.Claim(ctx, k, fp, time.Minute)
		require.NoError(t, err)
		require.Equal(t, string(a), string(got))
	}
}

func TestAnswerTooLargeIsReportedAndNotKept(t *testing.T) {
	_, c := startWithTable(t)
	s := newStore(t, c, dynamostore.Options{})
	ctx := context.Background()
	k := key("too_large")
	st, _, err := s.Claim(ctx, k, fp, time.Minute)
	require.NoError(t, err)
	require.Equal(t, protocol.ClaimAcquired, st)
	evicted, err := s.Save(ctx, k, fp, incompressible(), time.Minute)
	require.NoError(t, err)
	require.Equal(t, 1, evicted, "an answer that cannot be kept counts as evicted")
	require.Nil(t, getItem(t, c, k), "its claim is removed: a repeat runs the tool instead of waiting for an answer that will never come")

	// Another body's claim and a kept answer stay.
	_, _, err = s.Claim(ctx, k, otherFp, time.Minute)
	require.NoError(t, err)
	evicted, err = s.Save(ctx, k, fp, incompressible(), time.Minute)
	require.NoError(t, err)
	require.Equal(t, 1, evicted)
	require.Equal(t, otherFp, getItem(t, c, k)["fp"].(*types.AttributeValueMemberS).Value, "another body's claim is kept")
	_, err = s.Save(ctx, k, otherFp, answerOf("kept"), time.Minute)
	require.NoError(t, err)
	_, err = s.Save(ctx, k, otherFp, incompressible(), time.Minute)
	require.NoError(t, err)
	_, got, err := s.Claim(ctx, k, otherFp, time.Minute)
	require.NoError(t, err)
	require.Equal(t, string(answerOf("kept")), string(got), "a kept answer stays")
}

func answerOf(s string) []byte { return []byte(`{"result":"` + s + `"}`) }

// resultOf is the result an answer {"result":…} holds.
func resultOf(answer []byte) json.RawMessage {
	return json.RawMessage(answer[len(`{"result":`) : len(answer)-1])
}

// TestLargeAnswersThroughAHandler: what a call answered with 1 MiB gets on
// its repeat. A compressible answer is kept and sent again byte for byte,
// the tool run once. One that cannot be kept is logged and counted as an
// answer dropped early (Event.EvictedEarly, store.evictedEarly in the
// diagnostics report), and its repeat runs the tool again, as PROTOCOL.md
// §8 says of an answer dropped before its time.
func TestLargeAnswersThroughAHandler(t *testing.T) {
	_, c := startWithTable(t)
	var mu sync.Mutex
	var events []protocol.Event
	var runs int
	h := newHandler(t, newStore(t, c, dynamostore.Options{}), protocol.Config{
		// Compressing 1 MiB takes milliseconds, but a second or more under
		// the race detector: a store deadline of seconds.
		StoreTimeout: 5 * time.Second,
		Observer: func(_ context.Context, ev protocol.Event) {
			mu.Lock()
			events = append(events, ev)
			mu.Unlock()
		},
		Tools: []*protocol.Tool{protocol.NewTool("export_orders", protocol.RiskLow, "Exports orders.",
			func(ctx context.Context, call protocol.ToolCall[orderInput]) (json.RawMessage, error) {
				mu.Lock()
				runs++
				mu.Unlock()
				if call.Input.OrderID == "random" {
					return resultOf(incompressible()), nil
				}
				return resultOf(compressible()), nil
			})},
	})
	last := func() protocol.Event {
		mu.Lock()
		defer mu.Unlock()
		return events[len(events)-1]
	}

	req := signedCall(t, "export_orders", storetest.NewID(), "orders")
	first := serve(h.h, req)
	require.Empty(t, codeOf(first), "%.200s", first.Body)
	require.Greater(t, len(first.Body), mib-100)
	require.Zero(t, last().EvictedEarly)
	again := serve(h.h, req)
	require.Equal(t, string(first.Body), string(again.Body), "the repeat gets the first answer")
	require.True(t, last().Replayed)
	require.Equal(t, 1, runs, "the tool runs once")

	req = signedCall(t, "export_orders", storetest.NewID(), "random")
	first = serve(h.h, req)
	require.Empty(t, codeOf(first), "%.200s", first.Body)
	require.Greater(t, len(first.Body), mib-100)
	require.Equal(t, 1, last().EvictedEarly, "the answer that could not be kept is reported")
	require.Contains(t, h.logs.String(), "dropped answers before their TTL")
	again = serve(h.h, req)
	require.Empty(t, codeOf(again), "%.200s", again.Body)
	require.False(t, last().Replayed, "the repeat is run, not replayed")
	require.Equal(t, 3, runs, "the repeat of an answer not kept runs the tool again")

	body := []byte(`{"op":"diagnostics"}`)
	k, err := protocol.ParseKey(storetest.Key)
	require.NoError(t, err)
	report := h.h.Serve(context.Background(), protocol.Request{Method: http.MethodPost, Signature: k.Sign(time.Now(), body), BodyBytes: body})
	var r struct {
		Result struct{ Store map[string]any }
	}
	require.NoError(t, json.Unmarshal(report.Body, &r), "%s", report.Body)
	require.Equal(t, "dynamodb", r.Result.Store["kind"])
	require.Equal(t, true, r.Result.Store["reachable"])
	require.EqualValues(t, 2, r.Result.Store["evictedEarly"], "both runs' answers were dropped")
}
