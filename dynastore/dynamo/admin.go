package dynamo

// Table administration for the shell's create-table and describe-table:
// the same checks and creation as a server's start (prepareTable), with
// the billing chosen, and what DynamoDB says of the table.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Billing is how a new table is billed: on demand (the zero value), or
// provisioned with RCU read and WCU write capacity units.
type Billing struct {
	Provisioned bool
	RCU, WCU    int64
}

// TableInfo is what DynamoDB says of a table.
type TableInfo struct {
	Name, Status string
	// Billing is "on-demand" or "provisioned" (then RCU and WCU).
	Billing  string
	RCU, WCU int64
	// ItemCount and SizeBytes are DynamoDB's estimates, updated about
	// every six hours.
	ItemCount, SizeBytes int64
	// KeySchema is the key as "pk (B, HASH), sk (B, RANGE)".
	KeySchema string
	// TTLStatus is DynamoDB's (ENABLED, DISABLED, ...), TTLAttribute the
	// attribute it deletes on.
	TTLStatus, TTLAttribute string
	// Problem is what makes the table unusable by redamo (ErrTableSchema,
	// ErrTTLOff, ErrTableTTL), nil when it is fine.
	Problem error
}

// Admin returns a Store on cfg's table that neither checks nor creates the
// table (cfg.CreateTable is ignored): for CreateTable and Describe.
func Admin(ctx context.Context, cfg Config) (*Store, error) {
	s, err := open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s.calibrated = make(chan struct{})
	close(s.calibrated)
	return s, nil
}

// CreateTable creates the table with TTL on, billed as b, and waits until
// it is active; created is false when it existed. An existing table is
// only checked: the error says what is wrong with it (ErrTableSchema,
// ErrTTLOff, ErrTableTTL), and nothing is changed.
func (s *Store) CreateTable(ctx context.Context, b Billing) (created bool, err error) {
	desc, err := s.describeTable(ctx)
	if err != nil {
		return false, err
	}
	if desc != nil {
		return false, s.prepareTable(ctx, false)
	}
	if b.Provisioned {
		s.provisioned = &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(b.RCU), WriteCapacityUnits: aws.Int64(b.WCU)}
	}
	return true, s.prepareTable(ctx, true)
}

// Describe returns what DynamoDB says of the table, ErrNoTable when there
// is none.
func (s *Store) Describe(ctx context.Context) (*TableInfo, error) {
	desc, err := s.describeTable(ctx)
	if err != nil {
		return nil, err
	}
	if desc == nil {
		return nil, fmt.Errorf("%w: %q", ErrNoTable, s.table)
	}
	info := &TableInfo{
		Name:      s.table,
		Status:    string(desc.TableStatus),
		Billing:   "provisioned",
		ItemCount: aws.ToInt64(desc.ItemCount),
		SizeBytes: aws.ToInt64(desc.TableSizeBytes),
	}
	if bs := desc.BillingModeSummary; bs != nil && bs.BillingMode == types.BillingModePayPerRequest {
		info.Billing = "on-demand"
	} else if pt := desc.ProvisionedThroughput; pt != nil {
		info.RCU, info.WCU = aws.ToInt64(pt.ReadCapacityUnits), aws.ToInt64(pt.WriteCapacityUnits)
	}
	info.KeySchema = strings.Join(keySchema(desc), ", ")
	status, attr, err := s.describeTTL(ctx)
	if err != nil {
		return nil, err
	}
	info.TTLStatus, info.TTLAttribute = string(status), attr
	if info.Problem = s.checkKeySchema(desc); info.Problem == nil {
		info.Problem = s.checkTTL(ctx, false, true)
	}
	if info.Problem != nil && !errors.Is(info.Problem, ErrTableSchema) && !errors.Is(info.Problem, ErrTTLOff) && !errors.Is(info.Problem, ErrTableTTL) {
		return nil, info.Problem
	}
	return info, nil
}

// keySchema is the table's key, an element per attribute: "pk (B, HASH)".
func keySchema(desc *types.TableDescription) []string {
	attrType := map[string]types.ScalarAttributeType{}
	for _, a := range desc.AttributeDefinitions {
		attrType[aws.ToString(a.AttributeName)] = a.AttributeType
	}
	var keys []string
	for _, k := range desc.KeySchema {
		name := aws.ToString(k.AttributeName)
		keys = append(keys, fmt.Sprintf("%s (%s, %s)", name, attrType[name], k.KeyType))
	}
	return keys
}
