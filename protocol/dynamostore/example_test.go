package dynamostore_test

import (
	"context"
	"log"
	"net/http"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/dynamostore"
)

// Every instance (each Lambda instance, or each server) points at the same
// table: a call replayed on any of them gets the first answer, and its
// tool runs once. The client takes the region and credentials from the
// environment, as on Lambda.
func Example() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	store, err := dynamostore.New(dynamodb.NewFromConfig(cfg), dynamostore.Options{Table: os.Getenv("MEDIAN_CALLS_TABLE")})
	if err != nil {
		log.Fatal(err)
	}
	h, err := protocol.New(protocol.Config{Store: store, Tools: []*protocol.Tool{cancelOrderTool()}})
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(http.ListenAndServe(":8080", h))
}

// At deploy time or on a first run, create the table: on-demand billing,
// TTL on. It returns at once when the table is there.
func ExampleCreateTable() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if err := dynamostore.CreateTable(ctx, dynamodb.NewFromConfig(cfg), dynamostore.Options{}); err != nil {
		log.Fatal(err)
	}
}

// cancelOrderTool changes an order: with the store, a replayed call does
// not cancel twice.
func cancelOrderTool() *protocol.Tool {
	return protocol.NewTool("cancel_order", protocol.RiskHigh, "Cancel an order by its id.",
		func(ctx context.Context, call protocol.ToolCall[orderInput]) (string, error) {
			return "cancelled", nil
		})
}
