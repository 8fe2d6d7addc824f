package main

// create-table and describe-table act on the DynamoDB table itself, not
// through a redamo command: they need the table's settings (--table,
// --region, --endpoint, --profile), never --server.

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/redamo/redamo/dynastore/dynamo"
)

var tableVerbs = []verb{
	{name: "create-table", group: "table", args: "", minArgs: 0, maxArgs: 0, flags: []string{"billing", "rcu", "wcu"}, table: true,
		runs: "CreateTable (pk, sk binary), UpdateTimeToLive (ttl), waiting until the table is active; on an existing table DescribeTable and DescribeTimeToLive",
		summary: "Create --table with TTL on and wait until it is active. On an existing table check its key schema and TTL: " +
			"exit 0 when redamo can use it, 3 saying what is wrong (nothing is changed).",
		example: "create-table", output: `{"table":"redamo","created":true,"ok":true,"billing":"on-demand"}`,
		value: "ok", build: buildCreateTable},
	{name: "describe-table", group: "table", args: "", minArgs: 0, maxArgs: 0, table: true,
		runs: "DescribeTable, DescribeTimeToLive",
		summary: "The table's status, billing, DynamoDB's item count and size estimates (updated about every six hours), " +
			"key and TTL, and whether redamo can use it (exit 1 when it cannot, or when there is no table).",
		example: "describe-table",
		output: `{"table":"redamo","exists":true,"status":"ACTIVE","billing":"on-demand","rcu":null,"wcu":null,"item_count":0,"size_bytes":0,` +
			`"key":"pk (B, HASH), sk (B, RANGE)","ttl":"ENABLED","ttl_attribute":"ttl","ok":true}`,
		value: "ok", build: buildDescribeTable},
}

func init() {
	verbFlags["billing"] = flagDef{name: "billing", arg: "MODE", usage: "on-demand (default) or provisioned (then --rcu and --wcu)"}
	verbFlags["rcu"] = flagDef{name: "rcu", arg: "N", usage: "read capacity units of a provisioned table"}
	verbFlags["wcu"] = flagDef{name: "wcu", arg: "N", usage: "write capacity units of a provisioned table"}
}

// tableAdmin opens the table's admin store (it neither checks nor
// creates the table).
func (x *invocation) tableAdmin() (*dynamo.Store, error) {
	c := x.cli
	level := slog.LevelWarn
	if c.g.verbose {
		level = slog.LevelInfo
	}
	s, err := dynamo.Admin(x.ctx, dynamo.Config{
		Table: c.g.table, Region: c.g.region, Profile: c.g.profile, Endpoint: c.g.endpoint,
		Logger: slog.New(slog.NewTextHandler(c.errOut, &slog.HandlerOptions{Level: level})),
	})
	if err != nil {
		return nil, c.tableError(err)
	}
	return s, nil
}

// onTable refuses --server for a verb that acts on the table itself.
func onTable(x *invocation) error {
	if x.cli.g.server != "" {
		return usageErr("%s acts on the DynamoDB table itself (--table, --region, --endpoint), not through a running redamo: leave --server (REDAMO_SERVER) out",
			x.verb.name)
	}
	return nil
}

func buildCreateTable(x *invocation) (func() result, error) {
	if err := onTable(x); err != nil {
		return nil, err
	}
	if x.cli.g.createTable {
		return nil, usageErr("create-table creates the table: --create-table (REDAMO_CREATE_TABLE) is for the other verbs")
	}
	var b dynamo.Billing
	mode, _ := x.flag("billing")
	_, hasRCU := x.flag("rcu")
	_, hasWCU := x.flag("wcu")
	switch mode {
	case "", "on-demand":
		if hasRCU || hasWCU {
			return nil, usageErr("--rcu and --wcu are for --billing provisioned")
		}
	case "provisioned":
		if !hasRCU || !hasWCU {
			return nil, usageErr("--billing provisioned needs --rcu N and --wcu N")
		}
		b.Provisioned = true
		var err error
		if b.RCU, err = x.intFlag("rcu", 0, true); err != nil {
			return nil, err
		}
		if b.WCU, err = x.intFlag("wcu", 0, true); err != nil {
			return nil, err
		}
	default:
		return nil, usageErr("--billing %q: must be on-demand or provisioned", mode)
	}
	return func() result {
		s, err := x.tableAdmin()
		if err != nil {
			return failed(err)
		}
		defer s.Close()
		created, err := s.CreateTable(x.ctx, b)
		table := x.cli.g.table
		if problem := tableProblem(err); problem != nil {
			return result{obj: object{{"table", table}, {"created", false}, {"ok", false}}, code: exitStore, note: problem.Error()}
		}
		if err != nil {
			return failed(x.cli.tableError(err))
		}
		info, err := s.Describe(x.ctx)
		if err != nil {
			return failed(x.cli.tableError(err))
		}
		return answer(object{{"table", table}, {"created", created}, {"ok", true}, {"billing", info.Billing}}, true)
	}, nil
}

// tableProblem is err when it says the table is unusable as it is (its
// key, its TTL), nil otherwise.
func tableProblem(err error) error {
	if errors.Is(err, dynamo.ErrTableSchema) || errors.Is(err, dynamo.ErrTTLOff) || errors.Is(err, dynamo.ErrTableTTL) {
		return err
	}
	return nil
}

func buildDescribeTable(x *invocation) (func() result, error) {
	if err := onTable(x); err != nil {
		return nil, err
	}
	return func() result {
		s, err := x.tableAdmin()
		if err != nil {
			return failed(err)
		}
		defer s.Close()
		table := x.cli.g.table
		info, err := s.Describe(x.ctx)
		if errors.Is(err, dynamo.ErrNoTable) {
			return result{obj: object{{"table", table}, {"exists", false}}, code: exitNo,
				note: fmt.Sprintf("table %q does not exist in %s: create it with `redamo create-table`", table, x.cli.where())}
		}
		if err != nil {
			return failed(x.cli.tableError(err))
		}
		capacity := func(n int64) any {
			if info.Billing != "provisioned" {
				return nil
			}
			return n
		}
		o := object{{"table", table}, {"exists", true}, {"status", info.Status}, {"billing", info.Billing},
			{"rcu", capacity(info.RCU)}, {"wcu", capacity(info.WCU)}, {"item_count", info.ItemCount}, {"size_bytes", info.SizeBytes},
			{"key", info.KeySchema}, {"ttl", info.TTLStatus}, {"ttl_attribute", orNull(info.TTLAttribute)}, {"ok", info.Problem == nil}}
		if info.Problem != nil {
			return result{obj: o, code: exitNo, note: info.Problem.Error()}
		}
		return answer(o, true)
	}, nil
}

func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}
