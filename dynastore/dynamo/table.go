package dynamo

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/redamo/redamo/dynastore"
)

// Table management is control-plane work done once at start-up, so it uses
// plain calls bounded by these timeouts rather than the data-plane retries.
const (
	controlCallTimeout = 10 * time.Second
	tableActiveTimeout = 5 * time.Minute
)

// Errors of the table check at start (prepareTable), for callers that
// tell the user what to do; each message says what is wrong and how to
// fix it.
var (
	ErrNoTable     = errors.New("dynamo: table does not exist")
	ErrTableSchema = errors.New("dynamo: table has the wrong key schema")
	// ErrTTLOff: TTL is off, which CreateTable would turn on.
	ErrTTLOff = errors.New("dynamo: table's TTL is off")
	// ErrTableTTL: TTL is set otherwise than redamo needs, in a way
	// CreateTable does not change (another attribute, being disabled).
	ErrTableTTL = errors.New("dynamo: table's TTL is not enabled on " + dynastore.AttrTTL)
)

// prepareTable makes sure the table is one redamo can use: it exists, its
// key is pk (binary) and sk (binary), and DynamoDB's TTL deletes items on
// dynastore.AttrTTL. Without TTL, expired keys, WATCH marks and dedup
// records would pile up forever, unseen (reads hide them) but stored and
// billed; so a table without it is an error at start rather than a slow
// leak. With create set (Config.CreateTable, which opts into table
// management) a missing table is created and TTL is turned on where it is
// off; without it the table is only checked, and the error says what to
// run.
func (s *Store) prepareTable(ctx context.Context, create bool) error {
	desc, err := s.describeTable(ctx)
	if err != nil {
		return err
	}
	existed := desc != nil
	if !existed {
		if !create {
			return fmt.Errorf("%w: %q (create it: %s)", ErrNoTable, s.table, s.createTableCommand())
		}
		if err := s.createTable(ctx); err != nil {
			return err
		}
	}
	if !existed || create && desc.TableStatus != types.TableStatusActive {
		if desc, err = s.waitActive(ctx); err != nil {
			return err
		}
	}
	if err := s.checkKeySchema(desc); err != nil {
		return err
	}
	return s.checkTTL(ctx, create, existed)
}

// createTableCommand is the aws CLI command that creates the table as
// createTable does.
func (s *Store) createTableCommand() string {
	return fmt.Sprintf("aws dynamodb create-table --table-name %s --attribute-definitions AttributeName=%s,AttributeType=B AttributeName=%s,AttributeType=B "+
		"--key-schema AttributeName=%[2]s,KeyType=HASH AttributeName=%[3]s,KeyType=RANGE --billing-mode PAY_PER_REQUEST, then %s",
		s.table, dynastore.AttrPK, dynastore.AttrSK, s.enableTTLCommand())
}

// enableTTLCommand is the aws CLI command that enables TTL as redamo needs.
func (s *Store) enableTTLCommand() string {
	return fmt.Sprintf("aws dynamodb update-time-to-live --table-name %s --time-to-live-specification Enabled=true,AttributeName=%s",
		s.table, dynastore.AttrTTL)
}

func (s *Store) createTable(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, controlCallTimeout)
	defer cancel()
	in := &dynamodb.CreateTableInput{
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
	}
	if s.provisioned != nil {
		in.BillingMode, in.ProvisionedThroughput = types.BillingModeProvisioned, s.provisioned
	}
	_, err := s.db.CreateTable(cctx, in)
	// Another instance may be creating it at the same moment.
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("dynamo: creating table %q: %w", s.table, err)
	}
	if err == nil {
		s.log.Info("created DynamoDB table", "table", s.table)
	}
	return nil
}

// describeTable returns the table's description, nil if it does not exist.
func (s *Store) describeTable(ctx context.Context) (*types.TableDescription, error) {
	cctx, cancel := context.WithTimeout(ctx, controlCallTimeout)
	defer cancel()
	out, err := s.db.DescribeTable(cctx, &dynamodb.DescribeTableInput{TableName: &s.table})
	var nf *types.ResourceNotFoundException
	switch {
	case err == nil && out.Table != nil:
		return out.Table, nil
	case err == nil:
		return nil, fmt.Errorf("dynamo: describing table %q: the answer has no table", s.table)
	case errors.As(err, &nf):
		return nil, nil
	}
	return nil, fmt.Errorf("dynamo: describing table %q%s: %w", s.table, permissionHint(err, "DescribeTable"), err)
}

// permissionHint names the IAM action a request was denied, for messages.
func permissionHint(err error, action string) string {
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() == "AccessDeniedException" {
		return fmt.Sprintf(" (redamo needs permission for dynamodb:%s at start)", action)
	}
	return ""
}

func (s *Store) waitActive(ctx context.Context) (*types.TableDescription, error) {
	ctx, cancel := context.WithTimeout(ctx, tableActiveTimeout)
	defer cancel()
	wait := 50 * time.Millisecond
	for {
		desc, err := s.describeTable(ctx)
		switch {
		case err != nil:
			return nil, fmt.Errorf("dynamo: waiting for table %q: %w", s.table, err)
		case desc != nil && desc.TableStatus == types.TableStatusActive:
			return desc, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("dynamo: table %q did not become active: %w", s.table, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// checkKeySchema verifies that the table's key is what every item redamo
// writes has: pk (binary) as partition key, sk (binary) as sort key.
func (s *Store) checkKeySchema(desc *types.TableDescription) error {
	got := keySchema(desc)
	want := []string{
		fmt.Sprintf("%s (B, HASH)", dynastore.AttrPK),
		fmt.Sprintf("%s (B, RANGE)", dynastore.AttrSK),
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("%w: %q has key %s; redamo needs %s. A table's key cannot be changed: use another table (a new name with create-table, or %s)",
			ErrTableSchema, s.table, strings.Join(got, ", "), strings.Join(want, ", "), s.createTableCommand())
	}
	return nil
}

// checkTTL verifies that DynamoDB's TTL is enabled on dynastore.AttrTTL,
// enabling it when create is set and it is off (said in the log when the
// table existed before: a new table always needs it).
func (s *Store) checkTTL(ctx context.Context, create, existed bool) error {
	status, attr, err := s.describeTTL(ctx)
	if err != nil {
		return err
	}
	if status == types.TimeToLiveStatusDisabled && create {
		uerr := s.enableTTL(ctx)
		if uerr == nil {
			if existed {
				s.log.Info("enabled TTL on the DynamoDB table", "table", s.table, "attribute", dynastore.AttrTTL)
			}
			return nil
		}
		// Another instance starting with CreateTable may have enabled it a
		// moment before, and DynamoDB refuses to enable it twice: what
		// counts is the setting now.
		if status, attr, err = s.describeTTL(ctx); err != nil {
			return err
		}
		if status == types.TimeToLiveStatusDisabled {
			return fmt.Errorf("%w: enabling it on %q%s: %w", ErrTableTTL, s.table, permissionHint(uerr, "UpdateTimeToLive"), uerr)
		}
	}
	switch status {
	case types.TimeToLiveStatusEnabled, types.TimeToLiveStatusEnabling:
		if attr == dynastore.AttrTTL {
			return nil
		}
		return fmt.Errorf("%w: %q has TTL on attribute %q; redamo's items carry their deadline in %q. Disable it (aws dynamodb update-time-to-live --table-name %s --time-to-live-specification Enabled=false,AttributeName=%s), then: %s",
			ErrTableTTL, s.table, attr, dynastore.AttrTTL, s.table, attr, s.enableTTLCommand())
	case types.TimeToLiveStatusDisabling:
		return fmt.Errorf("%w: TTL of %q is being disabled; once that is over (DynamoDB takes up to an hour), run: %s",
			ErrTableTTL, s.table, s.enableTTLCommand())
	}
	return fmt.Errorf("%w: %q has TTL off, so expired keys would never be deleted; enable it: %s",
		ErrTTLOff, s.table, s.enableTTLCommand())
}

// describeTTL returns the table's TTL status and attribute.
func (s *Store) describeTTL(ctx context.Context) (types.TimeToLiveStatus, string, error) {
	cctx, cancel := context.WithTimeout(ctx, controlCallTimeout)
	defer cancel()
	d, err := s.db.DescribeTimeToLive(cctx, &dynamodb.DescribeTimeToLiveInput{TableName: &s.table})
	if err != nil {
		return "", "", fmt.Errorf("dynamo: reading the TTL setting of table %q%s: %w", s.table, permissionHint(err, "DescribeTimeToLive"), err)
	}
	if t := d.TimeToLiveDescription; t != nil && t.TimeToLiveStatus != "" {
		return t.TimeToLiveStatus, aws.ToString(t.AttributeName), nil
	}
	return types.TimeToLiveStatusDisabled, "", nil
}

func (s *Store) enableTTL(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, controlCallTimeout)
	defer cancel()
	_, err := s.db.UpdateTimeToLive(cctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: &s.table,
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(dynastore.AttrTTL),
			Enabled:       aws.Bool(true),
		},
	})
	return err
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
