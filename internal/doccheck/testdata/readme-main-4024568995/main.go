package main

import (
	"context"
	"log"
	"net/http"
	"os"

	"github.com/median-go/median/protocol"
)

type LookupInput struct {
	OrderID string `json:"orderId" jsonschema:"description=The order number, like A-1001"`
}

type Order struct {
	OrderID string `json:"orderId"`
	Status  string `json:"status"`
}

func main() {
	lookup := protocol.NewTool("lookup_order", protocol.RiskLow, "Look up one of the visitor's orders.",
		func(ctx context.Context, call protocol.ToolCall[LookupInput]) (Order, error) {
			if _, ok := call.Visitor.ExternalID(); !ok { // set only for a visitor Median verified
				return Order{}, protocol.Refuse("not_signed_in", "Ask the customer to sign in.")
			}
			return Order{OrderID: call.Input.OrderID, Status: "shipped"}, nil
		})
	h, err := protocol.New(protocol.Config{Tools: []*protocol.Tool{lookup}}) // the key from MEDIAN_KEY
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	h.Mount(mux, "/api/median")
	addr := os.Getenv("ADDR") // ":8080" in production
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	log.Fatal(http.ListenAndServe(addr, mux))
}
