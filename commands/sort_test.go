package commands_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/internal/testserver"
)

// TestSortRequestCounts checks the DynamoDB requests SORT costs on small
// (inline) collections.
func TestSortRequestCounts(t *testing.T) {
	forBackends(t, func(t *testing.T, b collBackend, s *testserver.Server, c *redis.Client) {
		ctx := context.Background()
		require.NoError(t, c.RPush(ctx, "l", 3, 1, 2).Err())
		require.NoError(t, c.SAdd(ctx, "s", 3, 1, 2).Err())
		require.NoError(t, c.ZAdd(ctx, "z", redis.Z{Score: 1, Member: "b"}, redis.Z{Score: 2, Member: "a"}).Err())
		require.NoError(t, c.MSet(ctx, "w_1", 3, "w_2", 2, "w_3", 1, "g_1", "one").Err())
		require.NoError(t, c.HSet(ctx, "h_1", "f", 1).Err())

		for _, tc := range []struct {
			cmd, want string
			n         int64
		}{
			{"sort l", "[1 2 3]", 1},
			{"sort s", "[1 2 3]", 1},
			{"sort z alpha", "[a b]", 1},
			{"sort z by nosort", "[b a]", 1},
			{"sort_ro l desc limit 0 2", "[3 2]", 1},
			{"sort nokey", "[]", 1},
			// The weights (and GETs, read with them when every element
			// is returned) in one BatchGet, then one BatchGet to check
			// that nothing changed.
			{"sort l by w_*", "[3 2 1]", 3},
			{"sort l by w_* get g_* get h_*->f", "[<nil> <nil> <nil> <nil> one 1]", 3},
			{"sort l get g_*", "[one <nil> <nil>]", 3},
			// A limited result reads the GETs of its elements only, after
			// sorting: a round more.
			{"sort l by w_* limit 0 1 get g_*", "[<nil>]", 4},
			// STORE: source and destination in one BatchGet, then one
			// transaction (the destination's Put, the source's check).
			{"sort l store d", "3", 2},
			{"sort s desc store d", "3", 2},
			{"sort l store l", "3", 2},
			{"sort l by w_* get g_* store d", "3", 3},
			{"sort nokey store d", "0", 2},
			{"sort nokey store d", "0", 2},
		} {
			b.stats.Reset()
			a := args(tc.cmd)
			got, err := c.Do(ctx, a...).Result()
			require.NoError(t, err, tc.cmd)
			require.Equal(t, tc.want, fmt.Sprint(got), tc.cmd)
			name := strings.ToLower(a[0].(string))
			require.Equal(t, tc.n, b.stats.Requests(name), "%s: requests %v", tc.cmd, b.stats.Keys())
		}
	})
}

// TestSortLarge sorts collections past the inline limit (several pages of
// members), with weights and GETs, and stores a result too big for one
// transaction.
func TestSortLarge(t *testing.T) {
	forBackends(t, func(t *testing.T, b collBackend, s *testserver.Server, c *redis.Client) {
		ctx := context.Background()
		const n = 1500
		var elems []any
		var want []string
		pipe := c.Pipeline()
		for i := 0; i < n; i++ {
			e := strconv.Itoa((i * 7919) % n)
			elems = append(elems, e)
			want = append(want, e)
			pipe.Set(ctx, "w_"+e, n-(i*7919)%n, 0)
		}
		_, err := pipe.Exec(ctx)
		require.NoError(t, err)
		require.NoError(t, c.RPush(ctx, "l", elems...).Err())
		require.NoError(t, c.SAdd(ctx, "s", elems...).Err())
		var zs []redis.Z
		for i, e := range elems {
			zs = append(zs, redis.Z{Score: float64(-i), Member: e})
		}
		require.NoError(t, c.ZAdd(ctx, "z", zs...).Err())

		numeric := slices.Clone(want)
		sort.Slice(numeric, func(i, j int) bool {
			a, _ := strconv.Atoi(numeric[i])
			b, _ := strconv.Atoi(numeric[j])
			return a < b
		})
		alpha := slices.Clone(want)
		sort.Strings(alpha)
		desc := slices.Clone(numeric)
		slices.Reverse(desc)

		for _, key := range []string{"l", "s", "z"} {
			require.Equal(t, numeric, c.Sort(ctx, key, &redis.Sort{}).Val(), key)
			require.Equal(t, alpha, c.Sort(ctx, key, &redis.Sort{Alpha: true}).Val(), key)
			// Weights n-e: the reverse of numeric order.
			require.Equal(t, desc, c.Sort(ctx, key, &redis.Sort{By: "w_*"}).Val(), key)
			require.Equal(t, desc[10:13], c.Sort(ctx, key, &redis.Sort{By: "w_*", Offset: 10, Count: 3}).Val(), key)
			got := c.Sort(ctx, key, &redis.Sort{Get: []string{"#", "w_*"}, Offset: 5, Count: 2}).Val()
			require.Equal(t, []string{numeric[5], strconv.Itoa(n - 5), numeric[6], strconv.Itoa(n - 6)}, got, key)
		}
		// The list's and the sorted set's own orders (the sorted set's
		// scores are minus the list positions).
		require.Equal(t, want[3:6], c.Sort(ctx, "l", &redis.Sort{By: "nosort", Offset: 3, Count: 3}).Val())
		rev := slices.Clone(want)
		slices.Reverse(rev)
		require.Equal(t, rev[3:6], c.Sort(ctx, "z", &redis.Sort{By: "nosort", Offset: 3, Count: 3}).Val())
		require.Equal(t, want[3:6], c.Sort(ctx, "z", &redis.Sort{By: "nosort", Offset: 3, Count: 3, Order: "DESC"}).Val())

		require.EqualValues(t, n, c.SortStore(ctx, "s", "d", &redis.Sort{Alpha: true}).Val())
		require.Equal(t, alpha, c.LRange(ctx, "d", 0, -1).Val())
		require.EqualValues(t, 2, c.SortStore(ctx, "l", "d", &redis.Sort{Offset: 0, Count: 2}).Val())
		require.Equal(t, numeric[:2], c.LRange(ctx, "d", 0, -1).Val())
		require.EqualValues(t, n, c.SortStore(ctx, "l", "l", &redis.Sort{Order: "DESC"}).Val())
		require.Equal(t, desc, c.LRange(ctx, "l", 0, -1).Val())
	})
}
