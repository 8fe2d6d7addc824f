package commands_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/internal/testserver"
)

// TestZsetRequestCounts checks the DynamoDB requests sorted set commands
// cost on a small (inline) and a large set, as one instance sees them: its
// caches know the sets it wrote or read.
func TestZsetRequestCounts(t *testing.T) {
	forBackends(t, func(t *testing.T, b collBackend, s *testserver.Server, c *redis.Client) {
		ctx := context.Background()
		big := make([]redis.Z, 300)
		for i := range big {
			big[i] = redis.Z{Score: float64(i), Member: "m" + strconv.Itoa(i)}
		}
		require.NoError(t, c.ZAdd(ctx, "big", big...).Err())
		require.NoError(t, c.ZAdd(ctx, "small", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"}).Err())

		for _, tc := range []struct {
			cmd, want string
			n         int64
		}{
			{"zadd small 3 c", "1", 1},
			{"zadd small 4 c", "0", 1},
			{"zadd small ch 5 c", "1", 1},
			{"zscore small c", "5", 1},
			{"zincrby small 1 c", "6", 1},
			{"zrem small c", "1", 1},
			{"zcard small", "2", 1},
			{"zrank small b", "1", 1},
			{"zrange small 0 -1", "[a b]", 1},
			{"zrangebyscore small 2 +inf", "[b]", 1},
			{"zpopmin small", "[1 a]", 1},
			{"zadd small 1 a", "1", 1},
			// Large: a change is a read of the key item (none when the
			// item cache holds it: after this instance read it, or wrote
			// it guarded by its ver), a read of the members, and one
			// transaction. A change that only adds or removes members
			// adds to the count commutatively, so the item after it is
			// not known: the next change reads it.
			{"zadd big 1000 new", "1", 2},
			{"zadd big 2000 new", "0", 3},
			{"zincrby big 1 new", "2001", 3},
			{"zscore big new", "2001", 2},
			{"zrem big new", "1", 3},
			{"zcard big", "300", 1},
			{"zpopmin big", "[0 m0]", 2},
			{"zpopmax big 2", "[[298 m298] [299 m299]]", 2},
			{"zrangebyscore big 10 12", "[m10 m11 m12]", 2},
			{"zrange big 0 2", "[m1 m2 m3]", 2},
			{"zrange big -2 -1", "[m296 m297]", 2},
			{"zrevrangebyscore big +inf -inf limit 0 1", "[m297]", 2},
		} {
			b.stats.Reset()
			a := args(tc.cmd)
			require.Equal(t, tc.want, do(t, c, a...), tc.cmd)
			name := strings.ToLower(a[0].(string))
			require.Equal(t, tc.n, b.stats.Requests(name), "%s: requests %v", tc.cmd, b.stats.Keys())
		}
		// Several members of a large set are read together, not one by one.
		many := make([]redis.Z, 40)
		for i := range many {
			many[i] = redis.Z{Score: float64(i), Member: "many" + strconv.Itoa(i)}
		}
		b.stats.Reset()
		require.EqualValues(t, 40, c.ZAdd(ctx, "big", many...).Val())
		require.EqualValues(t, 1, b.stats.Requests("zadd", dynastore.OpBatchGetItem), "%v", b.stats.Keys())
		require.LessOrEqual(t, b.stats.Requests("zadd"), int64(3))
		// A change too big for one transaction (40 new scores: a member
		// item and two order items each) leaves the key item in the item
		// cache once rolled forward: the next pop reads only the order.
		for i := range many {
			many[i].Score = -float64(i)
		}
		require.EqualValues(t, 0, c.ZAdd(ctx, "big", many...).Val())
		b.stats.Reset()
		require.Equal(t, "[-39 many39]", do(t, c, "zpopmin", "big"))
		require.EqualValues(t, 2, b.stats.Requests("zpopmin"), "%v", b.stats.Keys())
	})
}

// TestZsetLargeLayout grows a sorted set past the inline limit and checks
// that every read agrees with the same set kept in memory, through
// additions, score changes, removals and pops.
func TestZsetLargeLayout(t *testing.T) {
	forBackends(t, func(t *testing.T, b collBackend, s *testserver.Server, c *redis.Client) {
		ctx := context.Background()
		model := map[string]float64{}
		for i := 0; i < 400; i++ {
			m := fmt.Sprintf("m%03d", i%250)
			score := float64((i * 37) % 101)
			require.NoError(t, c.ZAdd(ctx, "z", redis.Z{Score: score, Member: m}).Err())
			model[m] = score
		}
		check := func() {
			t.Helper()
			want := sortedModel(model)
			got := c.ZRangeWithScores(ctx, "z", 0, -1).Val()
			require.Equal(t, want, got)
			require.EqualValues(t, len(model), c.ZCard(ctx, "z").Val())
			rev := c.ZRevRangeWithScores(ctx, "z", 0, 9).Val()
			for i := range rev {
				require.Equal(t, want[len(want)-1-i], rev[i])
			}
			for i, z := range want {
				if i%37 == 0 {
					require.EqualValues(t, i, c.ZRank(ctx, "z", z.Member.(string)).Val())
				}
			}
			byScore := c.ZRangeByScore(ctx, "z", &redis.ZRangeBy{Min: "(20", Max: "40", Offset: 3, Count: 5}).Val()
			var wantScore []string
			for _, z := range want {
				if z.Score > 20 && z.Score <= 40 {
					wantScore = append(wantScore, z.Member.(string))
				}
			}
			if len(wantScore) > 3 {
				wantScore = wantScore[3:min(8, len(wantScore))]
			} else {
				wantScore = nil
			}
			require.Equal(t, wantScore, nilIfEmpty(byScore))
		}
		check()
		require.Equal(t, countIn(model, 50, 60), c.ZRemRangeByScore(ctx, "z", "50", "(60").Val())
		require.Zero(t, c.ZRemRangeByScore(ctx, "z", "-inf", "(0").Val())
		for m, sc := range model {
			if sc >= 50 && sc < 60 {
				delete(model, m)
			}
		}
		check()
		popped := c.ZPopMin(ctx, "z", 5).Val()
		want := sortedModel(model)
		require.Equal(t, want[:5], popped)
		for _, z := range popped {
			delete(model, z.Member.(string))
		}
		check()
	})
}

func countIn(model map[string]float64, lo, hi float64) int64 {
	var n int64
	for _, s := range model {
		if s >= lo && s < hi {
			n++
		}
	}
	return n
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// sortedModel is a sorted set's content in Redis's order.
func sortedModel(model map[string]float64) []redis.Z {
	out := make([]redis.Z, 0, len(model))
	for m, s := range model {
		out = append(out, redis.Z{Score: s, Member: m})
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && zless(out[j], out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func zless(a, b redis.Z) bool {
	if a.Score != b.Score {
		return a.Score < b.Score
	}
	return a.Member.(string) < b.Member.(string)
}
