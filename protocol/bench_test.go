package protocol

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/median-go/median/internal/testonly/testsupport"
)

// Run with: go test ./protocol -run '^$' -bench . -benchmem

// benchHandler returns a Handler with testKey, a fixed clock, a silent
// logger and cfg's tools, or the echo tool when cfg has none.
func benchHandler(b *testing.B, cfg Config) *Handler {
	b.Helper()
	cfg.Keys = []string{testKey}
	cfg.Now = func() time.Time { return testNow }
	cfg.Logger = discardLogger()
	if cfg.Tools == nil {
		cfg.Tools = []*Tool{echoTool(nil)}
	}
	h, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return h
}

// BenchmarkServe: a signed small ToolCall end to end, replay disabled.
func BenchmarkServe(b *testing.B) {
	h := benchHandler(b, Config{DisableReplayProtection: true})
	req := post(toolCall("echo", "call_0123456789abcdef0123456789abcdef", `{"orderId":1001,"note":"gift wrap"}`))
	ctx := context.Background()
	b.ReportAllocs()
	b.SetBytes(int64(len(req.BodyBytes)))
	for b.Loop() {
		if resp := h.Serve(ctx, req); resp.Status != 200 || resp.code != "" {
			b.Fatalf("%d %s", resp.Status, resp.Body)
		}
	}
}

// BenchmarkServeReplayMemory: the same with the default memory store and a
// unique toolCallId per call.
func BenchmarkServeReplayMemory(b *testing.B) {
	h := benchHandler(b, Config{})
	k := mustParseKey(testKey)
	// Build the requests before timing, so signing is not measured.
	reqs := make([]Request, 0, 1024)
	for i := range 1024 {
		body := []byte(toolCall("echo", "call_"+strconv.Itoa(i), `{"orderId":1001,"note":"gift wrap"}`))
		reqs = append(reqs, Request{Method: "POST", Signature: k.Sign(testNow, body), BodyBytes: body, ContentLength: int64(len(body))})
	}
	b.ReportAllocs()
	serveUnique(b, h, reqs)
}

// BenchmarkParseSignature: one header with one v1.
func BenchmarkParseSignature(b *testing.B) {
	header := mustParseKey(testKey).Sign(testNow, []byte(`{"op":"diagnostics"}`))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseSignature(header); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeBody: a full ToolCall body.
func BenchmarkDecodeBody(b *testing.B) {
	body := []byte(strings.TrimSpace(fullCall))
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, _, err := decodeBody(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeBind decodes a typed call's body and binds its input, at
// 1 KiB and 1 MiB, with each JSON library considered (docs/JSON.md): v1
// (encoding/json) and v2 (github.com/go-json-experiment/json) decode the
// whole body into one struct holding the typed input, in one pass, checking
// nothing; median is the core's
// path: decodeBody then Call.BindInput (both with v2), and
// median+validate adds the schema check between them.
func BenchmarkDecodeBind(b *testing.B) {
	tool := quoteOrderTool()
	if err := tool.Err(); err != nil {
		b.Fatal(err)
	}
	for _, size := range typedSizes {
		body := []byte(toolCall("quote_order", "call_0123456789abcdef0123456789abcdef", orderInputJSON(size.size)))
		for _, impl := range []struct {
			name   string
			decode func() error
		}{
			{"v1", func() error { var w byHandBody; return json.Unmarshal(body, &w) }},
			{"v2", func() error { var w byHandBody; return jsonv2.Unmarshal(body, &w) }},
			{"median", func() error {
				_, call, err := decodeBody(body)
				if err != nil {
					return err
				}
				var in orderInput
				return call.BindInput(&in)
			}},
			{"median+validate", func() error {
				_, call, err := decodeBody(body)
				if err != nil {
					return err
				}
				if err := tool.checkInput(call.RawInput); err != nil {
					return err
				}
				var in orderInput
				return call.BindInput(&in)
			}},
		} {
			b.Run("size="+size.name+"/impl="+impl.name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(body)))
				for b.Loop() {
					if err := impl.decode(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// freshResult returns an error unless resp is a result that did not come
// from the replay store: what every benchmark here serving a new
// toolCallId must get.
func freshResult(resp Response) error {
	if resp.Status != 200 || resp.code != "" || resp.replayed {
		return fmt.Errorf("%d %.200s", resp.Status, resp.Body)
	}
	return nil
}

// serveNew serves req, a call whose toolCallId h's store does not hold,
// and fails b unless it gets a fresh result (freshResult).
func serveNew(b *testing.B, h *Handler, req Request) {
	if err := freshResult(h.Serve(context.Background(), req)); err != nil {
		b.Fatal(err)
	}
}

// pairedSide is one side of a paired benchmark over reqs: the i-th call it
// serves is reqs[i%len(reqs)], through h (serveNew).
func pairedSide(b *testing.B, h *Handler, reqs []Request) func(int) {
	return func(i int) { serveNew(b, h, reqs[i%len(reqs)]) }
}

// newStoreEachRound is a paired benchmark's between: it gives h a new
// memory store, untimed, before each round of n calls but the first, so no
// call is answered from the store.
func newStoreEachRound(h *Handler, n int) func(next int) {
	return func(next int) {
		if next > 0 && next%n == 0 {
			h.cfg.Store = newMemoryStore(0, nil)
		}
	}
}

// serveUnique serves reqs in turn, each with its own toolCallId, and gives h
// a fresh memory store (untimed) after each round when it has one, so every
// call claims a new id and none is answered from the store.
func serveUnique(b *testing.B, h *Handler, reqs []Request) {
	i := 0
	for b.Loop() {
		if i == len(reqs) {
			i = 0
			if h.cfg.Store != nil {
				b.StopTimer()
				h.cfg.Store = newMemoryStore(0, nil)
				b.StartTimer()
			}
		}
		serveNew(b, h, reqs[i])
		i++
	}
}

// BenchmarkTypedCallParallel serves the 1 KiB typed call of
// BenchmarkTypedCall from every processor at once (b.RunParallel), with the
// default memory store (impl=median, each call its own toolCallId, none
// answered from the store), without replay protection
// (impl=median-noreplay), and beside the by-hand endpoint of
// BenchmarkTypedCall (impl=byhand: each goroutine its own HMAC, set up
// once, and encoding/json; it shares only the benchmark's own atomic
// index into the requests, as every impl does). Run it with -cpu 1,2 and
// compare the columns of benchstat -col /gomaxprocs: ns/op at 2 is the
// time per call with two processors serving, so time at 1 / time at 2 is
// how much more two processors serve. It also reports the process's CPU
// time per call (cpu-ns/op, the collector's included), which other jobs on
// a shared machine barely move: what a call costs more at 2 than at 1
// (contention, cache lines moving between cores, the collector and the
// allocator) bounds the scaling at 2 / that ratio. byhand shows that bound
// for code of the contract's work with no lock and no counter of its own.
func BenchmarkTypedCallParallel(b *testing.B) {
	tool := quoteOrderTool()
	input := orderInputJSON(1 << 10)
	b.Run("impl=byhand", func(b *testing.B) {
		parallelCalls(b, input, func() func(Request) error {
			f := newFloorMAC() // one per goroutine
			return func(req Request) error { return f.byHand(req.BodyBytes) }
		})
	})
	for _, impl := range []struct {
		name     string
		noReplay bool
	}{{"median", false}, {"median-noreplay", true}} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			// A new Handler (and store) each time the benchmark runs.
			h := benchHandler(b, Config{Tools: []*Tool{tool}, DisableReplayProtection: impl.noReplay})
			ctx := context.Background()
			parallelCalls(b, input, func() func(Request) error {
				return func(req Request) error { return freshResult(h.Serve(ctx, req)) }
			})
		})
	}
}

// parallelCalls is the loop of BenchmarkTypedCallParallel: b.N quote_order
// calls with input, each with its own toolCallId and signed before timing,
// served from every processor at once by the function serve returns for
// each goroutine. It reports the process's CPU time per call as
// cpu-ns/op beside the wall time.
func parallelCalls(b *testing.B, input string, serve func() func(Request) error) {
	reqs := quoteOrderCalls(b.N, input)
	var next atomic.Int64
	b.ReportAllocs()
	b.SetBytes(int64(len(reqs[0].BodyBytes)))
	b.ResetTimer()
	cpu := processCPU()
	b.RunParallel(func(pb *testing.PB) {
		call := serve()
		for pb.Next() {
			if err := call(reqs[next.Add(1)-1]); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
}

// BenchmarkTypedCallStorePaired measures what the default replay store adds
// to the 1 KiB typed call of BenchmarkTypedCall as a paired comparison
// (testsupport.Paired): a Handler with the store and one without serve the
// same 1,024 distinct calls in alternating blocks of 16. It reports
// store-ns/op, nostore-ns/op and their ratio, store/nostore. The store is
// replaced after each round of 1,024 calls, untimed, as in
// BenchmarkTypedCall, so no call is answered from it.
func BenchmarkTypedCallStorePaired(b *testing.B) {
	tool := quoteOrderTool()
	reqs := quoteOrderCalls(1024, orderInputJSON(1<<10))
	with := benchHandler(b, Config{Tools: []*Tool{tool}})
	without := benchHandler(b, Config{Tools: []*Tool{tool}, DisableReplayProtection: true})
	testsupport.Paired(b, 16, [2]string{"store", "nostore"}, [2]func(int){pairedSide(b, with, reqs), pairedSide(b, without, reqs)},
		newStoreEachRound(with, len(reqs)))
}

// BenchmarkTypedCallStoreInUse is BenchmarkTypedCallStorePaired against a
// store in use instead of a fresh one: the store is never replaced, and
// each answer is kept for 2 ms (Config.ReplayTTL), so by the time its id
// comes round again (2,048 calls later) it has expired, and each call
// drops one entry as it adds one, as a running server's store does. With
// kept=0 the store holds only those (about a hundred); with kept=100000 it
// also holds 100,000 answers of other ids for an hour, an index of the
// size a busy server's store has (charged 304 B each, 30 MB: nearly half
// of the default 64 MiB), which a call's lookup reaches out of the
// processor's caches.
func BenchmarkTypedCallStoreInUse(b *testing.B) {
	for _, kept := range []int{0, 100_000} {
		b.Run(fmt.Sprint("kept=", kept), func(b *testing.B) {
			tool := quoteOrderTool()
			reqs := quoteOrderCalls(1024, orderInputJSON(1<<10))
			with := benchHandler(b, Config{Tools: []*Tool{tool}, ReplayTTL: 2 * time.Millisecond})
			without := benchHandler(b, Config{Tools: []*Tool{tool}, DisableReplayProtection: true})
			mem, ctx := with.cfg.Store.(memoryStore), context.Background()
			for i := range kept {
				id := fmt.Sprint("other_", i)
				answer := []byte(`{"result":{"orderId":"A-1001","status":"quoted","lines":3,"total":42.5}}`)
				if _, err := mem.Save(ctx, id, id, answer, time.Hour); err != nil {
					b.Fatal(err)
				}
			}
			testsupport.Paired(b, 16, [2]string{"store", "nostore"}, [2]func(int){pairedSide(b, with, reqs), pairedSide(b, without, reqs)}, nil)
			if early := with.stats.evicted.Load(); early > 0 {
				b.Fatalf("%d answers were dropped early: the store is over its budget", early)
			}
		})
	}
}
