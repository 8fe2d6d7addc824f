package dynamo_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/internal/testserver"
)

// These tests serve a store behind the fault injector and check what a
// client reads: the reply texts are the contract.

// A throttled table is no lost race: with every TransactWriteItems
// throttled (ThrottlingError reasons), QUEUE.ACK, QUEUE.NACK and QUEUE.POP
// each make one logical request (its retries) and answer the throttling
// error, instead of reading the cancellation as stale receipts or a race
// lost to another worker and sending transactions until the client gives
// up. NACK never answers 0 for a valid receipt, and nothing they tried is
// applied: once the throttling ends the receipt is still valid.
func TestQueueThrottledTransactions(t *testing.T) {
	for _, f := range []struct {
		name string
		kind faultKind
	}{{"every reason throttled", txThrottled}, {"one reason throttled", txThrottledOne}} {
		t.Run(f.name, func(t *testing.T) {
			s, inj, _ := faultStore(t)
			srv := testserver.Start(t, s)
			c := srv.Client(t)
			ctx := context.Background()
			for _, m := range []string{"one", "two"} {
				require.NoError(t, c.Do(ctx, "QUEUE.PUSH", "q", m).Err())
			}
			popped, err := c.Do(ctx, "QUEUE.POP", "q", "VT", 600000).Slice()
			require.NoError(t, err)
			require.Len(t, popped, 1)
			receipt := popped[0].(map[any]any)["receipt"]
			require.NotNil(t, receipt)

			inj.forever(dynastore.OpTransactWriteItems, f.kind)
			for _, cmd := range [][]any{
				{"QUEUE.ACK", "q", receipt},
				{"QUEUE.NACK", "q", receipt},
				{"QUEUE.POP", "q", "VT", 600000},
				{"QUEUE.POP", "q", "VT", 0},
			} {
				before := inj.count(dynastore.OpTransactWriteItems)
				err := c.Do(ctx, cmd...).Err()
				require.EqualError(t, err, commands.MsgTryAgain, "%v", cmd)
				require.Equal(t, testAttempts, inj.count(dynastore.OpTransactWriteItems)-before,
					"%v: one transaction and its retries", cmd)
			}

			inj.forever(dynastore.OpTransactWriteItems, passThrough)
			require.Equal(t, int64(1), c.Do(ctx, "QUEUE.NACK", "q", receipt).Val(), "the receipt is still valid")
			require.Equal(t, int64(2), c.Do(ctx, "QUEUE.LEN", "q").Val())
		})
	}
}
