package dynamostore_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/median-go/median/internal/testonly/dynamotest"
	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/dynamostore"
	"github.com/median-go/median/protocol/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newClient returns a DynamoDB client of the API at url, with its own
// connections (closed when t ends) and apiOptions added to its middleware.
func newClient(t testing.TB, url string, apiOptions ...func(*middleware.Stack) error) *dynamodb.Client {
	t.Helper()
	return newClientWith(t, url, func(o *dynamodb.Options) { o.APIOptions = apiOptions })
}

// newClientWith is newClient with options set by optFn.
func newClientWith(t testing.TB, url string, optFn func(*dynamodb.Options)) *dynamodb.Client {
	t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	return dynamodb.New(dynamodb.Options{
		Region:       dynamotest.Region,
		BaseEndpoint: aws.String(url),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: dynamotest.AccessKeyID, SecretAccessKey: dynamotest.SecretAccessKey}, nil
		}),
		HTTPClient: &http.Client{Transport: tr},
	}, optFn)
}

// createTable creates the store's table named by opts, failing the test on
// an error.
func createTable(t testing.TB, c *dynamodb.Client, opts dynamostore.Options) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, dynamostore.CreateTable(ctx, c, opts))
}

// newStore returns a Store on c, failing the test on an error.
func newStore(t testing.TB, c *dynamodb.Client, opts dynamostore.Options) *dynamostore.Store {
	t.Helper()
	s, err := dynamostore.New(c, opts)
	require.NoError(t, err)
	return s
}

// startWithTable starts a server, creates the default table on it and
// returns both with a client.
func startWithTable(t testing.TB, apiOptions ...func(*middleware.Stack) error) (*dynamotest.Server, *dynamodb.Client) {
	t.Helper()
	srv := dynamotest.Start(t)
	c := newClient(t, srv.URL, apiOptions...)
	createTable(t, c, dynamostore.Options{})
	return srv, c
}

func TestStoreBehaviour(t *testing.T) {
	// One table for every case: each uses fresh random keys.
	_, c := startWithTable(t)
	storetest.Run(t, func(t *testing.T) protocol.Store { return newStore(t, c, dynamostore.Options{}) })
}

func TestTwoInstances(t *testing.T) {
	// Two instances: each with its own client (its own connections) and
	// store, on one table.
	srv, a := startWithTable(t)
	b := newClient(t, srv.URL)
	storetest.RunHandlers(t, func(t *testing.T) (protocol.Store, protocol.Store) {
		return newStore(t, a, dynamostore.Options{}), newStore(t, b, dynamostore.Options{})
	})
}

const (
	fp      = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	otherFp = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
)

// key returns a store key in the core's format, 64 hex digits.
func key(name string) string {
	sum := sha256.Sum256([]byte(name + storetest.NewID()))
	return hex.EncodeToString(sum[:])
}

// roundTrips counts the requests a client sends, each attempt apart (the
// SDK's retries included), by operation.
type roundTrips struct {
	mu  sync.Mutex
	ops []string
}

// add puts the counter into a client's middleware stack, after the retry
// step, so each attempt is one request sent.
func (r *roundTrips) add(stack *middleware.Stack) error {
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("medianCountRoundTrips",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			r.mu.Lock()
			r.ops = append(r.ops, awsmiddleware.GetOperationName(ctx))
			r.mu.Unlock()
			return next.HandleDeserialize(ctx, in)
		}), middleware.After)
}

// take returns the operations sent since the last take.
func (r *roundTrips) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ops := r.ops
	r.ops = nil
	return ops
}

// stepCosts is what each step of the store sent, for the round-trip tests.
type stepCosts struct {
	t     *testing.T
	s     *dynamostore.Store
	count *roundTrips
}

func (c stepCosts) claim(k, f string, want protocol.ClaimStatus, ops ...string) []byte {
	c.t.Helper()
	st, answer, err := c.s.Claim(context.Background(), k, f, time.Minute)
	require.NoError(c.t, err)
	require.Equal(c.t, want, st)
	require.Equal(c.t, ops, c.count.take(), "requests of a Claim answered %d", want)
	return answer
}

func (c stepCosts) save(k, f string, answer []byte, wantEvicted int, ops ...string) {
	c.t.Helper()
	evicted, err := c.s.Save(context.Background(), k, f, answer, time.Minute)
	require.NoError(c.t, err)
	require.Equal(c.t, wantEvicted, evicted)
	require.Equal(c.t, ops, c.count.take(), "requests of a Save")
}

// TestRoundTripsOnTheTestServer: a new call costs two requests (the claim
// and the answer, each one conditional PutItem); every other outcome of a
// claim costs a GetItem more, because dynalite returns no item with a
// failed condition.
func TestRoundTripsOnTheTestServer(t *testing.T) {
	count := &roundTrips{}
	_, c := startWithTable(t, count.add)
	s := newStore(t, c, dynamostore.Options{})
	count.take()
	steps := stepCosts{t, s, count}
	k := key("call")

	steps.claim(k, fp, protocol.ClaimAcquired, "PutItem")
	steps.claim(k, fp, protocol.ClaimRunning, "PutItem", "GetItem")
	steps.claim(k, otherFp, protocol.ClaimConflict, "PutItem", "GetItem")
	require.NoError(t, s.Renew(context.Background(), k, fp, time.Minute))
	require.Equal(t, []string{"UpdateItem"}, count.take(), "a renewal")
	steps.save(k, fp, []byte(`{"result":1}`), 0, "PutItem")
	answer := steps.claim(k, fp, protocol.ClaimDone, "PutItem", "GetItem")
	require.Equal(t, `{"result":1}`, string(answer))
	steps.save(k, fp, []byte(`{"result":2}`), 0, "PutItem") // the first answer wins: a failed condition, nothing read
	require.NoError(t, s.Probe(context.Background()))
	require.Equal(t, []string{"GetItem"}, count.take(), "a probe")
}

// TestRoundTripsWhereTheItemComesBack: on DynamoDB a failed condition
// returns the item that failed it (ReturnValuesOnConditionCheckFailure),
// so each outcome of a claim is one request. The test server stands in
// front of dynalite and adds the item to the error as DynamoDB does.
func TestRoundTripsWhereTheItemComesBack(t *testing.T) {
	srv := dynamotest.Start(t)
	createTable(t, newClient(t, srv.URL), dynamostore.Options{})
	count := &roundTrips{}
	c := newClient(t, returnItemOnConditionFailure(t, srv.URL), count.add)
	s := newStore(t, c, dynamostore.Options{})
	steps := stepCosts{t, s, count}
	k := key("call")

	steps.claim(k, fp, protocol.ClaimAcquired, "PutItem")
	steps.claim(k, fp, protocol.ClaimRunning, "PutItem")
	steps.claim(k, otherFp, protocol.ClaimConflict, "PutItem")
	steps.save(k, fp, []byte(`{"result":1}`), 0, "PutItem")
	answer := steps.claim(k, fp, protocol.ClaimDone, "PutItem")
	require.Equal(t, `{"result":1}`, string(answer))
	res := steps.claim(k, otherFp, protocol.ClaimConflict, "PutItem")
	require.Empty(t, res, "a conflict reveals no answer")
}

// TestCallThroughAHandlerCostsTwoRequests: a new call served by a Handler
// is one claim and one save.
func TestCallThroughAHandlerCostsTwoRequests(t *testing.T) {
	count := &roundTrips{}
	_, c := startWithTable(t, count.add)
	count.take()
	h := newHandler(t, newStore(t, c, dynamostore.Options{}), protocol.Config{})
	req := signedCall(t, "cancel_order", storetest.NewID(), "A-1001")
	first := serve(h.h, req)
	require.Empty(t, codeOf(first), "%s", first.Body)
	require.Equal(t, []string{"PutItem", "PutItem"}, count.take(), "a new call")
	again := serve(h.h, req)
	require.Equal(t, string(first.Body), string(again.Body))
	require.Equal(t, []string{"PutItem", "GetItem"}, count.take(), "a repeat on the test server")
}

// TestItem: what an item holds: the expiry the store judges by, in Unix
// milliseconds, and the TTL attribute DynamoDB deletes by, in Unix
// seconds, rounded up; the claim's token goes with the answer.
func TestItem(t *testing.T) {
	_, c := startWithTable(t)
	s := newStore(t, c, dynamostore.Options{})
	ctx := context.Background()
	k := key("call")
	before := time.Now()
	_, _, err := s.Claim(ctx, k, fp, time.Minute)
	require.NoError(t, err)
	item := getItem(t, c, k)
	require.Equal(t, fp, item["fp"].(*types.AttributeValueMemberS).Value)
	require.Len(t, item["claim"].(*types.AttributeValueMemberS).Value, 32)
	requireTimes(t, item, before.Add(time.Minute), time.Now().Add(time.Minute))
	require.NotContains(t, item, "answer")

	before = time.Now()
	_, err = s.Save(ctx, k, fp, []byte(`{"result":"ok"}`), 10*time.Minute)
	require.NoError(t, err)
	item = getItem(t, c, k)
	requireTimes(t, item, before.Add(10*time.Minute), time.Now().Add(10*time.Minute))
	require.Equal(t, `{"result":"ok"}`, string(item["answer"].(*types.AttributeValueMemberB).Value), "a small answer is stored as is")
	require.NotContains(t, item, "enc")
	require.NotContains(t, item, "claim")
}

// requireTimes checks an item's expiry and TTL attribute against the
// times its write may have set.
func requireTimes(t *testing.T, item map[string]types.AttributeValue, earliest, latest time.Time) {
	t.Helper()
	expires := numAttr(t, item, "expires")
	require.GreaterOrEqual(t, expires, earliest.UnixMilli())
	require.LessOrEqual(t, expires, latest.UnixMilli())
	require.Equal(t, (expires+999)/1000, numAttr(t, item, dynamostore.AttrTTL), "the TTL attribute is the expiry in seconds, rounded up")
}

func TestRenew(t *testing.T) {
	_, c := startWithTable(t)
	s := newStore(t, c, dynamostore.Options{})
	ctx := context.Background()

	// A renewed claim outlives its first lease.
	k := key("renewed")
	_, _, err := s.Claim(ctx, k, fp, storetest.Short)
	require.NoError(t, err)
	require.NoError(t, s.Renew(ctx, k, fp, storetest.Long))
	time.Sleep(2 * storetest.Short)
	st, _, err := s.Claim(ctx, k, fp, storetest.Long)
	require.NoError(t, err)
	require.Equal(t, protocol.ClaimRunning, st, "a renewed claim still runs after its first lease")

	// Renewing another body's claim or a saved answer changes nothing.
	require.NoError(t, s.Renew(ctx, k, otherFp, time.Hour))
	require.Less(t, numAttr(t, getItem(t, c, k), "expires"), time.Now().Add(2*storetest.Long).UnixMilli(), "another body's renewal must not extend the claim")
	_, err = s.Save(ctx, k, fp, []byte(`{"result":1}`), storetest.Short)
	require.NoError(t, err)
	require.NoError(t, s.Renew(ctx, k, fp, time.Hour))
	item := getItem(t, c, k)
	require.Less(t, numAttr(t, item, "expires"), time.Now().Add(time.Minute).UnixMilli(), "a renewal must not extend a saved answer")
	require.Equal(t, `{"result":1}`, string(item["answer"].(*types.AttributeValueMemberB).Value))

	// Nothing there: nothing to renew, and nothing created.
	gone := key("gone")
	require.NoError(t, s.Renew(ctx, gone, fp, time.Minute))
	require.Nil(t, getItem(t, c, gone))

	// A claim whose lease has ended is not brought back: another copy may
	// be taking it over.
	ended := key("ended")
	_, _, err = s.Claim(ctx, ended, fp, storetest.Short)
	require.NoError(t, err)
	time.Sleep(2 * storetest.Short)
	require.NoError(t, s.Renew(ctx, ended, fp, storetest.Long))
	st, _, err = s.Claim(ctx, ended, fp, storetest.Long)
	require.NoError(t, err)
	require.Equal(t, protocol.ClaimAcquired, st, "a renewal after the lease ended must not keep the claim")
}

// TestRetriesFitTheDeadline: the store sends each request at most three
// times, whatever the client's retryer allows, with short pauses, so a
// server that refuses connections fails a call at once.
func TestRetriesFitTheDeadline(t *testing.T) {
	srv := dynamotest.Start(t)
	count := &roundTrips{}
	c := newClientWith(t, srv.URL, func(o *dynamodb.Options) {
		o.RetryMaxAttempts = 10
		o.APIOptions = append(o.APIOptions, count.add)
	})
	createTable(t, c, dynamostore.Options{})
	s := newStore(t, c, dynamostore.Options{})
	srv.Kill()
	count.take()
	start := time.Now()
	_, _, err := s.Claim(context.Background(), key("refused"), fp, time.Minute)
	require.Error(t, err)
	require.Less(t, time.Since(start), time.Second, "three attempts with pauses of at most 100 ms")
	require.Equal(t, []string{"PutItem", "PutItem", "PutItem"}, count.take(), "three attempts, not the client's ten")
}

func TestProbe(t *testing.T) {
	srv, c := startWithTable(t)
	s := newStore(t, c, dynamostore.Options{})
	require.Equal(t, "dynamodb", s.Kind())
	require.NoError(t, s.Probe(context.Background()))

	missing := newStore(t, c, dynamostore.Options{Table: "no-such-table"})
	err := missing.Probe(context.Background())
	require.ErrorContains(t, err, `table "no-such-table"`)
	require.ErrorContains(t, err, "does not exist; create it with dynamostore.CreateTable")
	_, _, err = missing.Claim(context.Background(), key("call"), fp, time.Minute)
	require.ErrorContains(t, err, "does not exist; create it with dynamostore.CreateTable")

	srv.Kill()
	require.Error(t, s.Probe(context.Background()))
}

func TestCreateTable(t *testing.T) {
	srv := dynamotest.Start(t)
	// dynalite answers UpdateTimeToLive UnknownOperationException, which
	// CreateTable takes as a server without TTL; what it asked for is
	// read from the request.
	var ttl []*types.TimeToLiveSpecification
	var mu sync.Mutex
	c := newClient(t, srv.URL, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("medianReadTTL",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if u, ok := in.Parameters.(*dynamodb.UpdateTimeToLiveInput); ok {
					mu.Lock()
					ttl = append(ttl, u.TimeToLiveSpecification)
					mu.Unlock()
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	})
	ctx := context.Background()
	opts := dynamostore.Options{Table: "calls.test"}
	require.NoError(t, dynamostore.CreateTable(ctx, c, opts))
	require.Len(t, ttl, 1, "CreateTable turns TTL on")
	require.Equal(t, "ttl", aws.ToString(ttl[0].AttributeName))
	require.True(t, aws.ToBool(ttl[0].Enabled))
	require.NoError(t, dynamostore.CreateTable(ctx, c, opts), "a second call finds the table ready")

	out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("calls.test")})
	require.NoError(t, err)
	require.Equal(t, types.TableStatusActive, out.Table.TableStatus)
	require.Equal(t, []types.KeySchemaElement{{AttributeName: aws.String("call"), KeyType: types.KeyTypeHash}}, out.Table.KeySchema)
	require.Equal(t, types.BillingModePayPerRequest, out.Table.BillingModeSummary.BillingMode, "on-demand billing")

	// Two instances starting at once.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { errs[i] = dynamostore.CreateTable(ctx, c, dynamostore.Options{Table: "at-once"}) })
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])

	// A table of that name with another key is refused, with what to do.
	_, err = c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("someone-elses"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	require.NoError(t, err)
	err = dynamostore.CreateTable(ctx, c, dynamostore.Options{Table: "someone-elses"})
	require.ErrorContains(t, err, `table "someone-elses" exists with the key [pk HASH (S)]`)
	require.ErrorContains(t, err, "give the store another Options.Table")

	require.ErrorContains(t, dynamostore.CreateTable(ctx, c, dynamostore.Options{Table: "no spaces"}), "must be 3 to 255 characters")
	_, err = dynamostore.New(c, dynamostore.Options{Table: "x"})
	require.ErrorContains(t, err, "must be 3 to 255 characters")
	_, err = dynamostore.New(nil, dynamostore.Options{})
	require.ErrorContains(t, err, "the client is nil")

	// A server that answers nothing: CreateTable gives up when ctx ends.
	srv.Pause()
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, dynamostore.CreateTable(short, c, dynamostore.Options{Table: "paused"}), context.DeadlineExceeded)
	srv.Resume()
}

func TestBadArguments(t *testing.T) {
	_, c := startWithTable(t)
	s := newStore(t, c, dynamostore.Options{})
	ctx := context.Background()
	_, _, err := s.Claim(ctx, "", fp, time.Minute)
	require.ErrorContains(t, err, "the key must be 1 to 1024 bytes")
	_, _, err = s.Claim(ctx, key("k"), "", time.Minute)
	require.ErrorContains(t, err, "the fingerprint must be 1 to 1024 bytes")
	_, _, err = s.Claim(ctx, key("k"), fp, 0)
	require.ErrorContains(t, err, "the lease must be at least 1ms")
	_, err = s.Save(ctx, key("k"), fp, []byte("x"), time.Microsecond)
	require.ErrorContains(t, err, "the TTL must be at least 1ms")
	require.ErrorContains(t, s.Renew(ctx, key("k"), fp, 0), "the lease must be at least 1ms")

	// A lease with no end is capped, not wrapped round into the past.
	k := key("forever")
	st, _, err := s.Claim(ctx, k, fp, time.Duration(1<<63-1))
	require.NoError(t, err)
	require.Equal(t, protocol.ClaimAcquired, st)
	st, _, err = s.Claim(ctx, k, fp, time.Minute)
	require.NoError(t, err)
	require.Equal(t, protocol.ClaimRunning, st)
}

// TestForeignItem: an item the store did not write is an error naming the
// fix, not a claim.
func TestForeignItem(t *testing.T) {
	_, c := startWithTable(t)
	s := newStore(t, c, dynamostore.Options{})
	k := key("foreign")
	_, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(dynamostore.DefaultTable),
		Item:      map[string]types.AttributeValue{"call": &types.AttributeValueMemberS{Value: k}},
	})
	require.NoError(t, err)
	_, _, err = s.Claim(context.Background(), k, fp, time.Minute)
	require.ErrorContains(t, err, "give the store a table of its own")

	// A damaged answer is an error, not an answer.
	for enc, want := range map[string]string{"gzip": "a compressed answer is damaged", "zstd": `the unknown encoding "zstd"`} {
		k := key("damaged")
		_, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{
			TableName: aws.String(dynamostore.DefaultTable),
			Item: map[string]types.AttributeValue{
				"call": &types.AttributeValueMemberS{Value: k}, "fp": &types.AttributeValueMemberS{Value: fp},
				"expires": &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)},
				"answer":  &types.AttributeValueMemberB{Value: []byte("not gzip")}, "enc": &types.AttributeValueMemberS{Value: enc},
			},
		})
		require.NoError(t, err)
		_, _, err = s.Claim(context.Background(), k, fp, time.Minute)
		require.ErrorContains(t, err, want)
	}
}

// getItem reads key's item directly; nil when there is none.
func getItem(t *testing.T, c *dynamodb.Client, k string) map[string]types.AttributeValue {
	t.Helper()
	out, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName:      aws.String(dynamostore.DefaultTable),
		Key:            map[string]types.AttributeValue{dynamostore.AttrKey: &types.AttributeValueMemberS{Value: k}},
		ConsistentRead: aws.Bool(true),
	})
	require.NoError(t, err)
	return out.Item
}

// numAttr reads a number attribute of an item.
func numAttr(t *testing.T, item map[string]types.AttributeValue, name string) int64 {
	t.Helper()
	n, ok := item[name].(*types.AttributeValueMemberN)
	require.True(t, ok, "the item has no number %q: %v", name, slices.Sorted(maps.Keys(item)))
	v, err := strconv.ParseInt(n.Value, 10, 64)
	require.NoError(t, err)
	return v
}
