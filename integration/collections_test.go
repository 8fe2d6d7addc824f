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

// queueExactlyOnce runs producers and consumers spread over the instances
// on the queue at key: push adds element id, pop takes one (ok false: none
// yet). Every element is delivered exactly once, within the time given,
// and the key ends deleted.
func queueExactlyOnce(t *testing.T, cs []*redis.Client, key string, producers, consumers, each int, within time.Duration,
	push func(c *redis.Client, id int) error, pop func(c *redis.Client) (string, bool, error)) {
	ctx := context.Background()
	total := producers * each
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := cs[p%len(cs)]
			for i := range each {
				if err := push(c, p*each+i); err != nil {
					t.Errorf("push: %v", err)
					return
				}
			}
		}()
	}
	var mu sync.Mutex
	seen := map[string]int{}
	deadline := time.Now().Add(within)
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
				v, ok, err := pop(c)
				if err != nil {
					t.Errorf("pop: %v", err)
					return
				}
				if ok {
					mu.Lock()
					seen[v]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	require.Len(t, seen, total, "every element delivered")
	for v, n := range seen {
		require.Equal(t, 1, n, "element %s delivered %d times", v, n)
	}
	require.Zero(t, cs[0].Exists(ctx, key).Val(), "the queue ends deleted")
}

// lpush is a list queue's push.
func lpush(c *redis.Client, id int) error {
	return c.LPush(context.Background(), "queue", strconv.Itoa(id)).Err()
}

func TestClusterQueueRPOP(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend) {
		queueExactlyOnce(t, b.cluster(t, 3), "queue", 20, 20, 15, 2*time.Minute, lpush, func(c *redis.Client) (string, bool, error) {
			v, err := c.RPop(context.Background(), "queue").Result()
			if err == redis.Nil {
				return "", false, nil
			}
			return v, err == nil, err
		})
	})
}

func TestClusterQueueBLPOP(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend) {
		queueExactlyOnce(t, b.cluster(t, 3), "queue", 20, 20, 15, 2*time.Minute, lpush, func(c *redis.Client) (string, bool, error) {
			kv, err := c.BLPop(context.Background(), time.Second, "queue").Result()
			if err == redis.Nil {
				return "", false, nil
			}
			if err != nil {
				return "", false, err
			}
			return kv[1], true, nil
		})
	})
}

func TestClusterSetsAndHashes(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend) {
		cs := b.cluster(t, 3)
		ctx := context.Background()
		const workers, each = 12, 25
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := cs[w%len(cs)]
				for i := range each {
					// Members overlap between workers, so adds and removes race.
					m := "m" + strconv.Itoa((w*7+i)%40)
					var err error
					if i%3 == 2 {
						err = c.SRem(ctx, "set", m).Err()
					} else {
						err = c.SAdd(ctx, "set", m).Err()
					}
					if err == nil {
						err = c.HIncrBy(ctx, "hash", "f"+strconv.Itoa(i%3), int64(w+1)).Err()
					}
					if err != nil {
						t.Errorf("worker %d: %v", w, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		for _, c := range cs {
			card, err := c.SCard(ctx, "set").Result()
			require.NoError(t, err)
			members, err := c.SMembers(ctx, "set").Result()
			require.NoError(t, err)
			require.Equal(t, int(card), len(members))
			vals, err := c.HGetAll(ctx, "hash").Result()
			require.NoError(t, err)
			sum := 0
			for _, v := range vals {
				n, err := strconv.Atoi(v)
				require.NoError(t, err)
				sum += n
			}
			want := 0
			for w := range workers {
				want += (w + 1) * each
			}
			require.Equal(t, want, sum, "HINCRBY from every worker counted exactly once")
		}
	})
}
