package commands_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/internal/testserver"
)

// TestStreamGroupCommands runs the consumer group commands on a small
// (inline) and a large stream, and with the key commands that carry or
// drop the groups (RENAME, COPY, EXPIRE, DEL).
func TestStreamGroupCommands(t *testing.T) {
	type step struct {
		args []any
		want string
	}
	cases := []struct {
		name  string
		setup int // entries 1-0 .. setup-0 (past 64: the large layout)
		steps []step
	}{
		{"small", 3, []step{
			{[]any{"xgroup", "create", "s", "g", "0"}, "OK"},
			{[]any{"xreadgroup", "group", "g", "alice", "count", 2, "streams", "s", ">"}, "map[s:[[1-0 [f v1]] [2-0 [f v2]]]]"},
			{[]any{"xack", "s", "g", "1-0", "3-0"}, "1"},
			{[]any{"xpending", "s", "g"}, "[1 2-0 2-0 [[alice 1]]]"},
			{[]any{"xadd", "s", "4-0", "f", "v4"}, "4-0"},
			{[]any{"xpending", "s", "g"}, "[1 2-0 2-0 [[alice 1]]]"},
			{[]any{"xclaim", "s", "g", "bob", 0, "2-0", "justid"}, "[2-0]"},
			{[]any{"xreadgroup", "group", "g", "bob", "streams", "s", "0"}, "map[s:[[2-0 [f v2]]]]"},
			{[]any{"xdel", "s", "2-0"}, "1"},
			{[]any{"xautoclaim", "s", "g", "carol", 0, "-"}, "[0-0 [] [2-0]]"},
			{[]any{"xpending", "s", "g"}, "[0 nil nil nil]"},
			{[]any{"expireat", "s", 4102444800}, "1"}, // a fixed deadline: a TTL would count down while the test runs
			{[]any{"rename", "s", "r"}, "OK"},
			{[]any{"copy", "r", "c"}, "1"},
			{[]any{"xreadgroup", "group", "g", "alice", "streams", "r", "c", ">", ">"}, "map[c:[[3-0 [f v3]] [4-0 [f v4]]] r:[[3-0 [f v3]] [4-0 [f v4]]]]"},
			{[]any{"expiretime", "r"}, "4102444800"},
			{[]any{"del", "r"}, "1"},
			{[]any{"xadd", "r", "1-0", "a", "b"}, "1-0"},
			{[]any{"xpending", "r", "g"}, "ERR: NOGROUP No such key 'r' or consumer group 'g'"},
			{[]any{"xinfo", "groups", "c"}, "[map[consumers:2 entries-read:4 lag:0 last-delivered-id:4-0 name:g pending:2]]"},
		}},
		{"large", 200, []step{
			{[]any{"xgroup", "create", "s", "g", "100-0"}, "OK"},
			{[]any{"xreadgroup", "group", "g", "alice", "count", 2, "streams", "s", ">"}, "map[s:[[101-0 [f v101]] [102-0 [f v102]]]]"},
			{[]any{"xadd", "s", "201-0", "f", "v201"}, "201-0"},
			{[]any{"xtrim", "s", "minid", "102"}, "101"},
			{[]any{"xreadgroup", "group", "g", "alice", "streams", "s", "0"}, "map[s:[[101-0 <nil>] [102-0 [f v102]]]]"},
			{[]any{"xclaim", "s", "g", "bob", 0, "101-0", "102-0"}, "[[102-0 [f v102]]]"},
			{[]any{"xinfo", "groups", "s"}, "[map[consumers:2 entries-read:<nil> lag:99 last-delivered-id:102-0 name:g pending:1]]"},
			{[]any{"xreadgroup", "group", "g", "bob", "noack", "count", 1, "streams", "s", ">"}, "map[s:[[103-0 [f v103]]]]"},
			{[]any{"xpending", "s", "g", "-", "+", 10, "bob"}, "[[102-0 bob 0 3]]"},
			{[]any{"xgroup", "destroy", "s", "g"}, "1"},
			{[]any{"xinfo", "stream", "s"}, "map[entries-added:201 first-entry:[102-0 [f v102]] groups:0 last-entry:[201-0 [f v201]] last-generated-id:201-0 length:100 max-deleted-entry-id:0-0 radix-tree-keys:2 radix-tree-nodes:6 recorded-first-entry-id:102-0]"},
		}},
	}
	listBackends(t, func(t *testing.T, _ testserver.Backend, _ *testserver.Server, c *redis.Client) {
		ctx := context.Background()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				require.NoError(t, c.FlushAll(ctx).Err())
				addEntries(t, c, "s", tc.setup)
				for _, s := range tc.steps {
					got := ldo(ctx, c, s.args...)
					if s.args[0] == "xpending" && len(s.args) > 3 {
						// The idle time is the clock's: zero it.
						got = idleRE.ReplaceAllString(got, " 0 ")
					}
					require.Equal(t, s.want, got, "%v", s.args)
				}
			})
		}
	})
}

// TestStreamGroupRequestCounts checks the DynamoDB requests of the group
// commands: the groups live in the key item, and a few pending entries
// with them, so each command is one guarded write of it when this
// instance's item cache holds it (plus the reads of the entries it returns
// from a large stream); more pending entries are items of their own.
func TestStreamGroupRequestCounts(t *testing.T) {
	listBackends(t, func(t *testing.T, b testserver.Backend, _ *testserver.Server, c *redis.Client) {
		count := requestCounter(t, b, c)
		// sub counts a subcommand, whose requests carry its full name.
		sub := func(cmd, subcmd string, args ...any) int64 {
			t.Helper()
			b.Stats.Reset()
			require.NoError(t, c.Do(context.Background(), append([]any{cmd, subcmd}, args...)...).Err())
			return b.Stats.Requests(cmd + "|" + subcmd)
		}
		addEntries(t, c, "s", 10)
		require.EqualValues(t, 1, sub("xgroup", "create", "s", "g", "0"))
		require.EqualValues(t, 1, sub("xgroup", "createconsumer", "s", "g", "bob"))
		// XREADGROUP > of n entries of a small stream: one write.
		require.EqualValues(t, 1, count("xreadgroup", "group", "g", "alice", "count", 5, "streams", "s", ">"))
		// XACK of one id: one write.
		require.EqualValues(t, 1, count("xack", "s", "g", "1-0"))
		require.EqualValues(t, 1, count("xack", "s", "g", "2-0", "3-0"))
		require.EqualValues(t, 1, count("xclaim", "s", "g", "bob", 0, "4-0", "5-0"))
		require.EqualValues(t, 1, count("xautoclaim", "s", "g", "carol", 0, "-"))
		require.EqualValues(t, 1, count("xpending", "s", "g"))
		require.EqualValues(t, 1, sub("xinfo", "groups", "s"))
		// A reply with no write is read from the table, not the cache:
		// one GetItem.
		require.EqualValues(t, 1, count("xack", "s", "g", "9-0"))

		// A large stream: the entries are member items; the group write
		// is one UpdateItem of the key item.
		addEntries(t, c, "big", 300)
		require.EqualValues(t, 1, sub("xgroup", "create", "big", "g", "0"))
		b.Stats.Reset()
		require.NoError(t, c.Do(context.Background(), "xreadgroup", "group", "g", "alice", "count", 50, "streams", "big", ">").Err())
		require.EqualValues(t, 1, b.Stats.Requests("xreadgroup", dynastore.OpQuery))
		require.EqualValues(t, 1, b.Stats.Requests("xreadgroup", dynastore.OpUpdateItem))
		require.EqualValues(t, 2, b.Stats.Requests("xreadgroup"))
		require.EqualValues(t, 1, count("xack", "big", "g", "1-0"))
		// XCLAIM reads the entries it claims (one BatchGetItem) and
		// writes once.
		require.EqualValues(t, 2, count("xclaim", "big", "g", "bob", 0, "2-0", "3-0"))
		require.EqualValues(t, 2, count("xclaim", "big", "g", "bob", 0, "4-0", "justid"))

		// Pending entries past what the key item keeps are in pages: a
		// delivery of 8 or more adds a page of its own to its one
		// transaction (of fewer, it reads and rewrites the last page), an
		// XACK reads the page of its entries
		// (whose consumers' counts it lowers) and writes once, an XPENDING
		// summary reads the first and the last page.
		addEntries(t, c, "many", 300)
		require.EqualValues(t, 1, sub("xgroup", "create", "many", "g", "0"))
		require.NoError(t, c.Do(context.Background(), "xreadgroup", "group", "g", "alice", "count", 100, "streams", "many", ">").Err())
		type want struct {
			args []any
			ops  map[string]int64
		}
		for _, w := range []want{
			{[]any{"xreadgroup", "group", "g", "alice", "count", 10, "streams", "many", ">"},
				map[string]int64{dynastore.OpQuery: 1, dynastore.OpTransactWriteItems: 1}},
			{[]any{"xack", "many", "g", "1-0"},
				map[string]int64{dynastore.OpQuery: 1, dynastore.OpTransactWriteItems: 1}},
			{[]any{"xack", "many", "g", "2-0", "3-0"},
				map[string]int64{dynastore.OpQuery: 1, dynastore.OpTransactWriteItems: 1}},
			{[]any{"xpending", "many", "g"},
				map[string]int64{dynastore.OpGetItem: 1, dynastore.OpQuery: 2}},
			{[]any{"xpending", "many", "g", "-", "+", 10},
				map[string]int64{dynastore.OpGetItem: 1, dynastore.OpQuery: 1}},
			{[]any{"xclaim", "many", "g", "bob", 0, "4-0", "5-0"},
				map[string]int64{dynastore.OpQuery: 1, dynastore.OpBatchGetItem: 1, dynastore.OpTransactWriteItems: 1}},
			// The pending entries it may visit (one Query), the entries of
			// those it claims, one write.
			{[]any{"xautoclaim", "many", "g", "carol", 0, "-", "count", 10},
				map[string]int64{dynastore.OpQuery: 1, dynastore.OpBatchGetItem: 1, dynastore.OpTransactWriteItems: 1}},
		} {
			b.Stats.Reset()
			require.NoError(t, c.Do(context.Background(), w.args...).Err())
			var total int64
			for op, n := range w.ops {
				require.EqualValues(t, n, b.Stats.Requests(fmt.Sprint(w.args[0]), op), "%v %s", w.args, op)
				total += n
			}
			require.EqualValues(t, total, b.Stats.Requests(fmt.Sprint(w.args[0])), "%v", w.args)
		}
	})
}

// TestStreamGroupBlocking: a blocked XREADGROUP is woken by an XADD
// through the same instance or another one, gets each entry once across
// consumers, and fails as Redis does when its group or its key goes.
func TestStreamGroupBlocking(t *testing.T) {
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			s1 := b.Start(t, testserver.WithConfig(func(cfg *commands.Config) { cfg.BlockingPoll = 50 * time.Millisecond }))
			s2 := b.Start(t)
			c1, c2 := s1.Client(t), s2.Client(t)
			for i, writer := range []*redis.Client{s1.Client(t), c2} {
				key := fmt.Sprintf("s%d", i)
				require.NoError(t, c1.XGroupCreateMkStream(ctx, key, "g", "$").Err())
				got := make(chan []redis.XStream, 2)
				for r := 0; r < 2; r++ {
					consumer := fmt.Sprintf("c%d", r)
					go func() {
						v, _ := c1.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: consumer, Streams: []string{key, ">"}, Count: 1, Block: time.Minute}).Result()
						got <- v
					}()
				}
				waitBlocked(t, s1, 2)
				require.NoError(t, writer.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: "1-0", Values: []any{"a", "b"}}).Err())
				require.NoError(t, writer.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: "2-0", Values: []any{"c", "d"}}).Err())
				ids := map[string]bool{}
				for r := 0; r < 2; r++ {
					select {
					case v := <-got:
						require.Len(t, v, 1)
						require.Len(t, v[0].Messages, 1)
						ids[v[0].Messages[0].ID] = true
					case <-time.After(time.Minute):
						t.Fatal("the blocked client was not served")
					}
				}
				require.Equal(t, map[string]bool{"1-0": true, "2-0": true}, ids)
				require.Equal(t, int64(2), c1.XPending(ctx, key, "g").Val().Count)
			}

			// The group destroyed, the key deleted: errors, as Redis.
			for _, tc := range []struct {
				end  func() error
				want string
			}{
				{func() error { return c2.XGroupDestroy(ctx, "s0", "g").Err() }, "NOGROUP the consumer group this client was blocked on no longer exists"},
				{func() error { return c2.Del(ctx, "s1").Err() }, "UNBLOCKED the stream key no longer exists"},
				{func() error { return c2.Set(ctx, "s2", "x", 0).Err() }, "UNBLOCKED the stream key no longer exists"},
			} {
				errc := make(chan error, 1)
				key := "s0"
				switch {
				case strings.HasPrefix(tc.want, "UNBLOCKED") && c1.Exists(ctx, "s1").Val() == 1:
					key = "s1"
				case strings.HasPrefix(tc.want, "UNBLOCKED"):
					key = "s2"
					require.NoError(t, c1.XGroupCreateMkStream(ctx, key, "g", "$").Err())
				}
				go func() {
					errc <- c1.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "x", Streams: []string{key, ">"}, Block: time.Minute}).Err()
				}()
				waitBlocked(t, s1, 1)
				require.NoError(t, tc.end())
				select {
				case err := <-errc:
					require.EqualError(t, err, tc.want)
				case <-time.After(time.Minute):
					t.Fatal("the blocked client was not answered")
				}
			}
		})
	}
}

// TestStreamGroupScript: the group commands run inside a script, against
// its transaction.
func TestStreamGroupScript(t *testing.T) {
	listBackends(t, func(t *testing.T, _ testserver.Backend, _ *testserver.Server, c *redis.Client) {
		ctx := context.Background()
		addEntries(t, c, "s", 3)
		script := `redis.call('XGROUP', 'CREATE', KEYS[1], 'g', '0')
local r = redis.call('XREADGROUP', 'GROUP', 'g', 'a', 'COUNT', 2, 'STREAMS', KEYS[1], '>')
local n = redis.call('XACK', KEYS[1], 'g', '1-0')
local p = redis.call('XPENDING', KEYS[1], 'g')
return {#r[1][2], n, p[1], p[2]}`
		require.Equal(t, "[2 1 1 2-0]", ldo(ctx, c, "eval", script, 1, "s"))
		require.Contains(t, ldo(ctx, c, "eval", "return redis.call('XREADGROUP', 'GROUP', 'g', 'a', 'BLOCK', 0, 'STREAMS', KEYS[1], '>')", 1, "s"),
			"ERR XREADGROUP command is not allowed with BLOCK option from scripts")
	})
}

// idleRE finds the idle time in a rendered XPENDING entry.
var idleRE = regexp.MustCompile(` \d+ `)

// TestStreamGroupsBounded: the groups of a stream are bounded by its key
// item; a command that would grow them past the bound fails with an error
// saying so and changes nothing.
func TestStreamGroupsBounded(t *testing.T) {
	listBackends(t, func(t *testing.T, _ testserver.Backend, _ *testserver.Server, c *redis.Client) {
		ctx := context.Background()
		require.NoError(t, c.XGroupCreateMkStream(ctx, "s", "g", "0").Err())
		name := func(i int) string { return fmt.Sprintf("%d%0100000d", i, 0) }
		for i := 0; i < 3; i++ {
			require.Equal(t, "1", ldo(ctx, c, "xgroup", "createconsumer", "s", "g", name(i)))
		}
		require.Equal(t, "ERR: ERR the consumer groups of this stream outgrow what redamo keeps with a key (delete consumers or groups)",
			ldo(ctx, c, "xgroup", "createconsumer", "s", "g", name(3)))
		require.Equal(t, "3", ldo(ctx, c, "xinfo", "groups", "s")[len("[map[consumers:"):][:1])
		require.Equal(t, "0", ldo(ctx, c, "xgroup", "delconsumer", "s", "g", name(0)))
		require.Equal(t, "1", ldo(ctx, c, "xgroup", "createconsumer", "s", "g", name(3)))
	})
}

// TestStreamGroupStaleCache: an instance whose item cache holds a stream
// from before another instance created a group decides a reply without a
// write (NOGROUP here) on the stored item, not on its copy.
func TestStreamGroupStaleCache(t *testing.T) {
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			c1, c2 := b.Start(t).Client(t), b.Start(t).Client(t)
			for _, cmd := range [][]any{
				{"xreadgroup", "group", "g", "c", "streams", "s", ">"},
				{"xpending", "s", "g"},
				{"xclaim", "s", "g", "c", 0, "1-0"},
				{"xautoclaim", "s", "g", "c", 0, "0"},
				{"xgroup", "createconsumer", "s", "g", "c"},
			} {
				require.NoError(t, c1.Del(ctx, "s").Err())
				require.NoError(t, c1.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "1-0", Values: []any{"a", "b"}}).Err()) // c1's cache holds s
				require.NoError(t, c2.XGroupCreate(ctx, "s", "g", "0").Err())
				require.NotContains(t, ldo(ctx, c1, cmd...), "NOGROUP", "%v", cmd)
			}
		})
	}
}
