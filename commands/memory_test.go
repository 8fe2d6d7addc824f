package commands_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/internal/testserver"
)

// storedItems returns key's key item (db 0) and, for a large collection,
// its member items in sort-key order.
func storedItems(t *testing.T, st dynastore.Store, key string) (keyItem dynastore.Item, members []dynastore.Item) {
	t.Helper()
	ctx := context.Background()
	keyItem, err := st.Get(ctx, commands.KeyItemKeyForTest(0, key))
	require.NoError(t, err)
	require.NotNil(t, keyItem, key)
	gen := commands.GenerationForTest(keyItem)
	if gen == nil {
		return keyItem, nil
	}
	q := dynastore.Query{PK: commands.MembersPKForTest(gen)}
	for {
		page, err := st.Query(ctx, q)
		require.NoError(t, err)
		members = append(members, page.Items...)
		if page.Next == nil {
			return keyItem, members
		}
		q.After = page.Next
	}
}

// MEMORY USAGE is the size of the key's items as DynamoDB counts it: the
// key item, plus the member items of a large collection, of which SAMPLES
// (5 by default, 0 for all) are read and the rest estimated from their
// average.
func TestMemoryUsage(t *testing.T) {
	forBackends(t, func(t *testing.T, b collBackend, _ *testserver.Server, c *redis.Client) {
		ctx := context.Background()
		// Members of different sizes, so that an estimate differs from the
		// exact figure.
		var vals []any
		for i := 0; i < 12; i++ {
			vals = append(vals, strconv.Itoa(i)+strings.Repeat("v", i*7))
		}
		require.NoError(t, c.Set(ctx, "str", "abc", 0).Err())
		require.NoError(t, c.HSet(ctx, "small", "a", "1", "b", "2").Err())
		require.NoError(t, c.ConfigSet(ctx, "set-max-listpack-entries", "0").Err())
		require.NoError(t, c.SAdd(ctx, "set", vals...).Err())
		require.NoError(t, c.ConfigSet(ctx, "hash-max-listpack-entries", "0").Err())
		for i, v := range vals {
			require.NoError(t, c.HSet(ctx, "hash", v, strings.Repeat("x", i)).Err())
		}
		// Pushed from both ends, so its positions start below 0.
		require.NoError(t, c.RPush(ctx, "list", append(vals, strings.Repeat("y", 100))...).Err())
		require.NoError(t, c.LPush(ctx, "list", vals...).Err())
		require.NoError(t, c.Set(ctx, "gone", "v", time.Millisecond).Err())
		time.Sleep(5 * time.Millisecond)

		usage := func(key string, samples int) int64 {
			keyItem, members := storedItems(t, b.store, key)
			n := int64(len(members))
			size := int64(dynastore.ItemSize(keyItem))
			read := int64(samples)
			if samples == 0 || read > n {
				read = n
			}
			var sum int64
			for _, m := range members[:read] {
				sum += int64(dynastore.ItemSize(m))
			}
			if read < n {
				return size + int64(float64(sum)/float64(read)*float64(n))
			}
			return size + sum
		}
		for _, key := range []string{"str", "small"} {
			_, members := storedItems(t, b.store, key)
			require.Empty(t, members, key)
			require.Equal(t, strconv.FormatInt(usage(key, 0), 10), do(t, c, "MEMORY", "USAGE", key), key)
		}
		for _, key := range []string{"set", "hash", "list"} {
			exact := usage(key, 0)
			_, members := storedItems(t, b.store, key)
			require.Greater(t, len(members), 5, key)
			require.NotEqual(t, exact, usage(key, 5), "%s: the test needs an estimate that differs", key)
			for _, tc := range []struct {
				args []any
				want int64
			}{
				{nil, usage(key, 5)},
				{[]any{"SAMPLES", 0}, exact},
				{[]any{"samples", 1}, usage(key, 1)},
				{[]any{"SAMPLES", 3}, usage(key, 3)},
				{[]any{"SAMPLES", 7, "SAMPLES", 2}, usage(key, 2)},
				{[]any{"SAMPLES", len(members)}, exact},
				{[]any{"SAMPLES", 1000}, exact},
			} {
				got := do(t, c, append([]any{"MEMORY", "USAGE", key}, tc.args...)...)
				require.Equal(t, strconv.FormatInt(tc.want, 10), got, "%s %v", key, tc.args)
			}
		}
		for _, tc := range []struct{ args, want string }{
			{"MEMORY USAGE nosuch", "nil"},
			{"MEMORY USAGE gone", "nil"},
			{"MEMORY USAGE nosuch SAMPLES -1", "ERR: ERR syntax error"},
			{"MEMORY USAGE str SAMPLES", "ERR: ERR syntax error"},
			{"MEMORY USAGE str SAMPLES x", "ERR: ERR value is not an integer or out of range"},
			{"MEMORY USAGE str SAMPLES 99999999999999999999", "ERR: ERR value is not an integer or out of range"},
			{"MEMORY USAGE str COUNT 5", "ERR: ERR syntax error"},
			{"MEMORY USAGE", "ERR: ERR wrong number of arguments for 'memory|usage' command"},
			{"MEMORY", "ERR: ERR wrong number of arguments for 'memory' command"},
			{"MEMORY STATS", "ERR: ERR unknown subcommand 'STATS'. Try MEMORY HELP."},
		} {
			require.Equal(t, tc.want, do(t, c, args(tc.args)...), tc.args)
		}
		// Redis's text, less the subcommands redamo does not have.
		help, err := c.Do(ctx, "MEMORY", "HELP").StringSlice()
		require.NoError(t, err)
		require.Equal(t, []string{
			"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"USAGE <key> [SAMPLES <count>]",
			"    Return memory in bytes used by <key> and its value. Nested values are",
			"    sampled up to <count> times (default: 5, 0 means sample all).",
			"HELP",
			"    Prints this help.",
		}, help)
	})
}
