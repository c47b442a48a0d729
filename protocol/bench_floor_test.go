package protocol

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The benchmarks in this file put the core beside its floor: the work no
// implementation of the contract can skip. Compare them with benchstat:
//
//	go test ./protocol -run '^$' -bench 'Floor|Verify$|TypedCall' -benchmem -count 8 > floor.txt
//	go run golang.org/x/perf/cmd/benchstat@latest -col /impl floor.txt

// benchSizes are the body sizes the signature check is measured at.
var benchSizes = []int{1 << 10, 16 << 10}

// BenchmarkVerify checks a whole median-signature header over a body — parse
// the header, check the window, compare the MAC — beside the floor: one
// HMAC-SHA256 of "<t>.<body>" with a key set up once.
func BenchmarkVerify(b *testing.B) {
	k := mustParseKey(testKey)
	secret, err := deriveSecret(testKey)
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range benchSizes {
		body := []byte(strings.Repeat("x", size))
		header := k.Sign(testNow, body)
		prefix := []byte(strconv.FormatInt(testNow.UnixMilli(), 10) + ".")
		b.Run(fmt.Sprintf("size=%dKiB/impl=floor", size>>10), func(b *testing.B) {
			mac := hmac.New(sha256.New, secret)
			sum := make([]byte, 0, sha256.Size)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				mac.Reset()
				mac.Write(prefix)
				mac.Write(body)
				sum = mac.Sum(sum[:0])
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

// orderInput is the typed input of the full-call benchmark: about 1 KiB of
// JSON with the constraints a real tool declares.
type orderInput struct {
	OrderID  string      `json:"orderId" jsonschema:"minLength=1,maxLength=64,pattern=^[A-Z]-[0-9]+$"`
	Customer string      `json:"customer" jsonschema:"minLength=1"`
	Priority string      `json:"priority,omitempty" jsonschema:"enum=low,enum=normal,enum=high"`
	Lines    []orderLine `json:"lines" jsonschema:"minItems=1,maxItems=50"`
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

// orderInputJSON returns an input of about 1 KiB for orderInput.
func orderInputJSON() string {
	lines := make([]string, 0, 9)
	for i := range 9 {
		lines = append(lines, fmt.Sprintf(`{"sku":"SKU-%04d-blue-large","quantity":%d,"price":%d.5,"gift":%t}`, i, i+1, 10+i, i%2 == 0))
	}
	return `{"orderId":"A-1001","customer":"Ada Lovelace","priority":"high","lines":[` + strings.Join(lines, ",") + `],"note":"Leave the parcel at the back door, please; the front bell is broken."}`
}

// BenchmarkTypedCall answers a signed 1 KiB typed tool call through
// Handler.Serve (schema validation included, replay protection off) beside
// its floor: the HMAC of the body, json.Unmarshal of the same input into
// the tool's Go type and json.Marshal of the result.
func BenchmarkTypedCall(b *testing.B) {
	input := orderInputJSON()
	body := toolCall("quote_order", "call_0123456789abcdef0123456789abcdef", input)
	secret, err := deriveSecret(testKey)
	if err != nil {
		b.Fatal(err)
	}
	prefix := []byte(strconv.FormatInt(testNow.UnixMilli(), 10) + ".")
	bodyBytes, inputBytes := []byte(body), []byte(input)
	b.Run("size=1KiB/impl=floor", func(b *testing.B) {
		mac := hmac.New(sha256.New, secret)
		sum := make([]byte, 0, sha256.Size)
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			mac.Reset()
			mac.Write(prefix)
			mac.Write(bodyBytes)
			sum = mac.Sum(sum[:0])
			var in orderInput
			if err := json.Unmarshal(inputBytes, &in); err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(quoteOrder(in)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("size=1KiB/impl=median", func(b *testing.B) {
		tool := NewTool("quote_order", RiskLow, "Quotes an order.", func(_ context.Context, c ToolCall[orderInput]) (orderResult, error) {
			return quoteOrder(c.Input), nil
		})
		h, err := New(Config{Keys: []string{testKey}, Now: func() time.Time { return testNow }, Logger: discardLogger(), Tools: []*Tool{tool}, DisableReplayProtection: true})
		if err != nil {
			b.Fatal(err)
		}
		req := post(body)
		ctx := context.Background()
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if resp := h.Serve(ctx, req); resp.Status != 200 || resp.code != "" {
				b.Fatalf("%d %s", resp.Status, resp.Body)
			}
		}
	})
}
