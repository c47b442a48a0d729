package lambdamedian

import (
	"os"

	"github.com/median-go/median/internal/adapt/handlerinfo"
)

// onLambda reports whether the process runs as a Lambda function: Lambda
// sets AWS_LAMBDA_FUNCTION_NAME in every function's environment.
func onLambda() bool { return os.Getenv("AWS_LAMBDA_FUNCTION_NAME") != "" }

// warn logs, through the Handler's logger, what in its configuration
// (info) Lambda defeats: a body limit above what Lambda delivers, and, on
// Lambda, the in-memory replay store, which protects one instance of many.
func warn(info handlerinfo.Info) {
	if info.MaxBodyBytes > maxDeliveredBody {
		info.Logger.Warn("median: Config.MaxBodyBytes is above what AWS Lambda delivers: Lambda refuses an event over 6 MB itself, with an answer of its own, so a body between the two limits is never answered 413 invalid_body; set MaxBodyBytes at or below the limit given",
			"maxBodyBytes", info.MaxBodyBytes, "limit", maxDeliveredBody)
	}
	if info.MemoryStore && onLambda() {
		info.Logger.Warn("median: this Lambda function keeps answers in the in-memory replay store, which each instance has its own of: copies of a call that reach two instances both run the tool; set Config.Store to a shared store (protocol/dynamostore)",
			"function", os.Getenv("AWS_LAMBDA_FUNCTION_NAME"))
	}
}
