package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// createTimeout bounds CreateTable when ctx has no deadline: DynamoDB makes
// an on-demand table ACTIVE within seconds to a minute.
const createTimeout = 5 * time.Minute

// CreateTable creates the store's table when it does not exist, for tests
// and first runs: partition key "call" (a string), on-demand billing
// (PAY_PER_REQUEST), nothing else. It waits until the table is ACTIVE, then
// turns DynamoDB's TTL on for the attribute "ttl" unless it is on already,
// so DynamoDB deletes items whose time has ended. Instances starting at
// once can all call it; teams that manage tables with their own tools
// (CloudFormation, SAM, Terraform) create the same table there instead (see
// the package documentation).
//
// It fails when a table of that name exists with another key. A server
// that does not know the TTL operations (dynalite, a local test server)
// gets the table without TTL: the store judges expiry from its own
// attribute, so it works all the same, and only the deleting of old items
// is missing. CreateTable needs the IAM actions dynamodb:CreateTable,
// DescribeTable, DescribeTimeToLive and UpdateTimeToLive, which the store
// itself does not.
func CreateTable(ctx context.Context, client *dynamodb.Client, opts Options) error {
	if client == nil {
		return errors.New("median: dynamostore: the client is nil")
	}
	if err := opts.check(); err != nil {
		return err
	}
	table := opts.withDefaults().Table
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, createTimeout)
		defer cancel()
	}
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            &table,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(AttrKey), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(AttrKey), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return tableError(table, "create", err)
	}
	desc, err := waitActive(ctx, client, table)
	if err != nil {
		return err
	}
	if err := checkKey(table, desc); err != nil {
		return err
	}
	return enableTTL(ctx, client, table)
}

// waitActive asks for the table's description until it is ACTIVE, with a
// growing pause (100 ms to 2 s), until ctx ends.
func waitActive(ctx context.Context, client *dynamodb.Client, table string) (*types.TableDescription, error) {
	pause := 100 * time.Millisecond
	for {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &table})
		var missing *types.ResourceNotFoundException
		switch {
		case errors.As(err, &missing) && ctx.Err() == nil:
			// Just created: DynamoDB may not describe it yet.
		case err != nil:
			return nil, tableError(table, "describe", err)
		case out.Table != nil && out.Table.TableStatus == types.TableStatusActive:
			return out.Table, nil
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, tableError(table, "wait for", fmt.Errorf("it was not ACTIVE in time: %w", ctx.Err()))
		case <-t.C:
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// checkKey refuses a table whose key is not the store's.
func checkKey(table string, desc *types.TableDescription) error {
	keyType := map[string]types.ScalarAttributeType{}
	for _, a := range desc.AttributeDefinitions {
		keyType[aws.ToString(a.AttributeName)] = a.AttributeType
	}
	ks := desc.KeySchema
	if len(ks) == 1 && aws.ToString(ks[0].AttributeName) == AttrKey && ks[0].KeyType == types.KeyTypeHash && keyType[AttrKey] == types.ScalarAttributeTypeS {
		return nil
	}
	var got []string
	for _, k := range ks {
		got = append(got, fmt.Sprintf("%s %s (%s)", aws.ToString(k.AttributeName), k.KeyType, keyType[aws.ToString(k.AttributeName)]))
	}
	return fmt.Errorf("median: dynamostore: table %q exists with the key %v; the store needs a table of its own whose only key is the partition key %q, a string: give the store another Options.Table", table, got, AttrKey)
}

// enableTTL turns TTL on for AttrTTL unless it is on already; a server that
// does not know the TTL operations is left as it is.
func enableTTL(ctx context.Context, client *dynamodb.Client, table string) error {
	out, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: &table})
	switch {
	case isUnknownOperation(err):
		return nil
	case err != nil:
		return tableError(table, "read the TTL setting of", err)
	}
	if d := out.TimeToLiveDescription; d != nil {
		attr := aws.ToString(d.AttributeName)
		switch d.TimeToLiveStatus {
		case types.TimeToLiveStatusEnabled, types.TimeToLiveStatusEnabling:
			if attr == AttrTTL {
				return nil
			}
			return fmt.Errorf("median: dynamostore: table %q has TTL on for the attribute %q; the store's items end at %q: turn TTL off and call CreateTable again, or give the store a table of its own", table, attr, AttrTTL)
		}
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               &table,
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(AttrTTL), Enabled: aws.Bool(true)},
	})
	if err != nil && !isUnknownOperation(err) {
		return tableError(table, "turn TTL on for", err)
	}
	return nil
}

// tableError wraps an error of CreateTable.
func tableError(table, what string, err error) error {
	return fmt.Errorf("median: dynamostore: could not %s table %q: %w", what, table, err)
}
