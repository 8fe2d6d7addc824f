// Package dynamotest gives tests a fresh DynamoDB Local table. The endpoint
// comes from REDAMO_TEST_DYNAMODB_ENDPOINT (scripts/dynamodb-local.sh start
// prints one; make test sets it). Without it tests skip, unless
// REDAMO_TEST_REQUIRE_DYNAMODB=1, in which case they fail: make test must
// never pass by skipping the DynamoDB half.
package dynamotest

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/redamo/redamo/dynastore/dynamo"
)

// Environment variables read by Endpoint.
const (
	EnvEndpoint = "REDAMO_TEST_DYNAMODB_ENDPOINT"
	EnvRequire  = "REDAMO_TEST_REQUIRE_DYNAMODB"
)

// Endpoint returns DynamoDB Local's endpoint, or skips (fails, when required) the test.
func Endpoint(t testing.TB) string {
	t.Helper()
	ep := os.Getenv(EnvEndpoint)
	if ep == "" {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("%s is not set but %s=1", EnvEndpoint, EnvRequire)
		}
		t.Skipf("%s not set: no DynamoDB Local (scripts/dynamodb-local.sh start)", EnvEndpoint)
	}
	return ep
}

// NewStore returns a Store on a new table with a random name on DynamoDB
// Local; cfg.Endpoint and cfg.Table are filled in. The table is deleted when
// the test ends.
func NewStore(t testing.TB, cfg dynamo.Config) *dynamo.Store {
	t.Helper()
	cfg.Endpoint = Endpoint(t)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := dynamo.NewTemp(ctx, cfg)
	if err != nil {
		t.Fatalf("dynamotest: creating a table on %s: %v", cfg.Endpoint, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.DeleteTable(ctx); err != nil {
			t.Errorf("dynamotest: %v", err)
		}
		_ = s.Close()
	})
	return s
}
