package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/internal/testserver"
)

// testConfig is a memory-store configuration on a free port.
func testConfig() config {
	return config{
		Addr:            "127.0.0.1:0",
		Store:           storeMemory,
		Table:           "redamo",
		ProtoMaxBulkLen: defaultProtoMaxBulkLen,
		Bus:             busAuto,
	}
}

// startApp starts redamo in-process and shuts it down at the end of the test.
func startApp(t *testing.T, cfg config) (*app, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	a, err := start(context.Background(), cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.shutdown(ctx)
	})
	return a, &logs
}

func client(t *testing.T, opts *redis.Options) *redis.Client {
	t.Helper()
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func scrapeMetrics(t *testing.T, a *app) string {
	t.Helper()
	resp, err := http.Get("http://" + a.metricsLn.Addr().String() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

func TestServeMemoryWithMetrics(t *testing.T) {
	cfg := testConfig()
	cfg.MetricsAddr = "127.0.0.1:0"
	a, logs := startApp(t, cfg)
	require.Contains(t, logs.String(), "redamo ready")
	require.Contains(t, logs.String(), "store=memory")

	ctx := context.Background()
	c := client(t, &redis.Options{Addr: a.ln.Addr().String()})
	require.NoError(t, c.Set(ctx, "a", "1", 0).Err())
	require.Equal(t, "1", c.Get(ctx, "a").Val())
	require.Equal(t, int64(2), c.Incr(ctx, "a").Val())
	require.Error(t, c.Do(ctx, "nosuchcommand").Err())

	// The store's requests reach both the INFO counters and Prometheus.
	require.Positive(t, a.srv.Stats.Requests("get", dynastore.OpGetItem))
	body := scrapeMetrics(t, a)
	for _, want := range []string{
		`redamo_commands_total{command="set"} 1`,
		`redamo_commands_total{command="incr"} 1`,
		`redamo_connected_clients 1`,
		`redamo_dynamodb_requests_total{command="get",operation="GetItem"} 1`,
		`redamo_command_duration_seconds_count{command="get"} 1`,
	} {
		require.Contains(t, body, want+"\n")
	}
	require.NotContains(t, body, "nosuchcommand")

	ctxShut, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, a.shutdown(ctxShut))
	_, err := net.DialTimeout("tcp", a.ln.Addr().String(), time.Second)
	require.Error(t, err, "the listener must be closed after shutdown")
}

func TestServeAWSFaithful(t *testing.T) {
	cfg := testConfig()
	cfg.AWSFaithful = true
	a, logs := startApp(t, cfg)
	require.Contains(t, logs.String(), "aws_faithful=true")

	ctx := context.Background()
	c := client(t, &redis.Options{Addr: a.ln.Addr().String()})
	require.NoError(t, c.Set(ctx, "a", "1", 0).Err())
	require.Equal(t, "1", c.Get(ctx, "a").Val())
	// The faithful layer reports the requests it served, as a backend does.
	require.Positive(t, a.srv.Stats.Requests("get", dynastore.OpGetItem))
}

func TestMetricsOffByDefault(t *testing.T) {
	a, _ := startApp(t, testConfig())
	require.Nil(t, a.metricsSrv)
	require.NoError(t, client(t, &redis.Options{Addr: a.ln.Addr().String()}).Ping(context.Background()).Err())
}

func TestRequirePass(t *testing.T) {
	cfg := testConfig()
	cfg.RequirePass = "s3cret"
	a, _ := startApp(t, cfg)
	ctx := context.Background()
	err := client(t, &redis.Options{Addr: a.ln.Addr().String(), Protocol: 2}).Ping(ctx).Err()
	require.ErrorContains(t, err, "NOAUTH")
	c := client(t, &redis.Options{Addr: a.ln.Addr().String(), Password: "s3cret"})
	require.NoError(t, c.Ping(ctx).Err())
}

func TestTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := testserver.SelfSigned(t, dir)
	cfg := testConfig()
	cfg.TLSCert, cfg.TLSKey = certFile, keyFile
	a, logs := startApp(t, cfg)
	require.Contains(t, logs.String(), "tls=true")
	addr := a.ln.Addr().String()
	ctx := context.Background()

	c := client(t, &redis.Options{Addr: addr, TLSConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}})
	require.NoError(t, c.Set(ctx, "k", "over tls", 0).Err())
	require.Equal(t, "over tls", c.Get(ctx, "k").Val())

	// A plain-text client gets no Redis reply from a TLS listener.
	plain := client(t, &redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, ReadTimeout: 2 * time.Second})
	require.Error(t, plain.Ping(ctx).Err())
	// Nor does a client that does not trust the certificate.
	untrusting := client(t, &redis.Options{Addr: addr, MaxRetries: -1, TLSConfig: &tls.Config{ServerName: "localhost"}})
	require.ErrorContains(t, untrusting.Ping(ctx).Err(), "certificate")
}

func TestStartErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	require.NoError(t, os.WriteFile(garbage, []byte("not a certificate"), 0o600))

	tests := []struct {
		name    string
		mod     func(c *config)
		wantErr string
	}{
		{"address in use", func(c *config) { c.Addr = busy.Addr().String() }, "listen on " + busy.Addr().String()},
		{"metrics address in use", func(c *config) { c.MetricsAddr = busy.Addr().String() }, "metrics: listen on"},
		{"missing certificate", func(c *config) { c.TLSCert, c.TLSKey = filepath.Join(dir, "no.pem"), garbage }, "loading TLS certificate"},
		{"garbage certificate", func(c *config) { c.TLSCert, c.TLSKey = garbage, garbage }, "loading TLS certificate"},
		{"bad table name", func(c *config) { c.Store, c.Table, c.Endpoint = storeDynamoDB, "x", "http://127.0.0.1:1" }, "invalid table name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			tt.mod(&cfg)
			_, err := start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestRealMain(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"version", []string{"--version"}, 0, "redamo " + version + " (Redis 7.0.15 protocol)\n", ""},
		{"help", []string{"-help"}, 0, "", "REDAMO_TABLE"},
		{"bad flag", []string{"--store", "bogus"}, 2, "", `redamo: --store "bogus": must be memory or dynamodb`},
		{"start failure", []string{"--tls-cert", "/nonexistent", "--tls-key", "/nonexistent"}, 1, "", "loading TLS certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := realMain(tt.args, func(string) string { return "" }, &stdout, &stderr)
			require.Equal(t, tt.wantCode, code, stderr.String())
			require.Equal(t, tt.wantStdout, stdout.String())
			require.Contains(t, stderr.String(), tt.wantStderr)
		})
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, testConfig(), slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after its context was cancelled")
	}
}

// TestServeDynamoDB runs the same wiring on DynamoDB Local, with each
// --dynamodb-client: the table is created, commands work, requests are
// counted per command, and the data requests take the path asked for (told
// apart by the User-Agent, seen by a proxy in front of DynamoDB Local).
func TestServeDynamoDB(t *testing.T) {
	ep := os.Getenv("REDAMO_TEST_DYNAMODB_ENDPOINT")
	if ep == "" {
		if os.Getenv("REDAMO_TEST_REQUIRE_DYNAMODB") == "1" {
			t.Fatal("REDAMO_TEST_DYNAMODB_ENDPOINT is not set")
		}
		t.Skip("REDAMO_TEST_DYNAMODB_ENDPOINT not set: no DynamoDB Local")
	}
	target, err := url.Parse(ep)
	require.NoError(t, err)
	for _, tc := range []struct {
		client string
		direct bool // GetItem goes out on redamo's own path
	}{
		{clientDirect, true},
		{clientSDK, false},
	} {
		t.Run(tc.client, func(t *testing.T) {
			var mu sync.Mutex
			agents := map[string]string{} // X-Amz-Target -> User-Agent
			proxy := httputil.NewSingleHostReverseProxy(target)
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				agents[r.Header.Get("X-Amz-Target")] = r.Header.Get("User-Agent")
				mu.Unlock()
				proxy.ServeHTTP(w, r)
			}))
			defer front.Close()

			cfg := testConfig()
			cfg.Store, cfg.Endpoint, cfg.Region, cfg.CreateTable = storeDynamoDB, front.URL, "us-east-1", true
			cfg.DynamoDBClient = tc.client
			cfg.Table = fmt.Sprintf("cmd_%d", time.Now().UnixNano())
			cfg.MetricsAddr = "127.0.0.1:0"
			a, logs := startApp(t, cfg)
			require.Contains(t, logs.String(), "table="+cfg.Table)
			require.Contains(t, logs.String(), "endpoint="+front.URL)
			require.Contains(t, logs.String(), "dynamodb_client="+tc.client)

			ctx := context.Background()
			c := client(t, &redis.Options{Addr: a.ln.Addr().String()})
			require.NoError(t, c.Set(ctx, "a", "v", 0).Err())
			require.Equal(t, "v", c.Get(ctx, "a").Val())
			require.Equal(t, int64(1), a.srv.Stats.Requests("get"))
			require.Equal(t, int64(1), a.srv.Stats.Requests("set"))
			body := scrapeMetrics(t, a)
			require.Contains(t, body, `redamo_dynamodb_requests_total{command="get",operation="GetItem"} 1`+"\n")
			require.True(t, strings.Contains(body, `redamo_dynamodb_consumed_read_capacity_units_total{command="get",operation="GetItem"}`),
				"DynamoDB reports consumed capacity")

			mu.Lock()
			defer mu.Unlock()
			ua, ok := agents["DynamoDB_20120810.GetItem"]
			require.True(t, ok, "no GetItem went through the proxy: %v", agents)
			require.Equal(t, tc.direct, strings.HasPrefix(ua, "redamo (direct"), "GetItem's User-Agent: %q", ua)
		})
	}
}
