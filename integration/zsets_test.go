package integration

import (
	"context"
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
	cs := cluster(t, 3)
	ctx := context.Background()
	const producers, consumers, each = 10, 10, 30
	total := producers * each
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := cs[p%len(cs)]
			for i := range each {
				id := p*each + i
				if err := c.ZAdd(ctx, "pq", redis.Z{Score: float64(id % 17), Member: strconv.Itoa(id)}).Err(); err != nil {
					t.Errorf("ZADD: %v", err)
					return
				}
			}
		}()
	}
	var mu sync.Mutex
	seen := map[string]int{}
	deadline := time.Now().Add(30 * time.Second)
	for w := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := cs[(w+1)%len(cs)]
			for time.Now().Before(deadline) {
				mu.Lock()
				done := len(seen) >= total
				mu.Unlock()
				if done {
					return
				}
				z, err := c.BZPopMin(ctx, time.Second, "pq").Result()
				if err == redis.Nil {
					continue
				}
				if err != nil {
					t.Errorf("BZPOPMIN: %v", err)
					return
				}
				id, err := strconv.Atoi(z.Member.(string))
				if err != nil || float64(id%17) != z.Score {
					t.Errorf("BZPOPMIN popped %v with score %v", z.Member, z.Score)
				}
				mu.Lock()
				seen[z.Member.(string)]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	left, _ := cs[0].ZRangeWithScores(ctx, "pq", 0, -1).Result()
	require.Len(t, seen, total, "every element delivered (left in the set: %v)", left)
	for m, n := range seen {
		require.Equal(t, 1, n, "element %s delivered %d times", m, n)
	}
	require.Zero(t, cs[0].Exists(ctx, "pq").Val())
}

// TestClusterSortedSetScores has workers on three instances add to the
// scores of overlapping members of a large sorted set with ZINCRBY and
// ZADD INCR: no increment is lost, and the order agrees with the scores.
func TestClusterSortedSetScores(t *testing.T) {
	cs := cluster(t, 3)
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
}
