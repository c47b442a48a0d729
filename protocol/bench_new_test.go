package protocol

import (
	"context"
	"strconv"
	"testing"
)

// newBenchInput is a tool input of the usual size: three fields with
// their constraints and descriptions. Each instantiation is a type of its
// own, so each of the 20 tools has its own schema to infer and compile, as
// 20 tools of an app do.
type newBenchInput[T any] struct {
	OrderID  string `json:"orderId" jsonschema:"minLength=1,maxLength=64,description=The order's id as the customer gives it."`
	Quantity int    `json:"quantity,omitempty" jsonschema:"minimum=1,maximum=100,description=How many items."`
	Note     string `json:"note,omitempty" jsonschema:"maxLength=500,description=A note for the team."`
	_        [0]T   // makes each instantiation a type of its own
}

// newBenchResult is a tool's result type.
type newBenchResult struct {
	OrderID string `json:"orderId"`
	Status  string `json:"status"`
}

func newBenchTool[T any](name string) *Tool {
	return NewTool(name, RiskLow, "Tool "+name+": looks an order up by its id and says its status.",
		func(ctx context.Context, call ToolCall[newBenchInput[T]]) (newBenchResult, error) {
			return newBenchResult{OrderID: call.Input.OrderID, Status: "processing"}, nil
		})
}

// newBenchTools returns 20 tools, each with an input type of its own.
func newBenchTools() []*Tool {
	type (
		t0  struct{}
		t1  struct{}
		t2  struct{}
		t3  struct{}
		t4  struct{}
		t5  struct{}
		t6  struct{}
		t7  struct{}
		t8  struct{}
		t9  struct{}
		t10 struct{}
		t11 struct{}
		t12 struct{}
		t13 struct{}
		t14 struct{}
		t15 struct{}
		t16 struct{}
		t17 struct{}
		t18 struct{}
		t19 struct{}
	)
	n := func(i int) string { return "tool_" + strconv.Itoa(i) }
	return []*Tool{
		newBenchTool[t0](n(0)), newBenchTool[t1](n(1)), newBenchTool[t2](n(2)), newBenchTool[t3](n(3)),
		newBenchTool[t4](n(4)), newBenchTool[t5](n(5)), newBenchTool[t6](n(6)), newBenchTool[t7](n(7)),
		newBenchTool[t8](n(8)), newBenchTool[t9](n(9)), newBenchTool[t10](n(10)), newBenchTool[t11](n(11)),
		newBenchTool[t12](n(12)), newBenchTool[t13](n(13)), newBenchTool[t14](n(14)), newBenchTool[t15](n(15)),
		newBenchTool[t16](n(16)), newBenchTool[t17](n(17)), newBenchTool[t18](n(18)), newBenchTool[t19](n(19)),
	}
}

// BenchmarkNew20Tools is the endpoint's share of a cold start (docs/
// PERFORMANCE.md, "Cold start on Lambda"): what a function's init does
// before its first call, with 20 tools. tools+new declares the tools
// (NewTool infers and compiles each input's schema) and builds the
// Handler; new builds the Handler from tools declared once.
func BenchmarkNew20Tools(b *testing.B) {
	cfg := func(tools []*Tool) Config {
		return Config{Keys: []string{testKey}, Logger: discardLogger(), Tools: tools}
	}
	b.Run("part=tools+new", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			h, err := New(cfg(newBenchTools()))
			if err != nil {
				b.Fatal(err)
			}
			_ = h.Close()
		}
	})
	b.Run("part=new", func(b *testing.B) {
		tools := newBenchTools()
		b.ReportAllocs()
		for b.Loop() {
			h, err := New(cfg(tools))
			if err != nil {
				b.Fatal(err)
			}
			_ = h.Close()
		}
	})
}

// TestNewBenchToolsAreDistinct: the benchmark's 20 tools build, each with
// its own name, and the Handler's manifest lists all 20.
func TestNewBenchToolsAreDistinct(t *testing.T) {
	h, err := New(Config{Keys: []string{testKey}, Logger: discardLogger(), Tools: newBenchTools()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if got := len(h.tools); got != 20 {
		t.Fatalf("the benchmark's Handler has %d tools, want 20", got)
	}
}
