package dynamo

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/redamo/redamo/dynastore"
)

// Table management is control-plane work done once at start-up, so it uses
// plain calls bounded by these timeouts rather than the data-plane retries.
const (
	controlCallTimeout = 10 * time.Second
	tableActiveTimeout = 5 * time.Minute
)

// ensureTable creates the table if it does not exist, waits until it is
// active and makes sure TTL is enabled on dynastore.AttrTTL.
func (s *Store) ensureTable(ctx context.Context) error {
	exists, err := s.tableExists(ctx)
	if err != nil {
		return err
	}
	if !exists {
		cctx, cancel := context.WithTimeout(ctx, controlCallTimeout)
		_, err := s.db.CreateTable(cctx, &dynamodb.CreateTableInput{
			TableName:   &s.table,
			BillingMode: types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{
				{AttributeName: aws.String(dynastore.AttrPK), AttributeType: types.ScalarAttributeTypeB},
				{AttributeName: aws.String(dynastore.AttrSK), AttributeType: types.ScalarAttributeTypeB},
			},
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(dynastore.AttrPK), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(dynastore.AttrSK), KeyType: types.KeyTypeRange},
			},
		})
		cancel()
		// Another instance may be creating it at the same moment.
		var inUse *types.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) {
			return fmt.Errorf("dynamo: creating table %q: %w", s.table, err)
		}
		if err == nil {
			s.log.Info("created DynamoDB table", "table", s.table)
		}
	}
	if err := s.waitActive(ctx); err != nil {
		return err
	}
	s.enableTTL(ctx)
	return nil
}

func (s *Store) tableExists(ctx context.Context) (bool, error) {
	cctx, cancel := context.WithTimeout(ctx, controlCallTimeout)
	defer cancel()
	_, err := s.db.DescribeTable(cctx, &dynamodb.DescribeTableInput{TableName: &s.table})
	var nf *types.ResourceNotFoundException
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &nf):
		return false, nil
	}
	return false, fmt.Errorf("dynamo: describing table %q: %w", s.table, err)
}

func (s *Store) waitActive(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, tableActiveTimeout)
	defer cancel()
	wait := 50 * time.Millisecond
	for {
		cctx, ccancel := context.WithTimeout(ctx, controlCallTimeout)
		out, err := s.db.DescribeTable(cctx, &dynamodb.DescribeTableInput{TableName: &s.table})
		ccancel()
		var nf *types.ResourceNotFoundException
		switch {
		case err == nil && out.Table.TableStatus == types.TableStatusActive:
			return nil
		case err != nil && !errors.As(err, &nf):
			return fmt.Errorf("dynamo: waiting for table %q: %w", s.table, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("dynamo: table %q did not become active: %w", s.table, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// enableTTL turns on native TTL, which only garbage-collects expired keys,
// so failing to enable it is logged and not fatal (some emulators reject it).
func (s *Store) enableTTL(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, controlCallTimeout)
	defer cancel()
	d, err := s.db.DescribeTimeToLive(cctx, &dynamodb.DescribeTimeToLiveInput{TableName: &s.table})
	if err == nil && d.TimeToLiveDescription != nil {
		switch d.TimeToLiveDescription.TimeToLiveStatus {
		case types.TimeToLiveStatusEnabled, types.TimeToLiveStatusEnabling:
			return
		}
	}
	_, err = s.db.UpdateTimeToLive(cctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: &s.table,
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(dynastore.AttrTTL),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil {
		s.log.Warn("could not enable TTL; expired keys are still invisible but will not be garbage-collected by DynamoDB",
			"table", s.table, "attribute", dynastore.AttrTTL, "err", errorDetail(err))
	}
}

// DeleteTable deletes the Store's table and everything in it. Meant for tests.
func (s *Store) DeleteTable(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, controlCallTimeout)
	defer cancel()
	_, err := s.db.DeleteTable(cctx, &dynamodb.DeleteTableInput{TableName: &s.table})
	var nf *types.ResourceNotFoundException
	if err != nil && !errors.As(err, &nf) {
		return fmt.Errorf("dynamo: deleting table %q: %w", s.table, err)
	}
	return nil
}

// TempTablePrefix starts the names of tables NewTemp creates.
const TempTablePrefix = "redamo_test_"

// NewTemp creates a table with a random name (cfg.Table is ignored) and
// returns a Store on it. Meant for tests: delete the table with DeleteTable
// when done.
func NewTemp(ctx context.Context, cfg Config) (*Store, error) {
	var b [8]byte
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	cfg.Table = TempTablePrefix + hex.EncodeToString(b[:])
	cfg.CreateTable = true
	return New(ctx, cfg)
}
