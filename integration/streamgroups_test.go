package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestStreamGroupConsumersDie: a consumer group worked by three consumers,
// each through its own instance. Two of them die mid-batch (their instance
// is killed after they acknowledged part of what they read); the survivor
// recovers their pending entries with XAUTOCLAIM. In the end every entry
// was processed at least once and acknowledged exactly once (one XACK in
// all answered 1 for it), and nothing is pending. With big batches the
// dead leave more pending entries than the key item keeps: they are items
// then.
func TestStreamGroupConsumersDie(t *testing.T) {
	for _, tc := range []struct {
		name           string
		entries, batch int
	}{
		{"small batches", 120, 7},
		{"big batches", 600, 60},
	} {
		t.Run(tc.name, func(t *testing.T) { consumersDie(t, tc.entries, int64(tc.batch)) })
	}
}

func consumersDie(t *testing.T, entries int, size int64) {
	forBackends(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		nodes := []node{b.node(t), b.node(t), b.node(t)}
		clients := make([]*redis.Client, len(nodes))
		for i, n := range nodes {
			clients[i] = n.start()
		}
		require.NoError(t, clients[0].XGroupCreateMkStream(ctx, "jobs", "g", "0").Err())
		for i := 1; i <= entries; i++ {
			require.NoError(t, clients[i%3].XAdd(ctx, &redis.XAddArgs{Stream: "jobs", ID: fmt.Sprintf("%d-0", i), Values: []any{"n", i}}).Err())
		}

		var (
			mu        sync.Mutex
			processed = map[string]int{}
			acked     = map[string]int{}
		)
		process := func(ids []string) {
			mu.Lock()
			defer mu.Unlock()
			for _, id := range ids {
				processed[id]++
			}
		}
		ack := func(c *redis.Client, id string) {
			n, err := c.XAck(ctx, "jobs", "g", id).Result()
			require.NoError(t, err)
			mu.Lock()
			acked[id] += int(n)
			mu.Unlock()
		}
		read := func(c *redis.Client, consumer string, count int64) []string {
			res, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: consumer, Streams: []string{"jobs", ">"}, Count: count, Block: 20 * time.Millisecond}).Result()
			if err == redis.Nil {
				return nil
			}
			require.NoError(t, err)
			var ids []string
			for _, m := range res[0].Messages {
				ids = append(ids, m.ID)
			}
			return ids
		}

		var wg sync.WaitGroup
		// The doomed consumers: two full batches, then a third batch of
		// which they acknowledge only the first entry before dying.
		for w := 1; w <= 2; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := clients[w]
				name := fmt.Sprintf("doomed%d", w)
				for batch := 0; batch < 3; batch++ {
					ids := read(c, name, size)
					process(ids)
					for i, id := range ids {
						if batch == 2 && i > 0 {
							break
						}
						ack(c, id)
					}
				}
				nodes[w].kill()
			}()
		}
		wg.Wait()

		// The survivor: new entries first, then whatever the dead left.
		c := clients[0]
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			ids := read(c, "survivor", 10)
			if len(ids) == 0 {
				res, _, err := c.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: "jobs", Group: "g", Consumer: "survivor", MinIdle: 50 * time.Millisecond, Start: "0-0", Count: 10}).Result()
				require.NoError(t, err)
				for _, m := range res {
					ids = append(ids, m.ID)
				}
			}
			if len(ids) == 0 {
				pending, err := c.XPending(ctx, "jobs", "g").Result()
				require.NoError(t, err)
				if pending.Count == 0 {
					break
				}
				time.Sleep(20 * time.Millisecond) // the dead's entries are not idle long enough yet
				continue
			}
			process(ids)
			for _, id := range ids {
				ack(c, id)
			}
		}

		pending, err := c.XPending(ctx, "jobs", "g").Result()
		require.NoError(t, err)
		require.Zero(t, pending.Count)
		mu.Lock()
		defer mu.Unlock()
		redelivered := 0
		for i := 1; i <= entries; i++ {
			id := fmt.Sprintf("%d-0", i)
			require.GreaterOrEqual(t, processed[id], 1, "%s was never processed", id)
			require.Equal(t, 1, acked[id], "%s acknowledged %d times", id, acked[id])
			redelivered += processed[id] - 1
		}
		require.Positive(t, redelivered, "the dead consumers' entries were recovered")
		groups, err := c.XInfoGroups(ctx, "jobs").Result()
		require.NoError(t, err)
		require.Equal(t, int64(entries), groups[0].EntriesRead)
		require.Zero(t, groups[0].Lag)
		t.Logf("%d entries, %d processed twice", entries, redelivered)
	})
}
