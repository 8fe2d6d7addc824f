package dynamo

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// CreateTable makes a table redamo can use, billed as asked, and only
// checks one that exists; Describe reports it, and what is wrong with a
// table redamo cannot use.
func TestAdmin(t *testing.T) {
	ep := localEndpoint(t)
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	admin := func(name string) *Store {
		s, err := Admin(ctx, Config{Endpoint: ep, Table: name, Logger: quiet})
		require.NoError(t, err)
		t.Cleanup(func() {
			require.NoError(t, s.DeleteTable(context.Background()))
			require.NoError(t, s.Close())
		})
		return s
	}
	name := func() string { return fmt.Sprintf("%sadmin_%x", TempTablePrefix, rand.Uint64()) }

	s := admin(name())
	_, err := s.Describe(ctx)
	require.ErrorIs(t, err, ErrNoTable)
	created, err := s.CreateTable(ctx, Billing{Provisioned: true, RCU: 5, WCU: 3})
	require.NoError(t, err)
	require.True(t, created)
	info, err := s.Describe(ctx)
	require.NoError(t, err)
	require.Equal(t, &TableInfo{Name: s.table, Status: "ACTIVE", Billing: "provisioned", RCU: 5, WCU: 3,
		KeySchema: "pk (B, HASH), sk (B, RANGE)", TTLStatus: "ENABLED", TTLAttribute: "ttl"}, info)
	created, err = s.CreateTable(ctx, Billing{})
	require.NoError(t, err)
	require.False(t, created)

	od := admin(name())
	created, err = od.CreateTable(ctx, Billing{})
	require.NoError(t, err)
	require.True(t, created)
	info, err = od.Describe(ctx)
	require.NoError(t, err)
	require.Equal(t, "on-demand", info.Billing)
	require.Zero(t, info.RCU)

	// TTL off: reported, and CreateTable does not turn it on.
	off := admin(name())
	_, err = off.db.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: &off.table, BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeB}},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}}})
	require.NoError(t, err)
	info, err = off.Describe(ctx)
	require.NoError(t, err)
	require.ErrorIs(t, info.Problem, ErrTableSchema)
	require.Equal(t, "pk (S, HASH), sk (B, RANGE)", info.KeySchema)
	_, err = off.CreateTable(ctx, Billing{})
	require.ErrorIs(t, err, ErrTableSchema)

	noTTL := admin(name())
	_, err = noTTL.db.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: &noTTL.table, BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeB},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeB}},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}}})
	require.NoError(t, err)
	info, err = noTTL.Describe(ctx)
	require.NoError(t, err)
	require.ErrorIs(t, info.Problem, ErrTTLOff)
	require.Equal(t, "DISABLED", info.TTLStatus)
	created, err = noTTL.CreateTable(ctx, Billing{})
	require.ErrorIs(t, err, ErrTTLOff)
	require.False(t, created)
	info, err = noTTL.Describe(ctx)
	require.NoError(t, err)
	require.Equal(t, "DISABLED", info.TTLStatus, "checked, not changed")
}
