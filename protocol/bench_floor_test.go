package protocol

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/median-go/median/internal/testonly/testsupport"
)

// The benchmarks in this file put the core beside its floor: the work no
// implementation of the contract can skip. Compare them with benchstat:
//
//	go test ./protocol -run '^$' -bench 'Verify$|TypedCall' -benchmem -count 8 > floor.txt
//	go run golang.org/x/perf/cmd/benchstat@latest -col /impl floor.txt

// benchSizes are the body sizes the signature check is measured at.
var benchSizes = []int{1 << 10, 16 << 10}

// BenchmarkVerify checks a whole median-signature header over a body — parse
// the header, check the window, compare the MAC — beside the floor: one
// HMAC-SHA256 of "<t>.<body>" with a key set up once.
func BenchmarkVerify(b *testing.B) {
	k := mustParseKey(testKey)
	for _, size := range benchSizes {
		body := []byte(strings.Repeat("x", size))
		header := k.Sign(testNow, body)
		b.Run(fmt.Sprintf("size=%dKiB/impl=floor", size>>10), func(b *testing.B) {
			f := newFloorMAC()
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				f.of(body)
			}
		})
		b.Run(fmt.Sprintf("size=%dKiB/impl=median", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				if err := VerifySignature(header, body, testNow, defaultTolerance, k); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkVerifyPaired is BenchmarkVerify at 1 KiB as a paired
// comparison (testsupport.Paired): VerifySignature and the floor's bare
// HMAC in alternating blocks of 256 checks. Its median/floor is the ratio
// the VerifySignature target reads; BenchmarkVerify gives allocations.
func BenchmarkVerifyPaired(b *testing.B) {
	k := mustParseKey(testKey)
	body := []byte(strings.Repeat("x", 1<<10))
	header := k.Sign(testNow, body)
	f := newFloorMAC()
	testsupport.Paired(b, 256, [2]string{"median", "floor"}, [2]func(int){
		func(int) {
			if err := VerifySignature(header, body, testNow, defaultTolerance, k); err != nil {
				b.Fatal(err)
			}
		},
		func(int) { f.of(body) },
	}, nil)
}

// orderInput is the typed input of the full-call benchmark: JSON with the
// constraints a real tool declares, about 1 KiB or 1 MiB of it.
type orderInput struct {
	OrderID  string      `json:"orderId" jsonschema:"minLength=1,maxLength=64,pattern=^[A-Z]-[0-9]+$"`
	Customer string      `json:"customer" jsonschema:"minLength=1"`
	Priority string      `json:"priority,omitempty" jsonschema:"enum=low,enum=normal,enum=high"`
	Lines    []orderLine `json:"lines" jsonschema:"minItems=1,maxItems=100000"`
	Note     string      `json:"note,omitempty" jsonschema:"maxLength=500"`
}

type orderLine struct {
	SKU      string  `json:"sku" jsonschema:"minLength=1"`
	Quantity int     `json:"quantity" jsonschema:"minimum=1,maximum=1000"`
	Price    float64 `json:"price" jsonschema:"minimum=0"`
	Gift     bool    `json:"gift,omitempty"`
}

type orderResult struct {
	OrderID string  `json:"orderId"`
	Status  string  `json:"status"`
	Lines   int     `json:"lines"`
	Total   float64 `json:"total"`
}

func quoteOrder(in orderInput) orderResult {
	out := orderResult{OrderID: in.OrderID, Status: "quoted", Lines: len(in.Lines)}
	for _, l := range in.Lines {
		out.Total += float64(l.Quantity) * l.Price
	}
	return out
}

// quoteOrderTool is the typed tool of the full-call benchmarks: quoteOrder
// behind the core.
func quoteOrderTool() *Tool {
	return NewTool("quote_order", RiskLow, "Quotes an order.", func(_ context.Context, c ToolCall[orderInput]) (orderResult, error) {
		return quoteOrder(c.Input), nil
	})
}

// quoteOrderCalls returns n quote_order calls with input, each with its own
// toolCallId, signed with testKey at testNow: made before timing, so that
// signing is not measured and no call is answered from the replay store.
func quoteOrderCalls(n int, input string) []Request {
	k := mustParseKey(testKey)
	reqs := make([]Request, n)
	for i := range reqs {
		body := []byte(toolCall("quote_order", fmt.Sprintf("call_%032d", i), input))
		reqs[i] = Request{Method: http.MethodPost, Signature: k.Sign(testNow, body), BodyBytes: body, ContentLength: int64(len(body))}
	}
	return reqs
}

// orderInputJSON returns an input for orderInput whose call body (see
// toolCall) is at most bodySize bytes and close to it.
func orderInputJSON(bodySize int) string {
	head := `{"orderId":"A-1001","customer":"Ada Lovelace","priority":"high","lines":[`
	tail := `],"note":"Leave the parcel at the back door, please; the front bell is broken."}`
	room := bodySize - len(toolCall("quote_order", "call_0123456789abcdef0123456789abcdef", head+tail))
	var lines []string
	for i := 0; ; i++ {
		line := fmt.Sprintf(`{"sku":"SKU-%04d-blue-large","quantity":%d,"price":%d.5,"gift":%t}`, i%10000, i%1000+1, 10+i%90, i%2 == 0)
		if room -= len(line) + 1; room < 0 {
			break
		}
		lines = append(lines, line)
	}
	return head + strings.Join(lines, ",") + tail
}

// typedSizes are the body sizes of the typed-call benchmarks: a usual call
// and one at the default body limit.
var typedSizes = []struct {
	name string
	size int
}{{"1KiB", 1 << 10}, {"1MiB", defaultMaxBodyBytes}}

// byHandBody is the whole body as a by-hand endpoint would decode it: one
// struct holding the typed input.
type byHandBody struct {
	Tool       string     `json:"tool"`
	ToolCallID string     `json:"toolCallId"`
	Input      orderInput `json:"input"`
	Context    struct {
		ConversationID string `json:"conversationId"`
		Risk           string `json:"risk"`
		Visitor        struct {
			Verified   bool   `json:"verified"`
			ExternalID string `json:"externalId"`
			Email      string `json:"email"`
			Name       string `json:"name"`
		} `json:"visitor"`
		ApprovedBy string `json:"approvedBy"`
	} `json:"context"`
}

// floorMAC is the floor of every benchmark here: the HMAC-SHA256 of
// "<t>.<body>" under testKey's secret, with the key set up once and t the
// one testNow signs. It is not safe for concurrent use: one per goroutine.
type floorMAC struct {
	mac         hash.Hash
	prefix, sum []byte
}

func newFloorMAC() *floorMAC {
	secret, err := deriveSecret(testKey)
	if err != nil {
		panic(err) // testKey is a usable key
	}
	return &floorMAC{mac: hmac.New(sha256.New, secret), prefix: []byte(strconv.FormatInt(testNow.UnixMilli(), 10) + "."), sum: make([]byte, 0, sha256.Size)}
}

// of computes the MAC of body.
func (f *floorMAC) of(body []byte) {
	f.mac.Reset()
	f.mac.Write(f.prefix)
	f.mac.Write(body)
	f.sum = f.mac.Sum(f.sum[:0])
}

// byHand serves body as the by-hand endpoint of the typed-call benchmarks:
// the MAC, json.Unmarshal (encoding/json) of the whole body into one
// struct holding the typed input, and json.Marshal of the result; no
// schema check, no store.
func (f *floorMAC) byHand(body []byte) error {
	f.of(body)
	var w byHandBody
	if err := json.Unmarshal(body, &w); err != nil {
		return err
	}
	_, err := json.Marshal(quoteOrder(w.Input))
	return err
}

// BenchmarkTypedCall answers a signed typed tool call of 1 KiB and 1 MiB
// through Handler.Serve (signature, decode, schema validation, bind, tool,
// encoded result; with the default replay store, each call a new
// toolCallId, and without replay protection) beside:
//
//   - floor: the HMAC of the body, json.Unmarshal (encoding/json) of the
//     input alone into the tool's Go type and json.Marshal of the result;
//   - byhand: a one-pass endpoint written by hand: the HMAC, json.Unmarshal
//     of the whole body into one struct holding the typed input, and
//     json.Marshal of the result, with no schema check.
func BenchmarkTypedCall(b *testing.B) {
	tool := quoteOrderTool()
	for _, size := range typedSizes {
		input := orderInputJSON(size.size)
		body := []byte(toolCall("quote_order", "call_0123456789abcdef0123456789abcdef", input))
		inputBytes := []byte(input)
		b.Run("size="+size.name+"/impl=floor", func(b *testing.B) {
			f := newFloorMAC()
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				f.of(body)
				var in orderInput
				if err := json.Unmarshal(inputBytes, &in); err != nil {
					b.Fatal(err)
				}
				if _, err := json.Marshal(quoteOrder(in)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("size="+size.name+"/impl=byhand", func(b *testing.B) {
			f := newFloorMAC()
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if err := f.byHand(body); err != nil {
					b.Fatal(err)
				}
			}
		})
		// Up to 16 MiB of bodies, the same for median and median-noreplay.
		reqs := quoteOrderCalls(min(1024, (16<<20)/size.size), input)
		for _, impl := range []struct {
			name     string
			noReplay bool
		}{{"median", false}, {"median-noreplay", true}} {
			b.Run("size="+size.name+"/impl="+impl.name, func(b *testing.B) {
				h := benchHandler(b, Config{Tools: []*Tool{tool}, DisableReplayProtection: impl.noReplay})
				b.ReportAllocs()
				b.SetBytes(int64(len(body)))
				serveUnique(b, h, reqs)
			})
		}
	}
}

// BenchmarkTypedCallPaired is BenchmarkTypedCall's 1 KiB call through
// Handler.Serve with the default store (median) against its by-hand
// endpoint (byhand), as a paired measurement (testsupport.Paired): both
// serve the same 1,024 distinct signed calls in alternating blocks of 16,
// byhand from their body bytes. The store is replaced, untimed, after each
// round of 1,024 calls, so no call is answered from it. It reports
// median/byhand.
func BenchmarkTypedCallPaired(b *testing.B) {
	reqs := quoteOrderCalls(1024, orderInputJSON(1<<10))
	h := benchHandler(b, Config{Tools: []*Tool{quoteOrderTool()}})
	f := newFloorMAC()
	byhand := func(i int) {
		if err := f.byHand(reqs[i%len(reqs)].BodyBytes); err != nil {
			b.Fatal(err)
		}
	}
	testsupport.Paired(b, 16, [2]string{"median", "byhand"}, [2]func(int){pairedSide(b, h, reqs), byhand}, newStoreEachRound(h, len(reqs)))
}
