package commands_test

// Server tests of LOCK.* and LEADER.* for what the compat case files
// (compat/testdata/locks.txt, leaders.txt: replies on one connection)
// cannot show: DynamoDB requests per command, a second instance on the
// same store, fenced EXECs and scripts, tokens that never go back, and
// the namespace user commands never reach.

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/internal/testserver"
)

// TestLeaseRequests: every LOCK.* and LEADER.* call is one DynamoDB
// request; an owner acquiring a lock it holds takes a second one, and a
// guarded EXEC of one write is one TransactWriteItems.
func TestLeaseRequests(t *testing.T) {
	ctx := context.Background()
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			c := b.Start(t).Client(t)
			update := map[string]int64{dynastore.OpUpdateItem: 1}
			get := map[string]int64{dynastore.OpGetItem: 1}
			for _, tc := range []struct {
				cmd  []any
				want any // reply, or an error message
				reqs map[string]int64
			}{
				{[]any{"LOCK.ACQUIRE", "l", "a", "PX", 60000}, int64(1), update},
				{[]any{"LOCK.ACQUIRE", "l", "b"}, nil, update},
				{[]any{"LOCK.ACQUIRE", "l", "a", "PX", 60000}, int64(1), map[string]int64{dynastore.OpUpdateItem: 2}},
				{[]any{"LOCK.CHECK", "l"}, map[any]any{"owner": "a", "token": int64(1)}, get},
				{[]any{"LOCK.EXTEND", "l", "a", "PX", 60000, "FENCE", 1}, int64(1), update},
				{[]any{"LOCK.RELEASE", "l", "b"}, "NOTOWNER held by another owner or with another token", update},
				{[]any{"LOCK.RELEASE", "l", "a", "FENCE", 1}, int64(1), update},
				{[]any{"LOCK.RELEASE", "l", "a"}, int64(0), update},
				{[]any{"LOCK.EXTEND", "l", "a", "PX", 100}, int64(0), update},
				{[]any{"LOCK.CHECK", "l"}, nil, get},
				{[]any{"LEADER.ELECT", "e", "c1", "VALUE", "v1"}, int64(1), update},
				{[]any{"LEADER.ELECT", "e", "c2"}, nil, update},
				{[]any{"LEADER.HEARTBEAT", "e", "c1", "PX", 60000}, int64(1), update},
				{[]any{"LEADER.HEARTBEAT", "e", "c2"}, int64(0), update},
				{[]any{"LEADER.CHECK", "e"}, map[any]any{"leader": "c1", "term": int64(1), "value": "v1"}, get},
				{[]any{"LEADER.WATCH", "e", 7}, map[any]any{"leader": "c1", "term": int64(1), "value": "v1"}, get},
				{[]any{"LEADER.RESIGN", "e", "c2"}, int64(0), update},
				{[]any{"LEADER.RESIGN", "e", "c1"}, int64(1), update},
				{[]any{"LEADER.ELECT", "e", "c2"}, int64(2), update},
			} {
				before := b.Stats.Snapshot()
				got, err := c.Do(ctx, tc.cmd...).Result()
				switch want := tc.want.(type) {
				case nil:
					require.ErrorIs(t, err, redis.Nil, "%v", tc.cmd)
				case string:
					require.EqualError(t, err, want, "%v", tc.cmd)
				case map[any]any: // fields of a map reply (go-redis speaks RESP3)
					require.NoError(t, err, "%v", tc.cmd)
					for k, v := range want {
						require.Equal(t, v, got.(map[any]any)[k], "%v %v", tc.cmd, k)
					}
				default:
					require.NoError(t, err, "%v", tc.cmd)
					require.Equal(t, want, got, "%v", tc.cmd)
				}
				name := tc.cmd[0].(string)
				require.Equal(t, tc.reqs, requestsSince(before, b.Stats.Snapshot(), lower(name)), "%v", tc.cmd)
			}

			// A guarded EXEC of one write: one TransactWriteItems.
			tok, err := c.Do(ctx, "LOCK.ACQUIRE", "g", "a").Int64()
			require.NoError(t, err)
			cn := c.Conn()
			defer cn.Close()
			require.NoError(t, connDo(ctx, cn, "LOCK.GUARD", "g", tok).Err())
			before := b.Stats.Snapshot()
			_, err = cn.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, "k", "v", 0)
				return nil
			})
			require.NoError(t, err)
			require.Equal(t, map[string]int64{dynastore.OpTransactWriteItems: 1}, requestsSince(before, b.Stats.Snapshot(), "exec"))
			require.Equal(t, map[string]int64{}, requestsSince(before, b.Stats.Snapshot(), "lock.guard"))

			info, err := c.Info(ctx, "coordination").Result()
			require.NoError(t, err)
			for _, f := range []string{"lock_granted:2", "lock_renewed:1", "lock_refused:1", "lock_notowner:1", "lock_lapsed:2",
				"lock_released:1", "lock_extended:1", "leader_granted:2", "leader_refused:1", "leader_lapsed:2",
				"leader_extended:1", "leader_released:1", "leader_notowner:0"} {
				require.Contains(t, info, f+"\r\n")
			}
		})
	}
}

// connDo sends one command on a dedicated connection.
func connDo(ctx context.Context, cn *redis.Conn, args ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	_ = cn.Process(ctx, cmd)
	return cmd
}

func lower(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if 'A' <= ch && ch <= 'Z' {
			b[i] = ch + 'a' - 'A'
		}
	}
	return string(b)
}

// TestLockFencing: tokens grow at every grant from a free or expired
// lock, through any instance, whatever users delete; a guarded EXEC
// commits only while its token holds the lock; a script learns at once.
func TestLockFencing(t *testing.T) {
	ctx := context.Background()
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			a := b.Start(t).Client(t, func(o *redis.Options) { o.ReadTimeout = 5 * time.Second })
			other := b.Start(t).Client(t, func(o *redis.Options) { o.ReadTimeout = 5 * time.Second }) // a second instance on the same store
			acquire := func(c *redis.Client, owner string, px int) int64 {
				t.Helper()
				// WAIT: a lease is taken over only a clock margin after its
				// end, up to a second while a store's clock is unmeasured.
				n, err := c.Do(ctx, "LOCK.ACQUIRE", "res", owner, "PX", px, "WAIT", 2500).Int64()
				require.NoError(t, err)
				return n
			}
			var last int64
			for i := 0; i < 3; i++ {
				tok := acquire(a, "A", 60000)
				require.Greater(t, tok, last)
				require.Equal(t, tok, acquire(other, "A", 60000), "the holder acquiring again keeps its token")
				require.NoError(t, other.Do(ctx, "LOCK.RELEASE", "res", "A").Err())
				require.NoError(t, a.FlushAll(ctx).Err())
				last = tok
			}
			// The namespace is apart from the keyspace.
			acquire(a, "A", 60000)
			require.NoError(t, a.Do(ctx, "LEADER.ELECT", "res", "A").Err())
			keys, err := a.Keys(ctx, "*").Result()
			require.NoError(t, err)
			require.Empty(t, keys)
			require.NoError(t, a.Del(ctx, "res").Err())
			require.NoError(t, a.FlushAll(ctx).Err())
			require.Equal(t, "A", a.Do(ctx, "LOCK.CHECK", "res").Val().(map[any]any)["owner"])

			// The pause: A's lease runs out, B takes the lock; A's late
			// guarded EXEC writes nothing, B's commits.
			require.NoError(t, a.Do(ctx, "LOCK.RELEASE", "res", "A").Err())
			tokA := acquire(a, "A", 50)
			guardA := a.Conn()
			defer guardA.Close()
			require.NoError(t, connDo(ctx, guardA, "LOCK.GUARD", "res", tokA).Err())
			time.Sleep(100 * time.Millisecond)
			tokB := acquire(other, "B", 60000)
			require.Greater(t, tokB, tokA)
			_, err = guardA.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, "k", "from A", 0)
				return nil
			})
			require.ErrorIs(t, err, redis.TxFailedErr, "a guard on a lost lease refuses EXEC")
			require.ErrorIs(t, a.Get(ctx, "k").Err(), redis.Nil)
			guardB := other.Conn()
			defer guardB.Close()
			require.NoError(t, connDo(ctx, guardB, "LOCK.GUARD", "res", tokB).Err())
			_, err = guardB.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, "k", "from B", 0)
				return nil
			})
			require.NoError(t, err)
			require.Equal(t, "from B", a.Get(ctx, "k").Val())

			// Scripts: checked at once, and the commit conditioned.
			const fenced = "redis.call('LOCK.GUARD', 'res', ARGV[1]) return redis.call('SET', KEYS[1], ARGV[2])"
			err = a.Eval(ctx, fenced, []string{"k"}, tokA, "script A").Err()
			require.ErrorContains(t, err, "NOTOWNER held by another owner or with another token")
			require.Equal(t, "from B", a.Get(ctx, "k").Val())
			require.NoError(t, a.Eval(ctx, fenced, []string{"k"}, tokB, "script B").Err())
			require.Equal(t, "script B", a.Get(ctx, "k").Val())

			// Inside MULTI a guard is refused, as WATCH is.
			cn := a.Conn()
			defer cn.Close()
			require.NoError(t, connDo(ctx, cn, "MULTI").Err())
			require.EqualError(t, connDo(ctx, cn, "LOCK.GUARD", "res", tokB).Err(), "ERR LOCK.GUARD inside MULTI is not allowed")
			require.NoError(t, connDo(ctx, cn, "DISCARD").Err())
		})
	}
}
