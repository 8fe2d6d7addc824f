package main

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseConfig(t *testing.T) {
	defaults := config{
		Addr:            "127.0.0.1:6379",
		Store:           "memory",
		Table:           "redamo",
		DynamoDBClient:  "direct",
		ProtoMaxBulkLen: 512 << 20,
		BlockingPoll:    100 * time.Millisecond,
		ProtectedMode:   true,
		Bus:             "auto",
	}
	with := func(f func(c *config)) config {
		c := defaults
		f(&c)
		return c
	}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    config
		wantErr string // substring of the error; "" means success
	}{
		{name: "defaults", want: defaults},
		{
			name: "environment",
			env: map[string]string{
				"REDAMO_ADDR":               "0.0.0.0:7000",
				"REDAMO_REQUIREPASS":        "s3cret",
				"REDAMO_STORE":              "dynamodb",
				"REDAMO_TABLE":              "cache",
				"REDAMO_REGION":             "eu-west-1",
				"REDAMO_ENDPOINT":           "http://127.0.0.1:8000",
				"REDAMO_CREATE_TABLE":       "true",
				"REDAMO_DYNAMODB_CLIENT":    "sdk",
				"REDAMO_METRICS_ADDR":       ":9121",
				"REDAMO_TLS_CERT":           "c.pem",
				"REDAMO_TLS_KEY":            "k.pem",
				"REDAMO_PROTO_MAX_BULK_LEN": "64mb",
				"REDAMO_BLOCKING_POLL":      "250ms",
				"REDAMO_PROTECTED_MODE":     "no",
				"REDAMO_BUS":                "0.0.0.0:17000",
				"REDAMO_BUS_ADDR":           "10.0.0.5:17000",
				"REDAMO_BUS_SECRET":         "shared",
			},
			want: config{
				Addr: "0.0.0.0:7000", RequirePass: "s3cret", Store: "dynamodb", Table: "cache",
				Region: "eu-west-1", Endpoint: "http://127.0.0.1:8000", CreateTable: true, DynamoDBClient: "sdk",
				MetricsAddr: ":9121", TLSCert: "c.pem", TLSKey: "k.pem", ProtoMaxBulkLen: 64 << 20,
				BlockingPoll: 250 * time.Millisecond, ProtectedMode: false,
				Bus: "0.0.0.0:17000", BusAddr: "10.0.0.5:17000", BusSecret: "shared",
			},
		},
		{
			name: "flags",
			args: []string{"--addr", ":6380", "--store=dynamodb", "--table", "t1", "--create-table",
				"--proto-max-bulk-len", "2097152", "--metrics-addr", "127.0.0.1:9000"},
			want: with(func(c *config) {
				c.Addr, c.Store, c.Table, c.CreateTable = ":6380", "dynamodb", "t1", true
				c.ProtoMaxBulkLen, c.MetricsAddr = 2097152, "127.0.0.1:9000"
			}),
		},
		{
			name: "flags override environment",
			args: []string{"--addr", "127.0.0.1:1", "--create-table=false", "--requirepass", ""},
			env: map[string]string{
				"REDAMO_ADDR": "0.0.0.0:2", "REDAMO_STORE": "dynamodb",
				"REDAMO_CREATE_TABLE": "1", "REDAMO_REQUIREPASS": "fromenv",
			},
			want: with(func(c *config) { c.Addr, c.Store = "127.0.0.1:1", "dynamodb" }),
		},
		{
			name: "redis size units",
			args: []string{"--proto-max-bulk-len", "1GB"},
			want: with(func(c *config) { c.ProtoMaxBulkLen = 1 << 30 }),
		},
		{
			name: "version skips validation",
			args: []string{"--version", "--store", "nope"},
			want: with(func(c *config) { c.ShowVersion, c.Store = true, "nope" }),
		},
		{name: "unknown store", args: []string{"--store", "redis"}, wantErr: `--store "redis": must be memory or dynamodb`},
		{name: "bus address with the embedded store", args: []string{"--bus", "127.0.0.1:17000"}, wantErr: `--bus 127.0.0.1:17000 applies only to --store dynamodb`},
		{name: "bus not an address", args: []string{"--store", "dynamodb", "--bus", "yes"}, wantErr: `--bus "yes": must be auto, off or host:port`},
		{name: "unknown store from env", env: map[string]string{"REDAMO_STORE": "sqlite"}, wantErr: `--store "sqlite"`},
		{name: "bad bool in env", env: map[string]string{"REDAMO_CREATE_TABLE": "maybe"}, wantErr: `REDAMO_CREATE_TABLE="maybe"`},
		{name: "protected mode as redis spells it", args: []string{"--protected-mode", "no"}, want: with(func(c *config) { c.ProtectedMode = false })},
		{name: "protected mode not a boolean", args: []string{"--protected-mode", "maybe"}, wantErr: `"maybe": must be yes or no`},
		{name: "blocking poll too short", args: []string{"--blocking-poll", "1ms"}, wantErr: "--blocking-poll 1ms: must be between 10ms and 1m0s"},
		{name: "blocking poll not a duration", env: map[string]string{"REDAMO_BLOCKING_POLL": "fast"}, wantErr: `REDAMO_BLOCKING_POLL="fast"`},
		{name: "bad size", args: []string{"--proto-max-bulk-len", "12x"}, wantErr: `"12x" is not a size in bytes`},
		{name: "negative size", args: []string{"--proto-max-bulk-len", "-5"}, wantErr: "is not a size in bytes"},
		{name: "size below redis minimum", args: []string{"--proto-max-bulk-len", "1000"}, wantErr: "must be at least 1048576"},
		{name: "size overflow", args: []string{"--proto-max-bulk-len", "9223372036854775807gb"}, wantErr: "is not a size in bytes"},
		{name: "cert without key", args: []string{"--tls-cert", "c.pem"}, wantErr: "--tls-cert and --tls-key go together"},
		{name: "key without cert", env: map[string]string{"REDAMO_TLS_KEY": "k.pem"}, wantErr: "--tls-cert and --tls-key go together"},
		{name: "endpoint with memory store", args: []string{"--endpoint", "http://x"}, wantErr: "--endpoint applies only to --store dynamodb"},
		{name: "table env with memory store", env: map[string]string{"REDAMO_TABLE": "t"}, wantErr: "REDAMO_TABLE applies only to --store dynamodb"},
		{name: "create-table with memory store", args: []string{"--create-table"}, wantErr: "--create-table applies only"},
		{name: "dynamodb client with memory store", args: []string{"--dynamodb-client", "sdk"}, wantErr: "--dynamodb-client applies only to --store dynamodb"},
		{name: "aws faithful", args: []string{"--aws-faithful"}, want: with(func(c *config) { c.AWSFaithful = true })},
		{name: "aws faithful from env", env: map[string]string{"REDAMO_AWS_FAITHFUL": "true"}, want: with(func(c *config) { c.AWSFaithful = true })},
		{name: "aws faithful with dynamodb", args: []string{"--store", "dynamodb", "--aws-faithful"}, wantErr: "--aws-faithful applies only to --store memory"},
		{name: "aws faithful with partition limit", env: map[string]string{"REDAMO_AWS_FAITHFUL": "1"}, args: []string{"--partition-limit"}, wantErr: "REDAMO_AWS_FAITHFUL and --partition-limit"},
		{name: "unknown dynamodb client", args: []string{"--store", "dynamodb", "--dynamodb-client", "http"}, wantErr: `--dynamodb-client "http": must be direct or sdk`},
		{name: "empty table", args: []string{"--store", "dynamodb", "--table", ""}, wantErr: "--table must not be empty"},
		{name: "empty addr", args: []string{"--addr", ""}, wantErr: "--addr must not be empty"},
		{name: "unknown flag", args: []string{"--port", "6379"}, wantErr: "flag provided but not defined: -port"},
		{name: "positional argument", args: []string{"redis.conf"}, wantErr: `unexpected argument "redis.conf"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string { return tt.env[k] }
			got, err := parseConfig(tt.args, getenv, io.Discard)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"1048576", 1 << 20},
		{"1k", 1000},
		{"1kb", 1024},
		{"2m", 2_000_000},
		{"2mb", 2 << 20},
		{"1g", 1_000_000_000},
		{"3GB", 3 << 30},
		{"100b", 100},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseSize(tt.in)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
	for _, bad := range []string{"", "mb", "1.5mb", "1tb", "0x10", "-1kb"} {
		t.Run("bad "+bad, func(t *testing.T) {
			_, err := parseSize(bad)
			require.Error(t, err)
		})
	}
}
