package main

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redamo/redamo/dynastore/dynamo"
	"github.com/redamo/redamo/internal/testserver"
)

// freshTable is the name of a table that does not exist yet on DynamoDB
// Local, deleted when the test ends if something made it.
func freshTable(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("cli_new_%d", time.Now().UnixNano())
	ep := os.Getenv(testserver.EnvEndpoint)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if s, err := dynamo.Admin(ctx, dynamo.Config{Table: name, Endpoint: ep, Region: "us-east-1"}); err == nil {
			_ = s.DeleteTable(ctx)
			_ = s.Close()
		}
	})
	return name
}

// withTable is flags with --table's value replaced by table.
func withTable(flags []string, table string) []string {
	out := append([]string(nil), flags...)
	for i, f := range out {
		if f == "--table" {
			out[i+1] = table
		}
	}
	return out
}

// create-table creates a table redamo can use (billed as asked), checks
// an existing one, and describe-table reports it; both refuse --server.
func TestCLITableVerbs(t *testing.T) {
	for _, p := range cliPaths(t) {
		t.Run(p.name, func(t *testing.T) {
			if serverAddr(p) != "" {
				runSteps(t, p, nil, []cliStep{
					{a("create-table"), 2, "", "create-table acts on the DynamoDB table itself (--table, --region, --endpoint), not through a running redamo: leave --server (REDAMO_SERVER) out"},
					{a("describe-table"), 2, "", "describe-table acts on the DynamoDB table itself"},
				})
				return
			}
			table := freshTable(t)
			fp := cliPath{p.name, withTable(p.flags, table)}
			runSteps(t, fp, nil, []cliStep{
				{a("describe-table"), 1, `{"table":"` + table + `","exists":false}`, `redamo: table "` + table + `" does not exist in region us-east-1, endpoint`},
				{a("get", "k"), 3, "", "does not exist"},
				{a("create-table", "--billing", "provisioned"), 2, "", "--billing provisioned needs --rcu N and --wcu N"},
				{a("create-table", "--rcu", "5"), 2, "", "--rcu and --wcu are for --billing provisioned"},
				{a("create-table", "--billing", "free"), 2, "", `--billing "free": must be on-demand or provisioned`},
				{a("create-table", "--billing", "provisioned", "--rcu", "0", "--wcu", "1"), 2, "", "--rcu 0: must be positive"},
				{a("create-table", "--create-table"), 2, "", "--create-table (REDAMO_CREATE_TABLE) is for the other verbs"},
				{a("describe-table"), 1, `{"table":"` + table + `","exists":false}`, "does not exist"},
				{a("create-table", "--billing", "provisioned", "--rcu", "5", "--wcu", "3"), 0,
					`{"table":"` + table + `","created":true,"ok":true,"billing":"provisioned"}`, ""},
				{a("create-table"), 0, `{"table":"` + table + `","created":false,"ok":true,"billing":"provisioned"}`, ""},
				{a("describe-table"), 0, `{"table":"` + table + `","exists":true,"status":"ACTIVE","billing":"provisioned","rcu":5,"wcu":3,` +
					`"item_count":N,"size_bytes":N,"key":"pk (B, HASH), sk (B, RANGE)","ttl":"ENABLED","ttl_attribute":"ttl","ok":true}`, ""},
				{a("set", "k", "v"), 0, `{"key":"k","value":"v","set":true}`, ""},
				{a("describe-table", "--format", "value"), 0, "true", ""},
			})
		})
	}
}
