package dynamo

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// cleanAWSEnv hides the machine's AWS configuration from the SDK.
func cleanAWSEnv(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, v := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
		"AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CA_BUNDLE"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(home, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(home, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// localEndpoint is DynamoDB Local's endpoint (dynamotest.Endpoint, which
// this package's own tests cannot import).
func localEndpoint(t *testing.T) string {
	t.Helper()
	ep := os.Getenv("REDAMO_TEST_DYNAMODB_ENDPOINT")
	if ep == "" {
		if os.Getenv("REDAMO_TEST_REQUIRE_DYNAMODB") == "1" {
			t.Fatal("REDAMO_TEST_DYNAMODB_ENDPOINT is not set")
		}
		t.Skip("REDAMO_TEST_DYNAMODB_ENDPOINT not set")
	}
	return ep
}

func TestNewConfigErrors(t *testing.T) {
	cleanAWSEnv(t)
	ctx := context.Background()
	for _, name := range []string{"", "ab", "has space", "slash/no"} {
		_, err := New(ctx, Config{Table: name, Endpoint: "http://127.0.0.1:1"})
		require.ErrorContains(t, err, "invalid table name", name)
	}
	_, err := New(ctx, Config{Table: "redamo"})
	require.ErrorContains(t, err, "no AWS region")
}

// With a custom endpoint and no credentials anywhere, the store uses the
// static local ones; credentials in the environment win.
func TestLocalCredentials(t *testing.T) {
	cleanAWSEnv(t)
	ctx := context.Background()
	accessKey := func() string {
		s, err := New(ctx, Config{Table: "redamo", Endpoint: "http://127.0.0.1:1"})
		require.NoError(t, err)
		creds, err := s.db.Options().Credentials.Retrieve(ctx)
		require.NoError(t, err)
		return creds.AccessKeyID
	}
	require.Equal(t, LocalAccessKey, accessKey())

	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDFROMENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	require.Equal(t, "AKIDFROMENV", accessKey())

	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	require.NoError(t, os.WriteFile(os.Getenv("AWS_SHARED_CREDENTIALS_FILE"),
		[]byte("[default]\naws_access_key_id = AKIDFROMFILE\naws_secret_access_key = secret\n"), 0o600))
	require.Equal(t, "AKIDFROMFILE", accessKey())
}

// CreateTable makes the table redamo's data model needs, is idempotent (as
// several instances starting together need), and enables TTL.
func TestCreateTable(t *testing.T) {
	ep := localEndpoint(t)
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	s, err := NewTemp(ctx, Config{Endpoint: ep, Logger: quiet})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.DeleteTable(context.Background())) })

	again, err := New(ctx, Config{Endpoint: ep, Table: s.Table(), CreateTable: true, Logger: quiet})
	require.NoError(t, err)

	d, err := again.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &s.table})
	require.NoError(t, err)
	require.Equal(t, types.TableStatusActive, d.Table.TableStatus)
	require.Len(t, d.Table.KeySchema, 2)
	require.Equal(t, "pk", *d.Table.KeySchema[0].AttributeName)
	require.Equal(t, types.KeyTypeHash, d.Table.KeySchema[0].KeyType)
	require.Equal(t, "sk", *d.Table.KeySchema[1].AttributeName)
	require.Equal(t, types.KeyTypeRange, d.Table.KeySchema[1].KeyType)
	for _, a := range d.Table.AttributeDefinitions {
		require.Equal(t, types.ScalarAttributeTypeB, a.AttributeType, *a.AttributeName)
	}
	require.Equal(t, types.BillingModePayPerRequest, d.Table.BillingModeSummary.BillingMode)

	ttl, err := again.db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: &s.table})
	require.NoError(t, err)
	require.Equal(t, types.TimeToLiveStatusEnabled, ttl.TimeToLiveDescription.TimeToLiveStatus)
	require.Equal(t, "ttl", *ttl.TimeToLiveDescription.AttributeName)

	require.NoError(t, s.DeleteTable(ctx))
	require.NoError(t, s.DeleteTable(ctx), "deleting a missing table is not an error")
}
