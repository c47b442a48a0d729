package protocol_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/internal/memstore"
	"github.com/median-go/median/protocol/storetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Goroutine leaks are caught by TestMain in main_test.go (goleak). The
// store's own cases (eviction order, TTLs, the measured per-entry overhead)
// are in protocol/internal/memstore; these check it as the core uses it.

func TestMemoryStoreBehaviour(t *testing.T) {
	storetest.Run(t, func(t *testing.T) protocol.Store {
		return protocol.MemoryStoreForTest(0, nil)
	})
}

func TestMemoryStoreHandlers(t *testing.T) {
	// One process: both handlers share the store, as handlers of one
	// instance do.
	storetest.RunHandlers(t, func(t *testing.T) (protocol.Store, protocol.Store) {
		s := protocol.MemoryStoreForTest(0, nil)
		return s, s
	})
}

// The heap tests serve many calls through a real Handler on the default
// memory store with a small budget, and check that the live heap grows by
// no more than the budget and a little slack: before the store was bounded
// in bytes, 10,000 calls with 100 KB answers grew it by 1 GB.
const (
	heapBudget = 8 << 20
	heapSlack  = 2 << 20 // GC noise, the Handler's own growth
)

// liveHeap returns the live heap after a full collection.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

type heapInput struct {
	OrderID string `json:"orderId"`
}

// lookupHandler is a Handler on the default memory store with cfg's other
// settings, whose lookup tool answers answer(its input); serveCall calls it.
func lookupHandler[T any](t *testing.T, cfg protocol.Config, answer func(heapInput) T) *protocol.Handler {
	t.Helper()
	cfg.Keys = []string{storetest.Key}
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Tools = []*protocol.Tool{protocol.NewTool("lookup", protocol.RiskLow, "Looks an order up.",
		func(ctx context.Context, c protocol.ToolCall[heapInput]) (T, error) { return answer(c.Input), nil })}
	h, err := protocol.New(cfg)
	require.NoError(t, err)
	return h
}

// heapHandler is a lookupHandler with heapBudget whose tool answers
// answerSize bytes.
func heapHandler(t *testing.T, answerSize int, obs func(context.Context, protocol.Event)) *protocol.Handler {
	big := strings.Repeat("a", answerSize)
	return lookupHandler(t, protocol.Config{ReplayMaxBytes: heapBudget, Observer: obs}, func(heapInput) string { return big })
}

// serveCall serves a signed lookup call with toolCallId id.
func serveCall(t *testing.T, h *protocol.Handler, id string) protocol.Response {
	t.Helper()
	body := fmt.Appendf(nil, `{"tool":"lookup","toolCallId":%q,"input":{"orderId":"A-1"},`+
		`"context":{"conversationId":"conv_1","risk":"low","visitor":{"verified":false}}}`, id)
	key, err := protocol.ParseKey(storetest.Key)
	require.NoError(t, err)
	sig := key.Sign(time.Now(), body)
	resp := h.Serve(context.Background(), protocol.Request{Method: http.MethodPost, Signature: sig, BodyBytes: body, ContentLength: int64(len(body))})
	require.Equal(t, http.StatusOK, resp.Status, "%.200s", resp.Body)
	require.Empty(t, codeOf(resp), "%.200s", resp.Body)
	return resp
}

// evictions sums Event.EvictedEarly.
type evictions struct {
	mu sync.Mutex
	n  int
}

func (e *evictions) add(_ context.Context, ev protocol.Event) {
	e.mu.Lock()
	e.n += ev.EvictedEarly
	e.mu.Unlock()
}

func (e *evictions) get() int { e.mu.Lock(); defer e.mu.Unlock(); return e.n }

func TestMemoryStoreHeapWithLargeAnswers(t *testing.T) {
	const calls, answerSize = 300, 100 << 10 // 30 MB of answers through an 8 MiB budget
	var evicted evictions
	h := heapHandler(t, answerSize, evicted.add)
	serveCall(t, h, "warm_up")
	before := liveHeap()
	for i := range calls {
		serveCall(t, h, fmt.Sprintf("call_%d", i))
	}
	grown := liveHeap() - before
	t.Logf("%d calls with %d KB answers: heap +%.1f MiB (budget %d MiB); the store charges %.1f MiB; %d answers reported dropped early",
		calls, answerSize>>10, float64(grown)/(1<<20), heapBudget>>20, float64(protocol.MemoryStoreBytes(h))/(1<<20), evicted.get())
	require.LessOrEqual(t, protocol.MemoryStoreBytes(h), int64(heapBudget))
	require.Less(t, grown, int64(heapBudget+heapSlack), "the heap must grow by no more than the budget")
	// About budget / answer answers fit; the rest went early, each reported.
	kept := heapBudget / answerSize
	assert.InDelta(t, calls+1-kept, evicted.get(), 10, "every answer dropped before its TTL is reported")
	runtime.KeepAlive(h)
}

func TestMemoryStoreHeapWithLongIDs(t *testing.T) {
	const calls, idSize = 20, 700 << 10 // 14 MB of toolCallIds through an 8 MiB budget
	h := heapHandler(t, 100, nil)
	serveCall(t, h, "warm_up")
	prefix := strings.Repeat("x", idSize)
	before := liveHeap()
	for i := range calls {
		serveCall(t, h, fmt.Sprintf("%s_%d", prefix, i))
	}
	grown := liveHeap() - before
	runtime.KeepAlive(prefix)
	t.Logf("%d calls with %d KB ids: heap +%.1f KiB; the store charges %.1f KiB",
		calls, idSize>>10, float64(grown)/(1<<10), float64(protocol.MemoryStoreBytes(h))/(1<<10))
	require.Less(t, grown, int64(heapBudget+heapSlack), "the heap must grow by no more than the budget")
	require.Less(t, protocol.MemoryStoreBytes(h), int64(calls*1024), "an id costs a fixed-size digest")
	runtime.KeepAlive(h)
}

func TestMemoryStoreLongIDCostsWhatAShortOneCosts(t *testing.T) {
	cost := func(id string) int64 {
		h := lookupHandler(t, protocol.Config{MaxBodyBytes: 2 << 20}, func(heapInput) string { return "shipped" })
		serveCall(t, h, id)
		return protocol.MemoryStoreBytes(h)
	}
	short := cost("call_0123456789abcdefghijklmno") // 30 bytes
	long := cost(strings.Repeat("x", 1<<20))
	require.Positive(t, short)
	require.Equal(t, short, long, "a 1 MiB toolCallId must cost the store what a 30-byte one costs")
}

// The benchmarks compare a call's cost without replay protection and with
// the default memory store (see storetest.BenchmarkServe); the store's own
// cost is BenchmarkClaimSave in protocol/internal/memstore.

func BenchmarkServeNoStore(b *testing.B) { storetest.BenchmarkServe(b, nil) }

func BenchmarkServeMemoryStore(b *testing.B) {
	storetest.BenchmarkServe(b, protocol.MemoryStoreForTest(0, nil))
}

// codeOf returns the error code an answer carries, or "" for a result.
func codeOf(resp protocol.Response) protocol.Code {
	var a struct {
		Error *struct {
			Code protocol.Code `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(resp.Body, &a) != nil || a.Error == nil {
		return ""
	}
	return a.Error.Code
}

// TestMemoryStoreBytesPerSmallAnswer serves small calls through a Handler
// and reads what the default memory store charges for each kept answer;
// docs/PERFORMANCE.md's capacity model uses the figure it logs. It fails
// when an answer costs more than the charge the store's heap test checks
// (an answer's bytes in their size class + the entry's fixed overhead).
func TestMemoryStoreBytesPerSmallAnswer(t *testing.T) {
	h := lookupHandler(t, protocol.Config{}, func(in heapInput) map[string]string {
		return map[string]string{"orderId": in.OrderID, "status": "shipped"}
	})
	const n = 1000
	var answer []byte
	for i := range n {
		answer = serveCall(t, h, fmt.Sprintf("call_%024d", i)).Body
	}
	perAnswer := protocol.MemoryStoreBytes(h) / n
	t.Logf("the memory store charges %d bytes per kept answer (a %d-byte answer)", perAnswer, len(answer))
	kept := cap(bytes.Clone(answer)) // the answer's size class
	require.Equal(t, int64(memstore.EntryOverhead+kept), perAnswer, "a %d-byte answer is kept in a %d-byte allocation, plus the entry", len(answer), kept)
}
