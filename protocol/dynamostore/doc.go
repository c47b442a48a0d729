// Package dynamostore is a [protocol.Store] on Amazon DynamoDB
// (github.com/aws/aws-sdk-go-v2/service/dynamodb), the replay store for
// endpoints on AWS Lambda, where a Redis needs a VPC and a database a
// connection per call: a toolCallId answered by one instance is answered
// with the same bytes by any other, and its tool runs once.
//
//	cfg, err := config.LoadDefaultConfig(ctx) // github.com/aws/aws-sdk-go-v2/config
//	client := dynamodb.NewFromConfig(cfg)
//	err = dynamostore.CreateTable(ctx, client, dynamostore.Options{}) // tests and first runs
//	store, err := dynamostore.New(client, dynamostore.Options{})
//	h, err := protocol.New(protocol.Config{Store: store, Tools: tools})
//
// # The table
//
// One item per toolCallId, in the table "median-calls" unless [Options]
// names another, billed on demand. Its partition key "call" (a string) is
// the core's key: the hex SHA-256 of the id, so a long id costs what a
// short one costs. The other attributes: "fp" (the body's SHA-256),
// "claim" (a random token of the Claim that wrote the item), "expires"
// (when the lease or the answer's time ends, Unix milliseconds), "ttl"
// (the same in Unix seconds, rounded up: DynamoDB's TTL attribute),
// "answer" (binary, absent while the call runs) and "enc" ("gzip" for a
// compressed answer). An item costs about 200 bytes plus its answer.
//
// [CreateTable] makes the table and turns TTL on, so DynamoDB deletes old
// items by itself. Teams that manage tables with their own tools declare
// the same, in CloudFormation or SAM:
//
//	CallsTable:
//	  Type: AWS::DynamoDB::Table
//	  Properties:
//	    TableName: median-calls
//	    BillingMode: PAY_PER_REQUEST
//	    AttributeDefinitions: [{AttributeName: call, AttributeType: S}]
//	    KeySchema: [{AttributeName: call, KeyType: HASH}]
//	    TimeToLiveSpecification: {AttributeName: ttl, Enabled: true}
//
// # How it works
//
// Each operation is one conditional write, and reads are strongly
// consistent.
//
//   - Claim is one PutItem of the running claim (the fingerprint, a fresh
//     token, expires = now + lease) on the condition that the call has no
//     item or its item's time has ended. When the condition fails, DynamoDB
//     returns the item that failed it in the same response
//     (ReturnValuesOnConditionCheckFailure): an answer (ClaimDone), another
//     body (ClaimConflict), or the same body still running (ClaimRunning).
//     A server that returns no item there, such as dynalite, costs a
//     consistent GetItem more. Claim never waits: on ClaimRunning the core
//     asks again shortly.
//   - Save is one PutItem of the answer (expires = now + ttl) unless the
//     item holds an answer already or another body's live claim: the first
//     answer wins, so every repeat gets the same bytes.
//   - Renew is one UpdateItem of the claim's expiry, on the condition that
//     the item is still this body's live claim, without an answer.
//
// So a new call costs two requests, the claim and the answer, and each
// repeat one (two on dynalite). DynamoDB charges a write for a failed
// condition too, by the size of the item that failed it; docs/PERFORMANCE.md
// gives the numbers beside Redis and Postgres.
//
// When the reply to a claim is lost after DynamoDB wrote it, the SDK sends
// the request again and the copy fails its condition on the claim the
// first wrote; the claim's token tells the store that claim is its own.
//
// # Time
//
// The store judges whether a claim or an answer is live from "expires"
// and the instance's clock, never from DynamoDB's TTL, which deletes items
// whose time has ended within a few days, not at once (a server without
// TTL, such as dynalite, keeps them: the store works the same). Instances
// must agree on the time within much less than a lease; Lambda's clocks
// are kept by NTP.
//
// # Large answers
//
// DynamoDB refuses an item over 400 KB. An answer over 8 KiB is stored
// gzip-compressed when that makes it smaller (a 1 MiB JSON list takes
// milliseconds and about 100 KB). An answer that does not fit even so is
// not kept: Save removes the call's claim and reports the answer as
// dropped early (evicted 1), which the core logs and counts
// (Event.EvictedEarly, store.evictedEarly in the diagnostics report), and
// a repeat runs the tool again, as docs/PROTOCOL.md §8 says of an answer
// dropped before its time. Median reads the first 4,000 characters of a
// result, so keep results small (protocol.WithResultBudget).
//
// # Deadlines, retries and outages
//
// Each operation runs under the core's deadline (protocol.Config.StoreTimeout,
// default 1 s), or [DefaultTimeout] when its context has none, and the
// SDK's retries run inside it: the store sends each request at most three
// times, with pauses of at most 100 ms, whatever the client's retryer
// says. When DynamoDB is unreachable, throttles or is too slow, Claim fails
// at the deadline (a refused connection at once) and the call is answered
// execution_failed without running the tool, unless the tool is
// protocol.ReadOnly: it then runs, and its answer is sent but not kept. A
// failed Save is logged and the answer still goes out. [Store.Probe] gives
// the diagnostics report whether the table answers.
//
// # When an instance stops mid-call
//
// A Lambda instance that times out or crashes while its tool runs leaves
// its claim until the lease ends; copies that arrive meanwhile wait, or
// give up when their request ends. After the lease the next copy claims
// the id and runs the tool again: delivery is then at-least-once, so keep
// tools that change things idempotent on their own (by toolCallId) when a
// second run would hurt.
//
// # Permissions
//
// The store needs four actions on its table, nothing else:
//
//	{
//	  "Version": "2012-10-17",
//	  "Statement": [{
//	    "Effect": "Allow",
//	    "Action": ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"],
//	    "Resource": "arn:aws:dynamodb:REGION:ACCOUNT_ID:table/median-calls"
//	  }]
//	}
//
// [CreateTable] needs dynamodb:CreateTable, dynamodb:DescribeTable,
// dynamodb:DescribeTimeToLive and dynamodb:UpdateTimeToLive on the same
// resource as well: give those to the role that deploys, not to the
// function, and create the table at deploy time.
package dynamostore
