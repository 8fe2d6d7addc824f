package commands_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/internal/testserver"
)

// addEntries adds entries 1-0 .. n-0 (field f, value v<i>) to key.
func addEntries(t *testing.T, c *redis.Client, key string, n int) {
	t.Helper()
	ctx := context.Background()
	pipe := c.Pipeline()
	for i := 1; i <= n; i++ {
		pipe.Do(ctx, "xadd", key, fmt.Sprintf("%d-0", i), "f", fmt.Sprintf("v%d", i))
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
}

func TestStreamCommands(t *testing.T) {
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
			{[]any{"xlen", "s"}, "3"},
			{[]any{"xrange", "s", "-", "+", "count", 2}, "[[1-0 [f v1]] [2-0 [f v2]]]"},
			{[]any{"xrevrange", "s", "+", "(2-0"}, "[[3-0 [f v3]]]"},
			{[]any{"xdel", "s", "2-0", "9-0"}, "1"},
			{[]any{"xadd", "s", "3-*", "g", "w"}, "3-1"},
			{[]any{"xtrim", "s", "maxlen", 1}, "2"},
			{[]any{"xrange", "s", "-", "+"}, "[[3-1 [g w]]]"},
			{[]any{"xdel", "s", "3-1"}, "1"},
			{[]any{"exists", "s"}, "1"},
			{[]any{"xlen", "s"}, "0"},
			{[]any{"xadd", "s", "3-1", "a", "b"}, "ERR: ERR The ID specified in XADD is equal or smaller than the target stream top item"},
		}},
		{"large", 500, []step{
			{[]any{"xlen", "s"}, "500"},
			{[]any{"xrange", "s", "250", "+", "count", 2}, "[[250-0 [f v250]] [251-0 [f v251]]]"},
			{[]any{"xrevrange", "s", "+", "-", "count", 1}, "[[500-0 [f v500]]]"},
			{[]any{"xdel", "s", "250-0", "251-0"}, "2"},
			{[]any{"xtrim", "s", "maxlen", "~", 250}, "200"},
			{[]any{"xlen", "s"}, "298"},
			{[]any{"xtrim", "s", "minid", "300"}, "97"},
			{[]any{"xrange", "s", "-", "+", "count", 1}, "[[300-0 [f v300]]]"},
			{[]any{"xdel", "s", "201-0"}, "0"},
			{[]any{"xadd", "s", "maxlen", 1, "600-0", "a", "b"}, "600-0"},
			{[]any{"xrange", "s", "-", "+"}, "[[600-0 [a b]]]"},
			{[]any{"type", "s"}, "stream"},
			{[]any{"object", "encoding", "s"}, "stream"},
			{[]any{"xadd", "s", "maxlen", 0, "601-0", "a", "b"}, "601-0"},
			{[]any{"xlen", "s"}, "0"},
			{[]any{"exists", "s"}, "1"},
		}},
		{"large-keys", 200, []step{
			{[]any{"expire", "s", 100}, "1"},
			{[]any{"xadd", "s", "201-0", "a", "b"}, "201-0"},
			{[]any{"ttl", "s"}, "100"},
			{[]any{"rename", "s", "r"}, "OK"},
			{[]any{"copy", "r", "c"}, "1"},
			{[]any{"xdel", "c", "1-0"}, "1"},
			{[]any{"xlen", "r"}, "201"},
			{[]any{"xlen", "c"}, "200"},
			{[]any{"xread", "count", 1, "streams", "r", "c", "200", "0"}, "map[c:[[2-0 [f v2]]] r:[[201-0 [a b]]]]"},
			{[]any{"del", "r", "c"}, "2"},
			{[]any{"xlen", "r"}, "0"},
		}},
	}
	listBackends(t, func(t *testing.T, _ testserver.Backend, _ *testserver.Server, c *redis.Client) {
		ctx := context.Background()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				require.NoError(t, c.FlushAll(ctx).Err())
				addEntries(t, c, "s", tc.setup)
				for _, s := range tc.steps {
					require.Equal(t, s.want, ldo(ctx, c, s.args...), "%v", s.args)
				}
			})
		}
	})
}

// TestStreamRequestCounts checks the DynamoDB requests of the hot stream
// commands.
func TestStreamRequestCounts(t *testing.T) {
	listBackends(t, func(t *testing.T, b testserver.Backend, _ *testserver.Server, c *redis.Client) {
		ctx := context.Background()
		count := requestCounter(t, b, c)
		// Small stream this instance wrote last: one Put.
		require.EqualValues(t, 2, count("xadd", "s", "*", "a", "1")) // new: read, then write
		require.EqualValues(t, 1, count("xadd", "s", "*", "a", "2"))
		require.EqualValues(t, 1, count("xadd", "s", "maxlen", "~", 10, "*", "a", "3"))
		require.EqualValues(t, 1, count("xlen", "s"))
		require.EqualValues(t, 1, count("xrange", "s", "-", "+"))

		// Large stream: one transaction; the key item comes from the
		// item cache, which this instance's last (guarded) write left it in.
		addEntries(t, c, "big", 1000)
		require.EqualValues(t, 1, count("xadd", "big", "*", "a", "b"))
		require.LessOrEqual(t, count("xadd", "big", "maxlen", "~", 2000, "*", "a", "b"), int64(3))
		require.EqualValues(t, 1, count("xlen", "big"))
		// A range with COUNT reads one small page from its start.
		b.Stats.Reset()
		got, err := c.XRangeN(ctx, "big", "500", "+", 10).Result()
		require.NoError(t, err)
		require.Len(t, got, 10)
		require.Equal(t, "500-0", got[0].ID)
		require.EqualValues(t, 1, b.Stats.Requests("xrange", dynastore.OpQuery))
		require.EqualValues(t, 1, b.Stats.Requests("xrange", dynastore.OpGetItem))
		// A trim of whole nodes raises the floor: one write, members
		// deleted in the background.
		require.LessOrEqual(t, count("xtrim", "big", "maxlen", "~", 500), int64(2))
		require.Equal(t, int64(502), c.XLen(ctx, "big").Val())
		require.Eventually(t, func() bool {
			return b.Stats.Requests(commands.StreamCleanupLabel, dynastore.OpTransactWriteItems) >= 6
		}, 10*time.Second, 10*time.Millisecond)
		require.Equal(t, int64(502), c.XLen(ctx, "big").Val())
		first, err := c.XRangeN(ctx, "big", "-", "+", 1).Result()
		require.NoError(t, err)
		require.Equal(t, "501-0", first[0].ID)
	})
}

// TestStreamBlockingRead: a blocked XREAD is woken by an XADD through the
// same instance at once, and through another instance by the poller.
func TestStreamBlockingRead(t *testing.T) {
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			s1 := b.Start(t, testserver.WithConfig(func(cfg *commands.Config) { cfg.BlockingPoll = 50 * time.Millisecond }))
			s2 := b.Start(t)
			c1, c2 := s1.Client(t), s2.Client(t)
			for i, writer := range []*redis.Client{s1.Client(t), c2} {
				key := fmt.Sprintf("s%d", i)
				require.NoError(t, c1.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: "1-0", Values: []any{"a", "b"}}).Err())
				got := make(chan []redis.XStream, 2)
				for r := 0; r < 2; r++ { // two readers: both get the entry
					go func() {
						v, _ := c1.XRead(ctx, &redis.XReadArgs{Streams: []string{"other", key, "0", "$"}, Block: time.Minute}).Result()
						got <- v
					}()
				}
				waitBlocked(t, s1, 2)
				require.NoError(t, writer.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: "2-0", Values: []any{"c", "d"}}).Err())
				for r := 0; r < 2; r++ {
					select {
					case v := <-got:
						require.Equal(t, []redis.XStream{{Stream: key, Messages: []redis.XMessage{{ID: "2-0", Values: map[string]any{"c": "d"}}}}}, v)
					case <-time.After(time.Minute):
						t.Fatal("the blocked client was not served")
					}
				}
			}
		})
	}
}
