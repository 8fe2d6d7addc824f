package commands_test

// Server tests of QUEUE.* for what the compat case files
// (compat/testdata/queues.txt: replies on one connection) cannot show:
// DynamoDB requests per command, and receipts across two instances.

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/coord"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/internal/testserver"
)

// TestQueueRequests: PUSH, ACK, NACK and EXTEND are one request each, a
// POP of one message two (a Query and the transaction that moves it).
func TestQueueRequests(t *testing.T) {
	ctx := context.Background()
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			c := b.Start(t).Client(t, func(o *redis.Options) { o.Protocol = 2 })
			other := b.Start(t).Client(t, func(o *redis.Options) { o.Protocol = 2 })
			tx := map[string]int64{dynastore.OpTransactWriteItems: 1}
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
				{c, []any{"QUEUE.PUSH", "q", "one"}, tx},
				{c, []any{"QUEUE.PUSH", "q", "two", "PRIORITY", 5, "DEDUP", "d1"}, tx},
				{c, []any{"QUEUE.POP", "q", "VT", 60000}, map[string]int64{dynastore.OpQuery: 1, dynastore.OpTransactWriteItems: 1}},
				{c, []any{"QUEUE.EXTEND", "q", "$receipt", "VT", 60000}, map[string]int64{dynastore.OpUpdateItem: 1}},
				{c, []any{"QUEUE.NACK", "q", "$receipt"}, tx},
				{c, []any{"QUEUE.POP", "q", "VT", 60000}, map[string]int64{dynastore.OpQuery: 1, dynastore.OpTransactWriteItems: 1}},
				{c, []any{"QUEUE.ACK", "q", "$receipt"}, tx},
				// A NACK through another instance reads the message first.
				{c, []any{"QUEUE.POP", "q", "VT", 60000}, map[string]int64{dynastore.OpQuery: 1, dynastore.OpTransactWriteItems: 1}},
				{other, []any{"QUEUE.NACK", "q", "$receipt"}, map[string]int64{dynastore.OpGetItem: 1, dynastore.OpTransactWriteItems: 1}},
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
