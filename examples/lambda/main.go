// Command lambda is a Median tool endpoint on AWS Lambda behind a Function
// URL, with replay protection in DynamoDB (protocol/dynamostore): every
// instance answers a repeated toolCallId with the first answer, and its
// tool runs once. Build it as Lambda's bootstrap (see README.md):
//
//	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -tags lambda.norpc -trimpath -ldflags='-s -w' -o bootstrap ./examples/lambda
//
// It reads MEDIAN_KEY (or MEDIAN_KEY_FILE) as the core does, the table's
// name from MEDIAN_CALLS_TABLE, and the AWS region, credentials and
// endpoint as the AWS SDK does (AWS_REGION, AWS_ENDPOINT_URL_DYNAMODB, …).
// Without MEDIAN_CALLS_TABLE it keeps answers in the instance's memory,
// which protects one instance only, and says so in its log at start.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/median-go/median/lambdamedian"
	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/dynamostore"
)

// TableEnv names the DynamoDB table of the replay store.
const TableEnv = "MEDIAN_CALLS_TABLE"

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil)) // one JSON line per entry in CloudWatch
	h, err := newHandler(context.Background(), logger)
	if err != nil {
		logger.Error("the function cannot start", "error", err)
		os.Exit(1)
	}
	lambdamedian.Start(h)
}

// newHandler builds the endpoint: the two tools, and the DynamoDB store
// when TableEnv names a table. A key that is missing or unusable is not an
// error here: the Handler answers every call 500 with the contract's code
// and the core has logged why, which Median's own check shows the operator.
func newHandler(ctx context.Context, logger *slog.Logger) (*protocol.Handler, error) {
	cfg := protocol.Config{Tools: tools(newOrders()), Logger: logger}
	if table := os.Getenv(TableEnv); table != "" {
		awsCfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the AWS configuration: %w", err)
		}
		store, err := dynamostore.New(dynamodb.NewFromConfig(awsCfg), dynamostore.Options{Table: table})
		if err != nil {
			return nil, err
		}
		cfg.Store = store
	}
	h, err := protocol.New(cfg)
	if h == nil {
		return nil, err
	}
	return h, nil
}
