// Package dynamostore is a [protocol.Store] on Amazon DynamoDB
// (github.com/aws/aws-sdk-go-v2/service/dynamodb), the replay store for
// endpoints on AWS Lambda: a toolCallId answered by one instance is
// answered with the same bytes by any other, and its tool runs once.
package dynamostore
