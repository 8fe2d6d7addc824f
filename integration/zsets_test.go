package integration

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestClusterSortedSetQueue uses a sorted set as a priority queue through
// three instances: producers ZADD, consumers BZPOPMIN (woken by polling
// for writes through other instances). Every element is delivered exactly
// once, and the set ends empty and deleted.
func TestClusterSortedSetQueue(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		push := func(c *redis.Client, id int) error {
			return c.ZAdd(ctx, "pq", redis.Z{Score: float64(id % 17), Member: strconv.Itoa(id)}).Err()
		}
		queueExactlyOnce(t, b.cluster(t, 3), "pq", 10, 10, 30, 30*time.Second, push, func(c *redis.Client) (string, bool, error) {
			z, err := c.BZPopMin(ctx, time.Second, "pq").Result()
			if err == redis.Nil {
				return "", false, nil
			}
			if err != nil {
				return "", false, err
			}
			m, _ := z.Member.(string)
			if id, err := strconv.Atoi(m); err != nil || float64(id%17) != z.Score {
				return "", false, fmt.Errorf("BZPOPMIN popped %v with score %v", z.Member, z.Score)
			}
			return m, true, nil
		})
	})
}

// TestClusterSortedSetScores has workers on three instances add to the
// scores of overlapping members of a large sorted set with ZINCRBY and
// ZADD INCR: no increment is lost, and the order agrees with the scores.
func TestClusterSortedSetScores(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend) {
		cs := b.cluster(t, 3)
		ctx := context.Background()
		const members = 200
		init := make([]redis.Z, members)
		for i := range init {
			init[i] = redis.Z{Score: 0, Member: "m" + strconv.Itoa(i)}
		}
		require.NoError(t, cs[0].ZAdd(ctx, "scores", init...).Err())
		const workers, each = 12, 20
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := cs[w%len(cs)]
				for i := range each {
					m := "m" + strconv.Itoa((w*13+i)%25)
					var err error
					if i%2 == 0 {
						err = c.ZIncrBy(ctx, "scores", float64(w+1), m).Err()
					} else {
						err = c.ZAddArgsIncr(ctx, "scores", redis.ZAddArgs{Members: []redis.Z{{Score: float64(w + 1), Member: m}}}).Err()
					}
					if err != nil {
						t.Errorf("worker %d: %v", w, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		want := 0.0
		for w := range workers {
			want += float64(each * (w + 1))
		}
		for _, c := range cs {
			zs, err := c.ZRangeWithScores(ctx, "scores", 0, -1).Result()
			require.NoError(t, err)
			require.Len(t, zs, members)
			sum := 0.0
			for i, z := range zs {
				sum += z.Score
				if i > 0 {
					require.LessOrEqual(t, zs[i-1].Score, z.Score)
				}
			}
			require.Equal(t, want, sum, "increments lost")
		}
	})
}
