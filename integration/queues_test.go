package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// popped is one message as QUEUE.POP (RESP2) returned it.
type popped struct {
	id, receipt, payload string
	deliveries           int64
}

func popMessages(ctx context.Context, c *redis.Client, args ...any) ([]popped, error) {
	res, err := c.Do(ctx, append([]any{"QUEUE.POP"}, args...)...).Result()
	if err == redis.Nil {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []popped
	for _, m := range res.([]any) {
		f := m.([]any)
		p := popped{id: f[1].(string), payload: f[5].(string), deliveries: f[7].(int64)}
		if f[3] != nil {
			p.receipt = f[3].(string)
		}
		out = append(out, p)
	}
	return out, nil
}

// drain pops every message of queue with VT 0 (deleting it) once the
// visibility timeouts have lapsed, and returns the payloads.
func drain(t *testing.T, ctx context.Context, c *redis.Client, queue string) []string {
	t.Helper()
	var out []string
	for {
		msgs, err := popMessages(ctx, c, queue, "COUNT", 49, "VT", 0)
		require.NoError(t, err)
		if len(msgs) == 0 {
			return out
		}
		for _, m := range msgs {
			out = append(out, m.payload)
		}
	}
}

func resp2(c *redis.Client) *redis.Client {
	o := *c.Options()
	o.Protocol = 2
	o.ReadTimeout = -1
	return redis.NewClient(&o)
}

// TestClusterQueueWorkers: 10 producers and 20 workers on three instances;
// some messages are poison (never acknowledged) and some workers drop what
// they receive now and then (as a worker that dies holding it). In the
// end every message was acknowledged exactly once or dead-lettered, and
// the dead letters are exactly the messages received MAXRECEIVES times
// without an acknowledgement.
func TestClusterQueueWorkers(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend) {
		cs := b.cluster(t, 3)
		ctx := context.Background()
		const (
			producers, perProducer, workers = 10, 60, 20
			maxReceives                     = 3
		)
		total := producers * perProducer
		require.NoError(t, cs[0].Do(ctx, "QUEUE.CONFIG", "jobs", "SET", "VT", 300, "MAXRECEIVES", maxReceives, "DLQ", "jobs-dlq").Err())
		poison := func(payload string) bool { return len(payload)%7 == 0 && payload[len(payload)-1] == '3' }
		var (
			mu         sync.Mutex
			acked      = map[string]int{}
			deliveries = map[string]int64{} // the most deliveries seen per payload
			errs       firstErrors
			wg         sync.WaitGroup
			pushed     sync.WaitGroup
		)
		for p := range producers {
			pushed.Add(1)
			go func() {
				defer pushed.Done()
				c := cs[p%len(cs)]
				for j := range perProducer {
					payload := fmt.Sprintf("job-%d-%d", p, j)
					if err := c.Do(ctx, "QUEUE.PUSH", "jobs", payload, "PRIORITY", j%3).Err(); err != nil {
						errs.add("push: %v", err)
						return
					}
				}
			}()
		}
		done := make(chan struct{})
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := resp2(cs[w%len(cs)])
				defer c.Close()
				rng := rand.New(rand.NewPCG(uint64(w), 5))
				for {
					select {
					case <-done:
						return
					default:
					}
					msgs, err := popMessages(ctx, c, "jobs", "COUNT", 1+rng.IntN(4), "BLOCK", 100)
					if err != nil {
						errs.add("pop: %v", err)
						return
					}
					for _, m := range msgs {
						mu.Lock()
						deliveries[m.payload] = max(deliveries[m.payload], m.deliveries)
						mu.Unlock()
						if poison(m.payload) || (w%4 == 0 && rng.IntN(8) == 0) {
							continue // never acknowledged, or its worker "died"
						}
						n, err := c.Do(ctx, "QUEUE.ACK", "jobs", m.receipt).Int64()
						if err != nil {
							errs.add("ack: %v", err)
							return
						}
						if n == 1 {
							mu.Lock()
							acked[m.payload]++
							mu.Unlock()
						}
					}
				}
			}()
		}
		pushed.Wait()
		deadline := time.Now().Add(90 * time.Second)
		for {
			mu.Lock()
			n := len(acked)
			mu.Unlock()
			dlq, err := cs[1].Do(ctx, "QUEUE.LEN", "jobs-dlq").Int64()
			require.NoError(t, err)
			if n+int(dlq) >= total || time.Now().After(deadline) || errs.stopped() {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		close(done)
		wg.Wait()
		errs.require(t)

		drainer := resp2(cs[2])
		defer drainer.Close()
		dead := drain(t, ctx, drainer, "jobs-dlq")
		deadSet := map[string]bool{}
		for _, p := range dead {
			require.False(t, deadSet[p], "%s dead-lettered twice", p)
			deadSet[p] = true
		}
		for p, n := range acked {
			require.Equal(t, 1, n, "%s acknowledged %d times", p, n)
			require.False(t, deadSet[p], "%s both acknowledged and dead-lettered", p)
		}
		require.Equal(t, total, len(acked)+len(dead), "messages lost")
		for p := range deadSet {
			require.Equal(t, int64(maxReceives), deliveries[p], "%s dead-lettered after %d deliveries", p, deliveries[p])
		}
		for p, n := range deliveries {
			if n == maxReceives && acked[p] == 0 {
				require.True(t, deadSet[p], "%s received %d times, never acknowledged, not dead-lettered", p, n)
			}
		}
		stats, err := cs[0].Do(ctx, "QUEUE.STATS", "jobs").Result()
		require.NoError(t, err)
		t.Logf("%d messages: %d acknowledged once each, %d dead-lettered; stats %v", total, len(acked), len(dead), stats)
	})
}

// TestKillMidQueue kills redamo at random moments while workers push,
// pop, acknowledge, hand back and redrive messages, then restarts it on
// the same table: in the end every acknowledged push was either
// acknowledged (or an acknowledgement was in flight) or is still there,
// exactly once, and nothing acknowledged came back.
func TestKillMidQueue(t *testing.T) {
	forBackends(t, func(t *testing.T, b backend) {
		in := b.node(t)
		ctx := context.Background()
		c := in.start()
		require.NoError(t, c.Do(ctx, "QUEUE.CONFIG", "kq", "SET", "VT", 200, "MAXRECEIVES", 2, "DLQ", "kq-dlq").Err())
		require.NoError(t, c.Close())
		in.kill()

		var (
			mu         sync.Mutex
			pushedOK   = map[string]bool{}
			acked      = map[string]bool{}
			ackUnknown = map[string]bool{}
			seq        int
		)
		b.faulty()
		killRounds(in, rand.New(rand.NewPCG(3, 9)), 8, func(c *redis.Client, r *rand.Rand) {
			c2 := resp2(c)
			defer c2.Close()
			switch r.IntN(6) {
			case 0, 1:
				mu.Lock()
				seq++
				p := "m" + strconv.Itoa(seq)
				mu.Unlock()
				if c2.Do(ctx, "QUEUE.PUSH", "kq", p).Err() == nil {
					mu.Lock()
					pushedOK[p] = true
					mu.Unlock()
				}
			case 5:
				c2.Do(ctx, "QUEUE.REDRIVE", "kq-dlq", "kq", "COUNT", 5)
			default:
				msgs, err := popMessages(ctx, c2, "kq", "COUNT", 1+r.IntN(3), "VT", 200)
				if err != nil {
					return
				}
				for _, m := range msgs {
					switch r.IntN(3) {
					case 0:
						mu.Lock()
						ackUnknown[m.payload] = true
						mu.Unlock()
						if n, err := c2.Do(ctx, "QUEUE.ACK", "kq", m.receipt).Int64(); err == nil && n == 1 {
							mu.Lock()
							acked[m.payload] = true
							mu.Unlock()
						}
					case 1:
						c2.Do(ctx, "QUEUE.NACK", "kq", m.receipt)
					}
				}
			}
		}, func(*redis.Client, int) {})

		// The final checks write (CONFIG, REDRIVE): without faults, whose
		// unknown outcomes would fail them.
		b.calm()
		c = resp2(in.start())
		defer c.Close()
		time.Sleep(300 * time.Millisecond) // every visibility timeout lapses
		// Drained without a receive limit, so the drain dead-letters nothing.
		require.NoError(t, c.Do(ctx, "QUEUE.CONFIG", "kq", "SET", "MAXRECEIVES", 0).Err())
		require.NoError(t, c.Do(ctx, "QUEUE.REDRIVE", "kq-dlq", "kq").Err())
		left := append(drain(t, ctx, c, "kq"), drain(t, ctx, c, "kq-dlq")...)
		seen := map[string]bool{}
		for _, p := range left {
			require.False(t, seen[p], "%s is in the queue twice", p)
			require.False(t, acked[p], "%s came back after its acknowledgement", p)
			seen[p] = true
		}
		lost := 0
		for p := range pushedOK {
			if !seen[p] && !ackUnknown[p] {
				lost++
				t.Errorf("%s was pushed (acknowledged) and is gone without an acknowledgement", p)
			}
		}
		t.Logf("%d pushes acknowledged, %d acknowledged as processed, %d left in the queue, %d lost", len(pushedOK), len(acked), len(left), lost)
		require.Positive(t, len(pushedOK))
		require.Positive(t, len(acked))
	})
}
