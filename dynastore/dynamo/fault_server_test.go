package dynamo_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/internal/testserver"
)

// These tests serve a store behind the fault injector and check what a
// client reads: the reply texts are the contract.

// A throttled table is no lost race: with the request that claims, hands
// back or deletes a message throttled (a single write's
// ThrottlingException), or a deduplicated push's transaction
// (ThrottlingError reasons), QUEUE.ACK, QUEUE.NACK, QUEUE.POP and
// QUEUE.PUSH each make one logical request (its retries) and answer the
// throttling error, instead of reading the refusal as a stale receipt, a
// duplicate or a race lost to another worker and trying again until the
// client gives up. NACK never answers 0 for a valid receipt, and nothing
// they tried is applied: once the throttling ends the receipt is still
// valid.
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

			// ACK of one receipt and POP with VT 0 (delivered is deleted)
			// are a single DeleteItem, NACK and POP with a visibility
			// timeout a single UpdateItem, each throttled as such; a push
			// with DEDUP writes its message and record in a transaction.
			for _, step := range []struct {
				op    string
				fault faultKind
				cmd   []any
			}{
				{dynastore.OpDeleteItem, throttle, []any{"QUEUE.ACK", "q", receipt}},
				{dynastore.OpUpdateItem, throttle, []any{"QUEUE.NACK", "q", receipt}},
				{dynastore.OpUpdateItem, throttle, []any{"QUEUE.POP", "q", "VT", 600000}},
				{dynastore.OpDeleteItem, throttle, []any{"QUEUE.POP", "q", "VT", 0}},
				{dynastore.OpTransactWriteItems, f.kind, []any{"QUEUE.PUSH", "q", "three", "DEDUP", "d1"}},
			} {
				inj.forever(step.op, step.fault)
				before := inj.count(step.op)
				err := c.Do(ctx, step.cmd...).Err()
				require.EqualError(t, err, commands.MsgTryAgain, "%v", step.cmd)
				require.Equal(t, testAttempts, inj.count(step.op)-before,
					"%v: one request and its retries", step.cmd)
				inj.forever(step.op, passThrough)
			}

			require.Equal(t, int64(1), c.Do(ctx, "QUEUE.NACK", "q", receipt).Val(), "the receipt is still valid")
			require.Equal(t, int64(2), c.Do(ctx, "QUEUE.LEN", "q").Val())
		})
	}
}

// incrBoth is a script that writes two keys.
const incrBoth = "redis.call('INCR', KEYS[1]); return redis.call('INCR', KEYS[2])"

// writeOps are the requests that write.
var writeOps = []string{dynastore.OpPutItem, dynastore.OpUpdateItem, dynastore.OpDeleteItem, dynastore.OpTransactWriteItems}

// A client must be able to tell "not applied" from "maybe applied": a write
// answered 500 after it was applied, or a transaction whose every attempt
// was, replies the unknown-outcome error (an ERR, not TRYAGAIN, which
// cluster clients retry by themselves), through every path: single
// commands, EXEC, EVAL and the coordination commands. A 503 is "not
// applied": the unavailable text. The write is applied once.
func TestWriteOutcomeReplies(t *testing.T) {
	cases := []struct {
		name  string
		fault faultKind
		cmds  [][]any // the last one meets the fault
		want  string
		check []any // a command whose reply shows what was applied
		after any
	}{
		{name: "incr 500 after apply", fault: serverErrorAfter, cmds: [][]any{{"INCR", "n"}}, want: commands.MsgOutcomeUnknown, check: []any{"GET", "n"}, after: "1"},
		{name: "lpush 500 after apply", fault: serverErrorAfter, cmds: [][]any{{"LPUSH", "l", "a"}}, want: commands.MsgOutcomeUnknown, check: []any{"LLEN", "l"}, after: int64(1)},
		{name: "exec 500 after apply", fault: serverErrorAfter, cmds: [][]any{{"MULTI"}, {"INCR", "a"}, {"INCR", "b"}, {"EXEC"}},
			want: commands.MsgOutcomeUnknown, check: []any{"MGET", "a", "b"}, after: []any{"1", "1"}},
		// SCRIPT LOAD first: EVAL stores a new script's body, a write of its own.
		{name: "eval 500 after apply", fault: serverErrorAfter, cmds: [][]any{{"SCRIPT", "LOAD", incrBoth}, {"EVAL", incrBoth, 2, "a", "b"}},
			want: commands.MsgOutcomeUnknown, check: []any{"MGET", "a", "b"}, after: []any{"1", "1"}},
		{name: "lock 500 after apply", fault: serverErrorAfter, cmds: [][]any{{"LOCK.ACQUIRE", "lk", "me", "PX", 60000}}, want: commands.MsgOutcomeUnknown, check: []any{"LOCK.ACQUIRE", "lk", "other", "PX", 60000}, after: nil},
		{name: "leader 500 after apply", fault: serverErrorAfter, cmds: [][]any{{"LEADER.ELECT", "e", "me"}}, want: commands.MsgOutcomeUnknown, check: []any{"LEADER.ELECT", "e", "other"}, after: nil},
		{name: "queue push 500 after apply", fault: serverErrorAfter, cmds: [][]any{{"QUEUE.PUSH", "q", "m"}}, want: commands.MsgOutcomeUnknown, check: []any{"QUEUE.LEN", "q"}, after: int64(1)},

		{name: "incr 503", fault: unavailable, cmds: [][]any{{"INCR", "n"}}, want: commands.MsgUnavailable, check: []any{"EXISTS", "n"}, after: int64(0)},
		{name: "exec 503", fault: unavailable, cmds: [][]any{{"MULTI"}, {"INCR", "a"}, {"INCR", "b"}, {"EXEC"}}, want: commands.MsgUnavailable, check: []any{"EXISTS", "a", "b"}, after: int64(0)},
		{name: "queue push 503", fault: unavailable, cmds: [][]any{{"QUEUE.PUSH", "q", "m"}}, want: commands.MsgUnavailable, check: []any{"QUEUE.LEN", "q"}, after: int64(0)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, inj, _ := faultStore(t)
			srv := testserver.Start(t, s)
			c := srv.Client(t)
			ctx := context.Background()
			for _, cmd := range tc.cmds[:len(tc.cmds)-1] {
				require.NoError(t, c.Do(ctx, cmd...).Err())
			}
			for _, op := range writeOps {
				inj.forever(op, tc.fault)
			}
			err := c.Do(ctx, tc.cmds[len(tc.cmds)-1]...).Err()
			require.EqualError(t, err, tc.want)
			for _, op := range writeOps {
				inj.forever(op, passThrough)
			}
			got, err := c.Do(ctx, tc.check...).Result()
			if err != redis.Nil {
				require.NoError(t, err)
			}
			require.Equal(t, tc.after, got)
		})
	}
}
