package commands_test

// Server tests of QUEUE.* for what the compat case files
// (compat/testdata/queues.txt: replies on one connection) cannot show:
// DynamoDB requests per command, and receipts across two instances.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/coord"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/faults"
	"github.com/redamo/redamo/internal/testserver"
)

// TestQueueRequests: PUSH, ACK, NACK and EXTEND are one request each (a
// single-item write where one item changes), through any instance, and a
// POP of one message two (a Query and the update that claims it).
func TestQueueRequests(t *testing.T) {
	ctx := context.Background()
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			c := b.Start(t).Client(t, func(o *redis.Options) { o.Protocol = 2 })
			other := b.Start(t).Client(t, func(o *redis.Options) { o.Protocol = 2 })
			tx := map[string]int64{dynastore.OpTransactWriteItems: 1}
			pop := map[string]int64{dynastore.OpQuery: 1, dynastore.OpUpdateItem: 1}
			update := map[string]int64{dynastore.OpUpdateItem: 1}
			// Two messages in each of the default four shards: a pop finds
			// one in the first shard it reads, as in a busy queue.
			for i := 0; i < 2*coord.DefaultShards; i++ {
				require.NoError(t, c.Do(ctx, "QUEUE.PUSH", "q", "filler").Err())
			}
			require.NoError(t, other.Do(ctx, "QUEUE.LEN", "q").Err())
			var receipt string
			for _, tc := range []struct {
				c    *redis.Client
				cmd  []any
				reqs map[string]int64
			}{
				{c, []any{"QUEUE.PUSH", "q", "one"}, map[string]int64{dynastore.OpPutItem: 1}},
				{c, []any{"QUEUE.PUSH", "q", "two", "PRIORITY", 5, "DEDUP", "d1"}, tx},
				{c, []any{"QUEUE.POP", "q", "VT", 60000}, pop},
				{c, []any{"QUEUE.EXTEND", "q", "$receipt", "VT", 60000}, update},
				{c, []any{"QUEUE.NACK", "q", "$receipt"}, update},
				{c, []any{"QUEUE.POP", "q", "VT", 60000}, pop},
				{c, []any{"QUEUE.ACK", "q", "$receipt"}, map[string]int64{dynastore.OpDeleteItem: 1}},
				{c, []any{"QUEUE.POP", "q", "VT", 60000}, pop},
				{other, []any{"QUEUE.NACK", "q", "$receipt"}, update},
			} {
				for i, a := range tc.cmd {
					if a == "$receipt" {
						tc.cmd[i] = receipt
					}
				}
				before := b.Stats.Snapshot()
				res, err := tc.c.Do(ctx, tc.cmd...).Result()
				require.NoError(t, err, "%v", tc.cmd)
				name := lower(tc.cmd[0].(string))
				require.Equal(t, tc.reqs, requestsSince(before, b.Stats.Snapshot(), name), "%v", tc.cmd)
				if name == "queue.pop" {
					msg := res.([]any)[0].([]any)
					require.Equal(t, "receipt", msg[2])
					receipt = msg[3].(string)
				}
			}
			// The last POP's message was handed back: ready again, the
			// stale receipt acknowledges nothing.
			require.Equal(t, int64(0), c.Do(ctx, "QUEUE.ACK", "q", receipt).Val())
			require.Equal(t, int64(2*coord.DefaultShards+1), c.Do(ctx, "QUEUE.LEN", "q").Val())

			// This instance's counters of the queue (INFO coordination).
			info, err := c.Info(ctx, "coordination").Result()
			require.NoError(t, err)
			require.Contains(t, info, "queue:q:pushed=10,delivered=3,redelivered=") // which pops met the handed-back message is random
			require.Contains(t, info, ",acked=1,nacked=1,deadlettered=0,deduplicated=0\r\n")
			require.Contains(t, info, "queue_pushed:10\r\n")
		})
	}
}

// TestQueueFaults: with a fifth of DynamoDB's requests failing, before
// they reach it or after (the answer lost), pushes, pops and
// acknowledgements answer with errors, and nothing is lost or doubled: at
// the end every acknowledged push was acknowledged as processed (or its
// acknowledgement's answer was lost), or is still in the queue, once.
func TestQueueFaults(t *testing.T) {
	ctx := context.Background()
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			check := b.Start(t).Client(t, func(o *redis.Options) { o.Protocol = 2 })
			flaky := faults.New(b.Store, 11)
			rdb := testserver.Start(t, flaky).Client(t, func(o *redis.Options) { o.Protocol = 2; o.MaxRetries = -1 })
			boom := fmt.Errorf("injected: %w", dynastore.ErrUnavailable)
			for _, op := range []string{dynastore.OpTransactWriteItems, dynastore.OpQuery, dynastore.OpUpdateItem, dynastore.OpGetItem} {
				flaky.FailRate(op, 0.2, boom)
				flaky.FailRateAfter(op, 0.2, boom)
			}
			pushed, acked, ackUnknown := map[string]bool{}, map[string]bool{}, map[string]bool{}
			errs := 0
			for i := range 60 {
				p := "m" + strconv.Itoa(i)
				if err := rdb.Do(ctx, "QUEUE.PUSH", "fq", p).Err(); err == nil {
					pushed[p] = true
				} else {
					errs++
				}
				res, err := rdb.Do(ctx, "QUEUE.POP", "fq", "COUNT", 2, "VT", 100).Result()
				if err != nil {
					errs++
					continue
				}
				for _, m := range res.([]any) {
					f := m.([]any)
					payload, receipt := f[5].(string), f[3].(string)
					ackUnknown[payload] = true
					n, err := rdb.Do(ctx, "QUEUE.ACK", "fq", receipt).Int64()
					switch {
					case err != nil:
						errs++
					case n == 1:
						acked[payload] = true
					}
				}
			}
			require.Positive(t, errs, "no fault was injected")
			time.Sleep(150 * time.Millisecond) // every visibility timeout lapses
			seen := map[string]bool{}
			for {
				res, err := check.Do(ctx, "QUEUE.POP", "fq", "COUNT", 49, "VT", 0).Result()
				if errors.Is(err, redis.Nil) {
					break
				}
				require.NoError(t, err)
				for _, m := range res.([]any) {
					p := m.([]any)[5].(string)
					require.False(t, seen[p], "%s is in the queue twice", p)
					require.False(t, acked[p], "%s came back after its acknowledgement", p)
					seen[p] = true
				}
			}
			for p := range pushed {
				require.True(t, seen[p] || ackUnknown[p], "%s was pushed and is gone without an acknowledgement", p)
			}
			t.Logf("%d errors answered; %d pushes acknowledged, %d acknowledged as processed, %d left", errs, len(pushed), len(acked), len(seen))
		})
	}
}

// TestQueueUnits: what a queued message costs in capacity units, per
// command, with the queue's shards holding other messages as a busy
// queue's do. The embedded store bills as DynamoDB does (transactions
// twice); DynamoDB Local reports a transaction's units once, so its
// figures are logged, and the bound is checked on the embedded store.
func TestQueueUnits(t *testing.T) {
	ctx := context.Background()
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			c := b.Start(t).Client(t, func(o *redis.Options) { o.Protocol = 2 })
			filler := strings.Repeat("f", 200)
			for i := 0; i < 25*coord.DefaultShards; i++ {
				require.NoError(t, c.Do(ctx, "QUEUE.PUSH", "q", filler).Err())
			}
			units := func(cmd ...any) (rcu, wcu float64, res any) {
				before := b.Stats.Snapshot()
				res, err := c.Do(ctx, cmd...).Result()
				require.NoError(t, err, "%v", cmd)
				for k, row := range b.Stats.Snapshot() {
					if k.Label == lower(cmd[0].(string)) {
						rcu += row.RCU - before[k].RCU
						wcu += row.WCU - before[k].WCU
					}
				}
				t.Logf("%-11s rcu=%.1f wcu=%.1f", cmd[0], rcu, wcu)
				return rcu, wcu, res
			}
			receipt := func(res any) string { return res.([]any)[0].([]any)[3].(string) }
			var total float64
			_, w, _ := units("QUEUE.PUSH", "q", "message")
			total += w
			_, w, res := units("QUEUE.POP", "q", "VT", 60000)
			total += w
			_, w, _ = units("QUEUE.ACK", "q", receipt(res))
			total += w
			_, _, res = units("QUEUE.POP", "q", "VT", 60000)
			_, nack, _ := units("QUEUE.NACK", "q", receipt(res))
			t.Logf("push+pop+ack: %.1f write units", total)
			if b.Name == "memory" {
				require.Equal(t, 1.0, nack, "NACK write units")
				// A single-item write each (the floor); the counters are
				// written apart.
				require.Equal(t, 3.0, total, "push+pop+ack write units")
				r, _, res := units("QUEUE.POP", "q", "VT", 60000)
				require.Equal(t, 1.0, r, "a POP reads one page of a few messages")
				units("QUEUE.ACK", "q", receipt(res))
			}
		})
	}
}

// TestQueueInFlightAhead: messages claimed in place keep their place in
// the shard's order; a pop steps over those in flight to the first ready
// one (paying reads for them, logged), a NACK'd one is served again from
// its place, before younger ones, and its old receipt is stale.
func TestQueueInFlightAhead(t *testing.T) {
	ctx := context.Background()
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			c := b.Start(t).Client(t, func(o *redis.Options) { o.Protocol = 2 })
			require.NoError(t, c.Do(ctx, "QUEUE.CONFIG", "fq", "SET", "SHARDS", 1).Err())
			payload := func(res any, i int) string { return res.([]any)[i].([]any)[5].(string) }
			receipt := func(res any, i int) string { return res.([]any)[i].([]any)[3].(string) }
			pushed := 0
			push := func(n int) {
				for range n {
					require.NoError(t, c.Do(ctx, "QUEUE.PUSH", "fq", "m"+strconv.Itoa(pushed)).Err())
					pushed++
				}
			}
			pop := func(count int) ([]any, float64) {
				before := b.Stats.Snapshot()
				res, err := c.Do(ctx, "QUEUE.POP", "fq", "COUNT", count, "VT", 60000).Result()
				require.NoError(t, err)
				rcu := 0.0
				for k, row := range b.Stats.Snapshot() {
					if k.Label == "queue.pop" {
						rcu += row.RCU - before[k].RCU
					}
				}
				return res.([]any), rcu
			}
			push(3)
			first, _ := pop(2)
			require.Equal(t, "m0", payload(first, 0))
			require.Equal(t, "m1", payload(first, 1))
			next, _ := pop(1)
			require.Equal(t, "m2", payload(next, 0), "the claimed messages ahead are stepped over")
			push(1)
			require.Equal(t, int64(1), c.Do(ctx, "QUEUE.NACK", "fq", receipt(first, 1)).Val())
			again, _ := pop(1)
			require.Equal(t, "m1", payload(again, 0), "a handed-back message is served from its place")
			require.Equal(t, int64(0), c.Do(ctx, "QUEUE.ACK", "fq", receipt(first, 1)).Val(), "the receipt of the earlier delivery is stale")
			require.Equal(t, int64(1), c.Do(ctx, "QUEUE.ACK", "fq", receipt(again, 0)).Val())
			last, _ := pop(1)
			require.Equal(t, "m3", payload(last, 0))

			// What stepping over messages in flight costs in reads.
			for _, inFlight := range []int{100, 1000} {
				push(inFlight + 1)
				for got := 0; got < inFlight; {
					res, _ := pop(min(coord.MaxPopCount, inFlight-got))
					got += len(res)
				}
				res, rcu := pop(1)
				require.Equal(t, "m"+strconv.Itoa(pushed-1), payload(res, 0))
				t.Logf("a pop past %d messages in flight reads %.1f units", inFlight, rcu)
			}
		})
	}
}

// TestQueueConcurrentPops: many clients of one instance popping one queue
// at once deliver every message exactly once; this process's pops claim
// different messages, so few claims are lost races (logged).
func TestQueueConcurrentPops(t *testing.T) {
	ctx := context.Background()
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			srv := b.Start(t)
			c := srv.Client(t, func(o *redis.Options) { o.Protocol = 2; o.PoolSize = 32 })
			const messages, workers = 400, 16
			for i := range messages {
				require.NoError(t, c.Do(ctx, "QUEUE.PUSH", "cq", "m"+strconv.Itoa(i)).Err())
			}
			before := b.Stats.Snapshot()
			got := make(chan string, messages)
			errs := make(chan error, workers)
			for range workers {
				go func() {
					for {
						res, err := c.Do(ctx, "QUEUE.POP", "cq", "VT", 60000).Result()
						if errors.Is(err, redis.Nil) {
							errs <- nil
							return
						}
						if err != nil {
							errs <- err
							return
						}
						got <- res.([]any)[0].([]any)[5].(string)
					}
				}()
			}
			for range workers {
				require.NoError(t, <-errs)
			}
			close(got)
			seen := map[string]bool{}
			for p := range got {
				require.False(t, seen[p], "%s delivered twice", p)
				seen[p] = true
			}
			require.Len(t, seen, messages)
			var claims, failed int64
			for k, row := range b.Stats.Snapshot() {
				if k.Label == "queue.pop" && k.Op == dynastore.OpUpdateItem {
					claims += row.Requests - before[k].Requests
					failed += row.Errors - before[k].Errors
				}
			}
			t.Logf("%d messages, %d claims, %d refused", messages, claims, failed)
		})
	}
}
