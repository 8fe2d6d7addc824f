package commands_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/internal/testserver"
)

// The script holds redis-server 7.0.15's replies; it runs against both.
func TestServerScript(t *testing.T) {
	t.Run("redamo", func(t *testing.T) {
		testserver.RunScript(t, testserver.Start(t, nil).Addr, "testdata/server.txt", false)
	})
	t.Run("redis-server", func(t *testing.T) {
		testserver.RunScript(t, testserver.RedisServer(t), "testdata/server.txt", true)
	})
}

// go-redis parses COMMAND into its CommandInfo; every registered command
// must come through with its name, arity and key positions.
func TestCommandThroughGoRedis(t *testing.T) {
	ctx := context.Background()
	s := testserver.Start(t, nil)
	for _, proto := range []int{2, 3} {
		rdb := s.Client(t, func(o *redis.Options) { o.Protocol = proto })
		cmds, err := rdb.Command(ctx).Result()
		require.NoError(t, err)
		count, err := rdb.Do(ctx, "COMMAND", "COUNT").Int()
		require.NoError(t, err)
		require.Len(t, cmds, count)
		for _, name := range []string{"ping", "client", "command", "config", "info", "get", "set"} {
			require.Contains(t, cmds, name)
		}
		require.Equal(t, int8(2), cmds["get"].Arity)
		require.Equal(t, int8(1), cmds["get"].FirstKeyPos)
		require.Equal(t, int8(-2), cmds["client"].Arity)
		require.Contains(t, cmds["auth"].Flags, "no_auth")
	}
}

// Every command's metadata is well formed: what COMMAND INFO reports must
// be usable by clients, whoever registered the command.
func TestCommandMetadata(t *testing.T) {
	ctx := context.Background()
	rdb := testserver.Start(t, nil).Client(t, func(o *redis.Options) { o.Protocol = 2 })
	names, err := rdb.Do(ctx, "COMMAND", "LIST").StringSlice()
	require.NoError(t, err)
	for _, name := range names {
		info, err := rdb.Do(ctx, "COMMAND", "INFO", name).Slice()
		require.NoError(t, err, name)
		entry := info[0].([]any)
		require.Equal(t, name, entry[0], "name")
		arity := entry[1].(int64)
		require.NotZero(t, arity, "%s: arity", name)
		first, last, step := entry[3].(int64), entry[4].(int64), entry[5].(int64)
		if first == 0 {
			require.Zero(t, last, "%s: last key without a first", name)
		} else {
			require.Positive(t, step, "%s: key step", name)
		}
		require.NotEmpty(t, entry[6], "%s: ACL categories", name)
		docs, err := rdb.Do(ctx, "COMMAND", "DOCS", name).Slice()
		require.NoError(t, err, name)
		require.Len(t, docs, 2, "%s: docs", name)
		fields := map[string]any{}
		list := docs[1].([]any)
		for i := 0; i+1 < len(list); i += 2 {
			fields[list[i].(string)] = list[i+1]
		}
		require.NotEmpty(t, fields["summary"], "%s: summary", name)
		require.NotEmpty(t, fields["since"], "%s: since", name)
		require.NotEmpty(t, fields["group"], "%s: group", name)
	}
}

func TestInfoSections(t *testing.T) {
	ctx := context.Background()
	s := testserver.Start(t, nil)
	rdb := s.Client(t)
	require.NoError(t, rdb.Set(ctx, "k", "v", 0).Err())

	def := rdb.Info(ctx).Val()
	for _, h := range []string{"# Server", "# Clients", "# Memory", "# Persistence", "# Stats", "# Replication", "# CPU", "# Modules", "# Cluster"} {
		require.Contains(t, def, h+"\r\n")
	}
	// Keyspace walks every item on the embedded store: not in the default set.
	require.NotContains(t, def, "# Keyspace")
	require.NotContains(t, def, "# Commandstats")
	require.Contains(t, def, "loading:0\r\n")
	require.Contains(t, def, "redis_version:7.0.15\r\n")
	require.Contains(t, def, "maxmemory_policy:noeviction\r\n")

	ks := rdb.Info(ctx, "keyspace").Val()
	require.Equal(t, "# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n", ks)

	all := rdb.Info(ctx, "everything").Val()
	for _, h := range []string{"# Keyspace", "# Commandstats", "# Redamo"} {
		require.Contains(t, all, h+"\r\n")
	}
	require.Contains(t, all, "cmdstat_set:calls=1,")
	// The store's requests are counted per command.
	require.Regexp(t, `store_cmd_set@\w+:requests=1,retries=0,errors=0,rcu=[\d.]+,wcu=[\d.]+\r\n`, all)
	// The process's retry quota: what is left and what it refused.
	require.Regexp(t, `\r\nretry_quota_available:\d+\r\nretry_quota_refusals:\d+\r\n`, all)
	require.Equal(t, strings.Count(all, "# Server"), 1)

	multi := rdb.Info(ctx, "CLUSTER", "persistence").Val()
	require.True(t, strings.HasPrefix(multi, "# Persistence\r\n"), multi)
	require.Contains(t, multi, "\r\n\r\n# Cluster\r\ncluster_enabled:0\r\n")
}

// TestInfoMakesNoScan: what monitoring sends on every scrape reads no item
// of the table. The keyspace section is exact on the embedded store and
// DynamoDB's item count there (at most one DescribeTable, for the first);
// DBSIZE stays exact, with a Scan.
func TestInfoMakesNoScan(t *testing.T) {
	ctx := context.Background()
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			rdb := b.Start(t).Client(t)
			require.NoError(t, rdb.Set(ctx, "k", "v", 0).Err())
			require.NoError(t, rdb.Set(ctx, "e", "v", time.Hour).Err())
			require.NoError(t, rdb.SAdd(ctx, "s", "m").Err())
			before := b.Stats.Snapshot()
			for _, args := range [][]any{{"INFO", "ALL"}, {"INFO", "EVERYTHING"}, {"INFO", "keyspace"}, {"INFO", "keyspace"}, {"INFO"}} {
				res, err := rdb.Do(ctx, args...).Text()
				require.NoError(t, err, "%v", args)
				if len(args) == 2 && args[1] == "keyspace" && b.Name == "memory" {
					require.Equal(t, "# Keyspace\r\ndb0:keys=3,expires=1,avg_ttl=0\r\n", res)
				}
			}
			reqs := requestsSince(before, b.Stats.Snapshot(), "info")
			require.LessOrEqual(t, reqs[dynastore.OpDescribeTable], int64(1))
			delete(reqs, dynastore.OpDescribeTable)
			require.Empty(t, reqs)
			require.Equal(t, int64(3), rdb.DBSize(ctx).Val())
		})
	}
}

func TestCommandGetKeysFromKeySpecs(t *testing.T) {
	ctx := context.Background()
	rdb := testserver.Start(t, nil).Client(t)
	keys, err := rdb.CommandGetKeys(ctx, "mset", "a", "1", "b", "2").Result()
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, keys)
	_, err = rdb.CommandGetKeys(ctx, "ping").Result()
	require.Error(t, err)
}
