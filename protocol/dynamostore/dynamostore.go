package dynamostore

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/median-go/median/protocol"
)

// DefaultTable is the store's table when [Options.Table] is empty.
const DefaultTable = "median-calls"

// The attributes of an item, one per toolCallId. Short names: every
// item carries them, and DynamoDB charges for their bytes.
const (
	// AttrKey is the table's partition key (a string): the core's key, the
	// hex SHA-256 of the toolCallId.
	AttrKey = "call"
	// AttrTTL is the table's TTL attribute (a number, Unix seconds): when
	// DynamoDB may delete the item. The store itself never relies on it.
	AttrTTL = "ttl"

	attrFingerprint = "fp"      // S: the hex SHA-256 of the call's body
	attrClaim       = "claim"   // S: a random token of the Claim that wrote the item
	attrExpires     = "expires" // N: the end of the lease or TTL, Unix milliseconds; what the store judges by
	attrAnswer      = "answer"  // B: the answer, absent while the call runs
	attrEncoding    = "enc"     // S: "gzip" when answer is compressed, else absent
)

// encodingGzip is the value of attrEncoding for a compressed answer.
const encodingGzip = "gzip"

// Sizes of an item. DynamoDB refuses an item over 400 KB, attribute names
// included; an answer is kept when its item, compressed or not, fits under
// maxItemBytes, which leaves room for the other attributes.
const (
	maxItemBytes  = 400 * 1024
	itemOverhead  = 512       // the key, fingerprint, claim, times and attribute names (about 200 bytes), with room to spare
	compressAbove = 8 * 1024  // answers larger than this are stored gzip-compressed when that makes them smaller
	maxDecoded    = 256 << 20 // a compressed answer that inflates past this is refused as damaged
)

// Deadlines and retries of each request.
const (
	// DefaultTimeout bounds a Claim, Save, Renew or Probe whose context has
	// no deadline. The core always gives one (protocol.Config.StoreTimeout).
	DefaultTimeout = time.Second
	// maxAttempts and maxBackoff are the store's retryer: three attempts
	// in all, pauses of at most 100 ms, so that retries fit in the core's
	// deadline of one second.
	maxAttempts = 3
	maxBackoff  = 100 * time.Millisecond
)

// Options configures [New] and [CreateTable]. The zero value is ready to
// use: table "median-calls".
type Options struct {
	// Table is the table's name; default "median-calls". Give each
	// endpoint its own table when several share one account and region.
	Table string
}

func (o Options) withDefaults() Options {
	if o.Table == "" {
		o.Table = DefaultTable
	}
	return o
}

// check refuses a table name DynamoDB cannot hold.
func (o Options) check() error {
	name := o.withDefaults().Table
	ok := len(name) >= 3 && len(name) <= 255
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
	}
	if !ok {
		return fmt.Errorf("median: dynamostore: the table name %q must be 3 to 255 characters of a-z, A-Z, 0-9, '_', '-' and '.'", name)
	}
	return nil
}

// Store is a [protocol.Store] on DynamoDB. Build it with [New]; it is safe
// for concurrent use, starts no goroutine and holds no resources of its
// own.
type Store struct {
	client  *dynamodb.Client
	table   string
	retryer aws.Retryer
}

var _ protocol.Store = (*Store)(nil)

// New returns a Store on client, for the table [CreateTable] created with
// the same opts (or one with the same key and TTL attributes, see the
// package documentation). Pass it as [protocol.Config.Store]. It sends
// nothing: the first call does (use [Store.Probe] to check the table at
// start).
func New(client *dynamodb.Client, opts Options) (*Store, error) {
	if client == nil {
		return nil, errors.New("median: dynamostore: the client is nil")
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	return &Store{
		client: client,
		table:  opts.withDefaults().Table,
		retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = maxAttempts
			o.MaxBackoff = maxBackoff
		}),
	}, nil
}

// Kind names the store in the diagnostics report: "dynamodb".
func (s *Store) Kind() string { return "dynamodb" }

// probeKey is the key Probe reads: not hex, so no call has it.
const probeKey = "median-probe"

// Probe reads one item that does not exist (a consistent GetItem, one
// round trip), for the diagnostics report's store.reachable: it fails when
// DynamoDB does not answer, the table is missing or the credentials may
// not read it.
func (s *Store) Probe(ctx context.Context) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	if _, err := s.get(ctx, probeKey); err != nil {
		return s.fail(ctx, "read", err)
	}
	return nil
}

// Claim implements [protocol.Store]: one conditional PutItem, which
// creates the running claim when the call has no live item; on DynamoDB
// a failed condition returns the item in the same round trip, elsewhere
// a consistent GetItem reads it. It never waits for another caller.
func (s *Store) Claim(ctx context.Context, key, fingerprint string, lease time.Duration) (protocol.ClaimStatus, []byte, error) {
	if err := checkArgs(key, fingerprint); err != nil {
		return 0, nil, err
	}
	if lease < time.Millisecond {
		return 0, nil, fmt.Errorf("median: dynamostore: the lease must be at least 1ms, got %s", lease)
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	token := newToken()
	// An item that changed between the failed PutItem and the GetItem
	// (an answer's time ended, DynamoDB deleted it) is tried once more;
	// after that the core asks again as for a running call.
	for range 2 {
		now := time.Now()
		item, err := s.putClaim(ctx, key, fingerprint, token, now.UnixMilli(), lease)
		if err != nil {
			return 0, nil, s.fail(ctx, "claim a call in", err)
		}
		if item == nil {
			return protocol.ClaimAcquired, nil, nil
		}
		st, answer, err := claimOutcome(item, fingerprint, token, now.UnixMilli())
		if err != nil || st != 0 {
			return st, answer, err
		}
	}
	return protocol.ClaimRunning, nil, nil
}

// putClaim writes the running claim unless the call has a live item. It
// returns nil when it wrote, else the item that stood in the way. The
// item comes with the failed condition (DynamoDB's
// ReturnValuesOnConditionCheckFailure); from a server that returns none
// (dynalite) it is read with a consistent GetItem. Then it may be gone:
// that is an empty item.
func (s *Store) putClaim(ctx context.Context, key, fingerprint, token string, nowMs int64, lease time.Duration) (map[string]types.AttributeValue, error) {
	expires := addMillis(nowMs, lease)
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.table,
		Item: map[string]types.AttributeValue{
			AttrKey:         str(key),
			attrFingerprint: str(fingerprint),
			attrClaim:       str(token),
			attrExpires:     num(expires),
			AttrTTL:         num(ttlSeconds(expires)),
		},
		ConditionExpression:                 aws.String("attribute_not_exists(#k) OR #e <= :now"),
		ExpressionAttributeNames:            map[string]string{"#k": AttrKey, "#e": attrExpires},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":now": num(nowMs)},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, s.options)
	var failed *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return nil, nil
	case !errors.As(err, &failed):
		return nil, err
	case failed.Item != nil:
		return failed.Item, nil
	}
	item, err := s.get(ctx, key)
	if item == nil && err == nil {
		item = map[string]types.AttributeValue{}
	}
	return item, err
}

// claimOutcome reads the item that made a claim's condition fail, for a
// caller whose body hashes to fingerprint and whose claim wrote token, at
// nowMs. Status 0 means the item is gone or its time ended since: claim
// again.
func claimOutcome(item map[string]types.AttributeValue, fingerprint, token string, nowMs int64) (protocol.ClaimStatus, []byte, error) {
	if len(item) == 0 {
		return 0, nil, nil
	}
	v, err := decode(item)
	switch {
	case err != nil:
		return 0, nil, err
	case v.expires <= nowMs:
		return 0, nil, nil
	case v.claim == token && v.answer == nil:
		// This Claim's own write, whose reply was lost: the SDK sent it
		// again and the copy found the first.
		return protocol.ClaimAcquired, nil, nil
	case v.fingerprint != fingerprint:
		return protocol.ClaimConflict, nil, nil
	case v.answer == nil:
		return protocol.ClaimRunning, nil, nil
	}
	return protocol.ClaimDone, v.answer, nil
}

// Save implements [protocol.Store]: one conditional PutItem, which writes
// the answer unless the call holds an answer already or another body's
// live claim. An answer over 8 KiB is stored gzip-compressed. One that
// does not fit in an item even so is not kept: Save then removes the
// call's claim (a conditional DeleteItem) and reports the answer as
// evicted, so that the core logs it and counts it in diagnostics, and a
// repeat runs the tool again instead of waiting for an answer that will
// never come.
func (s *Store) Save(ctx context.Context, key, fingerprint string, answer []byte, ttl time.Duration) (int, error) {
	if err := checkArgs(key, fingerprint); err != nil {
		return 0, err
	}
	if ttl < time.Millisecond {
		return 0, fmt.Errorf("median: dynamostore: the TTL must be at least 1ms, got %s", ttl)
	}
	stored, compressed := encodeAnswer(answer)
	ctx, cancel := bounded(ctx)
	defer cancel()
	if len(stored) > maxItemBytes-itemOverhead {
		if err := s.dropClaim(ctx, key, fingerprint); err != nil {
			return 1, s.fail(ctx, "remove the claim of an answer too large to keep from", err)
		}
		return 1, nil
	}
	nowMs := time.Now().UnixMilli()
	expires := addMillis(nowMs, ttl)
	item := map[string]types.AttributeValue{
		AttrKey:         str(key),
		attrFingerprint: str(fingerprint),
		attrExpires:     num(expires),
		AttrTTL:         num(ttlSeconds(expires)),
		attrAnswer:      &types.AttributeValueMemberB{Value: stored},
	}
	if compressed {
		item[attrEncoding] = str(encodingGzip)
	}
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 &s.table,
		Item:                      item,
		ConditionExpression:       aws.String("attribute_not_exists(#k) OR #e <= :now OR (#f = :fp AND attribute_not_exists(#a))"),
		ExpressionAttributeNames:  map[string]string{"#k": AttrKey, "#e": attrExpires, "#f": attrFingerprint, "#a": attrAnswer},
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": num(nowMs), ":fp": str(fingerprint)},
	}, s.options)
	var failed *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &failed) {
		return 0, s.fail(ctx, "save an answer in", err)
	}
	// A failed condition: the first answer wins, or another body's live
	// claim is kept. Nothing to do.
	return 0, nil
}

// dropClaim deletes the running claim of fingerprint on key, if that is
// what the item holds.
func (s *Store) dropClaim(ctx context.Context, key, fingerprint string) error {
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 &s.table,
		Key:                       map[string]types.AttributeValue{AttrKey: str(key)},
		ConditionExpression:       aws.String("#f = :fp AND attribute_not_exists(#a)"),
		ExpressionAttributeNames:  map[string]string{"#f": attrFingerprint, "#a": attrAnswer},
		ExpressionAttributeValues: map[string]types.AttributeValue{":fp": str(fingerprint)},
	}, s.options)
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return nil
	}
	return err
}

// Renew implements [protocol.Store]: one conditional UpdateItem, which
// sets the end of the running claim of fingerprint on key to lease from
// now. When the item holds an answer, another body's claim, a claim whose
// lease has ended (another copy may be taking it over) or nothing, it
// changes nothing and returns nil.
func (s *Store) Renew(ctx context.Context, key, fingerprint string, lease time.Duration) error {
	if err := checkArgs(key, fingerprint); err != nil {
		return err
	}
	if lease < time.Millisecond {
		return fmt.Errorf("median: dynamostore: the lease must be at least 1ms, got %s", lease)
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	nowMs := time.Now().UnixMilli()
	expires := addMillis(nowMs, lease)
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                &s.table,
		Key:                      map[string]types.AttributeValue{AttrKey: str(key)},
		UpdateExpression:         aws.String("SET #e = :e, #t = :t"),
		ConditionExpression:      aws.String("#f = :fp AND attribute_not_exists(#a) AND #e > :now"),
		ExpressionAttributeNames: map[string]string{"#e": attrExpires, "#t": AttrTTL, "#f": attrFingerprint, "#a": attrAnswer},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":e": num(expires), ":t": num(ttlSeconds(expires)), ":fp": str(fingerprint), ":now": num(nowMs),
		},
	}, s.options)
	var failed *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &failed) {
		return s.fail(ctx, "renew a claim in", err)
	}
	return nil
}

// get reads key's item with a consistent GetItem; nil when there is none.
func (s *Store) get(ctx context.Context, key string) (map[string]types.AttributeValue, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      &s.table,
		Key:            map[string]types.AttributeValue{AttrKey: str(key)},
		ConsistentRead: aws.Bool(true),
	}, s.options)
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}

// options applies the store's retryer to each request, whatever the
// client's: a few quick attempts that fit in the store's deadline.
func (s *Store) options(o *dynamodb.Options) { o.Retryer = s.retryer }

// bounded returns ctx, bounded by DefaultTimeout when it has no deadline.
func bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, DefaultTimeout)
}

// fail wraps an error of DynamoDB or the SDK, naming the context's end when
// it ended and what to do about a missing table.
func (s *Store) fail(ctx context.Context, what string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		err = fmt.Errorf("%w (%w)", ctxErr, err)
	}
	var missing *types.ResourceNotFoundException
	if errors.As(err, &missing) {
		return fmt.Errorf("median: dynamostore: could not %s table %q: it does not exist; create it with dynamostore.CreateTable or your infrastructure code (see the package documentation): %w", what, s.table, err)
	}
	return fmt.Errorf("median: dynamostore: could not %s table %q: %w", what, s.table, err)
}

// checkArgs refuses a key or fingerprint an item cannot hold.
func checkArgs(key, fingerprint string) error {
	if key == "" || len(key) > 1024 {
		return fmt.Errorf("median: dynamostore: the key must be 1 to 1024 bytes (the core's 64 hex digits), got %d bytes", len(key))
	}
	if fingerprint == "" || len(fingerprint) > 1024 {
		return fmt.Errorf("median: dynamostore: the fingerprint must be 1 to 1024 bytes (the core's 64 hex digits), got %d bytes", len(fingerprint))
	}
	return nil
}

// newToken returns a random claim token: 16 bytes in hex.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// maxMillis caps the end of a lease or TTL: a duration that would go past
// it ("no end") ends there, about 292 million years from now.
const maxMillis = math.MaxInt64 / 2

// addMillis is nowMs plus d in milliseconds, capped at maxMillis.
func addMillis(nowMs int64, d time.Duration) int64 {
	ms := d.Milliseconds()
	if ms > maxMillis-nowMs {
		return maxMillis
	}
	return nowMs + ms
}

// ttlSeconds is the TTL attribute of an item whose time ends at
// expiresMs: that time in Unix seconds, rounded up, so DynamoDB never
// deletes an item the store still counts as live.
func ttlSeconds(expiresMs int64) int64 { return (expiresMs + 999) / 1000 }

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func num(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// stored is what an item holds, decoded.
type stored struct {
	fingerprint, claim string
	expires            int64  // Unix milliseconds
	answer             []byte // nil while the call runs
}

// decode reads an item this store wrote; an item it cannot read is an
// error naming what is wrong.
func decode(item map[string]types.AttributeValue) (stored, error) {
	var v stored
	fp, ok := item[attrFingerprint].(*types.AttributeValueMemberS)
	if !ok {
		return v, errors.New("median: dynamostore: an item has no fingerprint: the table holds items this store did not write; give the store a table of its own")
	}
	v.fingerprint = fp.Value
	if c, ok := item[attrClaim].(*types.AttributeValueMemberS); ok {
		v.claim = c.Value
	}
	e, ok := item[attrExpires].(*types.AttributeValueMemberN)
	if !ok {
		return v, errors.New("median: dynamostore: an item has no expiry: the table holds items this store did not write; give the store a table of its own")
	}
	expires, err := strconv.ParseInt(e.Value, 10, 64)
	if err != nil {
		return v, fmt.Errorf("median: dynamostore: an item's expiry %q is not a whole number of milliseconds", e.Value)
	}
	v.expires = expires
	a, ok := item[attrAnswer].(*types.AttributeValueMemberB)
	if !ok {
		return v, nil
	}
	enc, _ := item[attrEncoding].(*types.AttributeValueMemberS)
	switch {
	case enc == nil:
		v.answer = a.Value
		if v.answer == nil {
			v.answer = []byte{}
		}
	case enc.Value == encodingGzip:
		v.answer, err = gunzip(a.Value)
	default:
		err = fmt.Errorf("median: dynamostore: an answer is stored with the unknown encoding %q", enc.Value)
	}
	return v, err
}

// encodeAnswer returns answer as the item stores it: as is, or
// gzip-compressed (compressed true) when it is over compressAbove and that
// makes it smaller. It compresses at gzip's best speed (a 1 MiB JSON answer
// takes milliseconds; the ratio is close to the default level's) and stops
// as soon as the output would not fit in an item, returning answer: the
// caller finds it too large. The SDK encodes the request before PutItem
// returns, so the caller's slice is not kept.
func encodeAnswer(answer []byte) (out []byte, compressed bool) {
	if len(answer) <= compressAbove {
		return answer, false
	}
	w := &cappedBuffer{max: min(len(answer)-1, maxItemBytes-itemOverhead)}
	zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed) // a valid level: no error
	if _, err := zw.Write(answer); err != nil || zw.Close() != nil {
		return answer, false
	}
	return w.b, true
}

// cappedBuffer collects bytes up to max and fails a write past it.
type cappedBuffer struct {
	b   []byte
	max int
}

var errCapped = errors.New("over the cap")

func (w *cappedBuffer) Write(p []byte) (int, error) {
	if len(w.b)+len(p) > w.max {
		return 0, errCapped
	}
	w.b = append(w.b, p...)
	return len(p), nil
}

// gunzip inflates a stored answer.
func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err == nil {
		var out []byte
		out, err = io.ReadAll(io.LimitReader(zr, maxDecoded+1))
		if err == nil && len(out) > maxDecoded {
			err = fmt.Errorf("it inflates past %d bytes", maxDecoded)
		}
		if err == nil {
			return out, nil
		}
	}
	return nil, fmt.Errorf("median: dynamostore: a compressed answer is damaged: %w", err)
}

// isUnknownOperation reports whether err is a server's answer that it does
// not know the operation (a local test server).
func isUnknownOperation(err error) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == "UnknownOperationException"
}
