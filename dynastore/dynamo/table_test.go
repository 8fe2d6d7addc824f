package dynamo

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
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

// Region and credentials are never replaced when configured: only an
// endpoint on this machine (DynamoDB Local) gets a default region and the
// local key, each said in a log line; anywhere else (AWS, a VPC endpoint, a
// proxy) a missing region or missing credentials fail at once.
func TestAWSConfigResolution(t *testing.T) {
	const vpce = "https://vpce-0123-abcd.dynamodb.eu-west-1.vpce.amazonaws.com"
	cases := []struct {
		name     string
		cfg      Config
		env      map[string]string
		credFile string // the shared credentials file
		confFile string // the shared config file
		region   string
		key      string
		err      error
		errText  string
		logs     []string // in the log, in this order
	}{
		{name: "DynamoDB Local, nothing configured", cfg: Config{Endpoint: "http://127.0.0.1:8000"},
			region: DefaultLocalRegion, key: LocalAccessKey,
			logs: []string{"no AWS region configured", "no AWS credentials configured"}},
		{name: "localhost", cfg: Config{Endpoint: "http://localhost:8000"}, region: DefaultLocalRegion, key: LocalAccessKey},
		{name: "IPv6 loopback", cfg: Config{Endpoint: "http://[::1]:8000"}, region: DefaultLocalRegion, key: LocalAccessKey},
		{name: "other loopback address", cfg: Config{Endpoint: "http://127.0.0.2:8000/"}, region: DefaultLocalRegion, key: LocalAccessKey},
		{name: "local endpoint from the environment", env: map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000"},
			region: DefaultLocalRegion, key: LocalAccessKey},
		{name: "DynamoDB Local, credentials and region from the environment", cfg: Config{Endpoint: "http://127.0.0.1:8000"},
			env:    map[string]string{"AWS_ACCESS_KEY_ID": "AKIDFROMENV", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_REGION": "eu-west-3"},
			region: "eu-west-3", key: "AKIDFROMENV"},
		{name: "DynamoDB Local, credentials file", cfg: Config{Endpoint: "http://127.0.0.1:8000", Region: "ap-south-1"},
			credFile: "[default]\naws_access_key_id = AKIDFROMFILE\naws_secret_access_key = secret\n",
			region:   "ap-south-1", key: "AKIDFROMFILE"},
		{name: "AWS, no region", env: map[string]string{"AWS_ACCESS_KEY_ID": "AKIDFROMENV", "AWS_SECRET_ACCESS_KEY": "secret"},
			err: ErrNoRegion},
		{name: "AWS, no credentials", cfg: Config{Region: "us-west-2"}, err: ErrNoCredentials},
		{name: "AWS, from the environment", env: map[string]string{"AWS_ACCESS_KEY_ID": "AKIDFROMENV", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_DEFAULT_REGION": "eu-north-1"},
			region: "eu-north-1", key: "AKIDFROMENV"},
		{name: "AWS, profile", cfg: Config{Profile: "prod"},
			credFile: "[prod]\naws_access_key_id = AKIDPROD\naws_secret_access_key = secret\n",
			confFile: "[profile prod]\nregion = sa-east-1\n",
			region:   "sa-east-1", key: "AKIDPROD"},
		{name: "VPC endpoint, no region", cfg: Config{Endpoint: vpce},
			env: map[string]string{"AWS_ACCESS_KEY_ID": "AKIDFROMENV", "AWS_SECRET_ACCESS_KEY": "secret"},
			err: ErrNoRegion, errText: "endpoint " + vpce + " is not on this machine"},
		{name: "VPC endpoint, no credentials", cfg: Config{Endpoint: vpce, Region: "eu-west-1"}, err: ErrNoCredentials},
		{name: "VPC endpoint, credentials from the chain", cfg: Config{Endpoint: vpce, Region: "eu-west-1"},
			env:    map[string]string{"AWS_ACCESS_KEY_ID": "AKIDFROMENV", "AWS_SECRET_ACCESS_KEY": "secret"},
			region: "eu-west-1", key: "AKIDFROMENV"},
		{name: "DynamoDB Local on another host", cfg: Config{Endpoint: "http://10.1.2.3:8000"}, err: ErrNoRegion},
		{name: "DynamoDB Local on another host, configured", cfg: Config{Endpoint: "http://dynamodb:8000", Region: "us-east-1"},
			env:    map[string]string{"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local"},
			region: "us-east-1", key: "local"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cleanAWSEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			if tc.credFile != "" {
				require.NoError(t, os.WriteFile(os.Getenv("AWS_SHARED_CREDENTIALS_FILE"), []byte(tc.credFile), 0o600))
			}
			if tc.confFile != "" {
				require.NoError(t, os.WriteFile(os.Getenv("AWS_CONFIG_FILE"), []byte(tc.confFile), 0o600))
			}
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			ctx := context.Background()
			awsCfg, _, err := loadAWSConfig(ctx, tc.cfg, log)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				require.ErrorContains(t, err, tc.errText)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.region, awsCfg.Region)
			creds, err := awsCfg.Credentials.Retrieve(ctx)
			require.NoError(t, err)
			require.Equal(t, tc.key, creds.AccessKeyID)
			rest := logs.String()
			for _, l := range tc.logs {
				i := strings.Index(rest, l)
				require.GreaterOrEqual(t, i, 0, "%q in the log:\n%s", l, logs.String())
				rest = rest[i+len(l):]
			}
			if tc.key != LocalAccessKey {
				require.NotContains(t, logs.String(), "credentials", "nothing replaced, nothing to say")
			}
		})
	}
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

// At start the store checks the table's key schema and TTL setting and
// says what is wrong and how to fix it; with CreateTable it creates a
// missing table and turns TTL on where it is off, nothing else.
func TestTableCheck(t *testing.T) {
	ep := localEndpoint(t)
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	good, err := NewTemp(ctx, Config{Endpoint: ep, Logger: quiet})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, good.DeleteTable(context.Background())) })

	key := func(name string, typ types.ScalarAttributeType, kt types.KeyType) (types.AttributeDefinition, types.KeySchemaElement) {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: typ},
			types.KeySchemaElement{AttributeName: aws.String(name), KeyType: kt}
	}
	pkB, pkBHash := key("pk", types.ScalarAttributeTypeB, types.KeyTypeHash)
	skB, skBRange := key("sk", types.ScalarAttributeTypeB, types.KeyTypeRange)
	pkS, pkSHash := key("pk", types.ScalarAttributeTypeS, types.KeyTypeHash)
	skS, skSRange := key("sk", types.ScalarAttributeTypeS, types.KeyTypeRange)
	// makeTable creates a table with the given key and TTL attribute ("":
	// TTL off) and returns its name.
	makeTable := func(t *testing.T, ttl string, keys ...any) string {
		name := fmt.Sprintf("%scheck_%x", TempTablePrefix, rand.Uint64())
		in := &dynamodb.CreateTableInput{TableName: &name, BillingMode: types.BillingModePayPerRequest}
		for _, k := range keys {
			switch k := k.(type) {
			case types.AttributeDefinition:
				in.AttributeDefinitions = append(in.AttributeDefinitions, k)
			case types.KeySchemaElement:
				in.KeySchema = append(in.KeySchema, k)
			}
		}
		_, err := good.db.CreateTable(ctx, in)
		require.NoError(t, err)
		t.Cleanup(func() {
			_, err := good.db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &name})
			require.NoError(t, err)
		})
		if ttl != "" {
			_, err := good.db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: &name,
				TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: &ttl, Enabled: aws.Bool(true)}})
			require.NoError(t, err)
		}
		return name
	}
	ttlOf := func(t *testing.T, name string) (types.TimeToLiveStatus, string) {
		d, err := good.db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: &name})
		require.NoError(t, err)
		return d.TimeToLiveDescription.TimeToLiveStatus, aws.ToString(d.TimeToLiveDescription.AttributeName)
	}

	cases := []struct {
		name   string
		ttl    string // "": off
		keys   []any
		create bool
		err    error
		says   []string // in the error message
	}{
		{name: "all well", ttl: "ttl", keys: []any{pkB, pkBHash, skB, skBRange}},
		{name: "all well, create", ttl: "ttl", keys: []any{pkB, pkBHash, skB, skBRange}, create: true},
		{name: "ttl off", keys: []any{pkB, pkBHash, skB, skBRange}, err: ErrTTLOff,
			says: []string{"TTL off", "aws dynamodb update-time-to-live --table-name ", "--time-to-live-specification Enabled=true,AttributeName=ttl"}},
		{name: "ttl off, create turns it on", keys: []any{pkB, pkBHash, skB, skBRange}, create: true},
		{name: "ttl on another attribute", ttl: "expires", keys: []any{pkB, pkBHash, skB, skBRange}, err: ErrTableTTL,
			says: []string{`TTL on attribute "expires"`, "Enabled=false,AttributeName=expires", "Enabled=true,AttributeName=ttl"}},
		{name: "ttl on another attribute, create", ttl: "expires", keys: []any{pkB, pkBHash, skB, skBRange}, create: true, err: ErrTableTTL},
		{name: "string keys", ttl: "ttl", keys: []any{pkS, pkSHash, skS, skSRange}, err: ErrTableSchema,
			says: []string{"has key pk (S, HASH), sk (S, RANGE); redamo needs pk (B, HASH), sk (B, RANGE)", "aws dynamodb create-table"}},
		{name: "no sort key", ttl: "ttl", keys: []any{pkB, pkBHash}, err: ErrTableSchema, says: []string{"has key pk (B, HASH);"}},
		{name: "no sort key, create", ttl: "ttl", keys: []any{pkB, pkBHash}, create: true, err: ErrTableSchema},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := makeTable(t, tc.ttl, tc.keys...)
			s, err := New(ctx, Config{Endpoint: ep, Table: name, CreateTable: tc.create, Logger: quiet})
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				for _, w := range tc.says {
					require.ErrorContains(t, err, w)
				}
				if tc.ttl == "" {
					status, _ := ttlOf(t, name)
					require.Equal(t, types.TimeToLiveStatusDisabled, status, "checked, not changed")
				}
				return
			}
			require.NoError(t, err)
			require.NoError(t, s.Close())
			status, attr := ttlOf(t, name)
			require.Equal(t, types.TimeToLiveStatusEnabled, status)
			require.Equal(t, "ttl", attr)
		})
	}

	t.Run("missing", func(t *testing.T) {
		_, err := New(ctx, Config{Endpoint: ep, Table: TempTablePrefix + "missing", Logger: quiet})
		require.ErrorIs(t, err, ErrNoTable)
		require.ErrorContains(t, err, "aws dynamodb create-table --table-name "+TempTablePrefix+"missing")
	})
}

// Instances starting together with CreateTable on a missing table all
// start: one creates it and enables TTL, the others find it done.
func TestCreateTableTogether(t *testing.T) {
	ep := localEndpoint(t)
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	name := fmt.Sprintf("%stogether_%x", TempTablePrefix, rand.Uint64())
	const n = 4
	stores := make([]*Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = New(ctx, Config{Endpoint: ep, Table: name, CreateTable: true, Logger: quiet})
		}()
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
	}
	require.NoError(t, stores[0].DeleteTable(ctx))
}

// An instance that found TTL off and was refused enabling it, because
// another one enabled it in between (DynamoDB refuses to enable it twice),
// starts.
func TestTTLEnabledMeanwhile(t *testing.T) {
	cleanAWSEnv(t)
	for _, c := range []struct {
		name  string
		after string // TimeToLiveStatus once enabling was refused
		err   error
	}{
		{name: "enabled by another", after: "ENABLED"},
		{name: "still off", after: "DISABLED", err: ErrTableTTL},
	} {
		t.Run(c.name, func(t *testing.T) {
			var describes int
			hc := clientFunc(func(req *http.Request) (*http.Response, error) {
				switch op := strings.TrimPrefix(req.Header.Get("X-Amz-Target"), apiVersionPrefix); op {
				case "DescribeTimeToLive":
					describes++
					status := "DISABLED"
					if describes > 1 {
						status = c.after
					}
					return cannedResponse(req, `{"TimeToLiveDescription":{"AttributeName":"ttl","TimeToLiveStatus":"`+status+`"}}`), nil
				case "UpdateTimeToLive":
					r := cannedResponse(req, `{"__type":"com.amazon.coral.validate#ValidationException","message":"TimeToLive is already enabled"}`)
					r.StatusCode, r.Status = 400, "400 Bad Request"
					return r, nil
				default:
					return cannedResponse(req, wellFormedTable[op]), nil
				}
			})
			_, err := New(context.Background(), Config{Table: "tbl", Endpoint: "http://127.0.0.1:9", CreateTable: true,
				HTTPClient: hc, Logger: slog.New(slog.DiscardHandler)})
			if c.err == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, c.err)
				require.ErrorContains(t, err, "TimeToLive is already enabled")
			}
			require.Equal(t, 2, describes)
		})
	}
}

type clientFunc func(*http.Request) (*http.Response, error)

func (f clientFunc) Do(req *http.Request) (*http.Response, error) { return f(req) }
