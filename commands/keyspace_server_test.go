package commands_test

// Server tests of the string and key commands: over real TCP with go-redis
// (RESP3 through its default HELLO 3), on every backend testserver.Stores
// gives (memory, and DynamoDB Local when configured).

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/faults"
	"github.com/redamo/redamo/internal/testserver"
)

// testClock is a server clock that only moves when the test moves it,
// starting at the real time (DynamoDB Local garbage-collects items whose ttl
// is in the real past).
type testClock struct{ ms atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.ms.Store(time.Now().UnixMilli())
	return c
}

func (c *testClock) Now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *testClock) Advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }
func (c *testClock) UnixMilli() int64        { return c.ms.Load() }
func (c *testClock) opt() testserver.Option  { return testserver.WithClock(c.Now) }
func requireNil(t *testing.T, err error)     { t.Helper(); require.ErrorIs(t, err, redis.Nil) }
func requireRedisErr(t *testing.T, want string, err error) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, want, err.Error())
}

// opsFor returns the store requests counted under a command name, by operation.
func opsFor(st *dynastore.Stats, label string) map[string]int64 {
	out := map[string]int64{}
	for k, v := range st.Snapshot() {
		if k.Label == label {
			out[k.Op] = v.Requests
		}
	}
	return out
}

func TestStringCommandsOverTCP(t *testing.T) {
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			clock := newTestClock()
			s := b.Start(t, clock.opt())
			rdb := s.Client(t)
			ctx := context.Background()

			_, err := rdb.Get(ctx, "k").Result()
			requireNil(t, err)
			require.NoError(t, rdb.Set(ctx, "k", "v", 0).Err())
			require.Equal(t, "v", rdb.Get(ctx, "k").Val())
			bin := "\x00\xff\r\n binary"
			require.NoError(t, rdb.Set(ctx, bin, bin, 0).Err())
			require.Equal(t, bin, rdb.Get(ctx, bin).Val())

			// SET options through go-redis's SetArgs.
			ok, err := rdb.SetNX(ctx, "lock", "me", 5*time.Second).Result()
			require.NoError(t, err)
			require.True(t, ok)
			ok, err = rdb.SetNX(ctx, "lock", "you", 5*time.Second).Result()
			require.NoError(t, err)
			require.False(t, ok)
			require.Equal(t, 5*time.Second, rdb.PTTL(ctx, "lock").Val())
			old, err := rdb.SetArgs(ctx, "lock", "you", redis.SetArgs{Mode: "XX", Get: true, KeepTTL: true}).Result()
			require.NoError(t, err)
			require.Equal(t, "me", old)
			require.Equal(t, 5*time.Second, rdb.PTTL(ctx, "lock").Val())
			at := time.UnixMilli(clock.UnixMilli() + 60_000)
			require.NoError(t, rdb.SetArgs(ctx, "lock", "x", redis.SetArgs{ExpireAt: at}).Err())
			require.Equal(t, at.Unix(), int64(rdb.ExpireTime(ctx, "lock").Val()/time.Second), "go-redis sends EXAT in whole seconds")
			requireRedisErr(t, "ERR invalid expire time in 'set' command", rdb.Do(ctx, "SET", "k", "v", "EX", "0").Err())
			requireRedisErr(t, commands.MsgSyntax, rdb.Do(ctx, "SET", "k", "v", "NX", "XX").Err())

			require.NoError(t, rdb.SetEx(ctx, "ex", "1", 10*time.Second).Err())
			require.Equal(t, 10*time.Second, rdb.TTL(ctx, "ex").Val())
			require.Equal(t, "1", rdb.GetSet(ctx, "ex", "2").Val())
			require.Equal(t, time.Duration(-1), rdb.TTL(ctx, "ex").Val(), "GETSET drops the TTL")
			require.Equal(t, "2", rdb.GetEx(ctx, "ex", 100*time.Second).Val())
			require.Equal(t, 100*time.Second, rdb.TTL(ctx, "ex").Val())
			require.Equal(t, "2", rdb.GetDel(ctx, "ex").Val())
			requireNil(t, rdb.GetDel(ctx, "ex").Err())

			require.NoError(t, rdb.MSet(ctx, "a", "1", "b", "2").Err())
			require.Equal(t, []any{"1", "2", nil}, rdb.MGet(ctx, "a", "b", "c").Val())
			require.False(t, rdb.MSetNX(ctx, "b", "x", "c", "y").Val())
			require.True(t, rdb.MSetNX(ctx, "c", "3", "d", "4").Val())

			require.EqualValues(t, 5, rdb.Append(ctx, "ap", "hello").Val())
			require.EqualValues(t, 11, rdb.Append(ctx, "ap", " world").Val())
			require.EqualValues(t, 11, rdb.StrLen(ctx, "ap").Val())
			require.Equal(t, "world", rdb.GetRange(ctx, "ap", -5, -1).Val())
			require.EqualValues(t, 11, rdb.SetRange(ctx, "ap", 0, "J").Val())
			require.Equal(t, "Jello world", rdb.Get(ctx, "ap").Val())

			require.EqualValues(t, 1, rdb.Incr(ctx, "n").Val())
			require.EqualValues(t, 11, rdb.IncrBy(ctx, "n", 10).Val())
			require.EqualValues(t, 10, rdb.Decr(ctx, "n").Val())
			require.EqualValues(t, 0, rdb.DecrBy(ctx, "n", 10).Val())
			require.Equal(t, 10.5, rdb.IncrByFloat(ctx, "n", 10.5).Val())
			requireRedisErr(t, commands.MsgNotInt, rdb.Incr(ctx, "n").Err())
			require.NoError(t, rdb.Set(ctx, "max", strconv.FormatInt(1<<63-1, 10), 0).Err())
			requireRedisErr(t, commands.MsgOverflow, rdb.Incr(ctx, "max").Err())
			require.EqualValues(t, 1, rdb.SAdd(ctx, "set", "m").Val())
			requireRedisErr(t, commands.MsgWrongType, rdb.Get(ctx, "set").Err())
			requireRedisErr(t, commands.MsgWrongType, rdb.Incr(ctx, "set").Err())

			// Pipelined commands keep their order and replies.
			cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, "p1", "a", 0)
				p.Append(ctx, "p1", "b")
				p.Get(ctx, "p1")
				p.Incr(ctx, "p2")
				return nil
			})
			require.NoError(t, err)
			require.Equal(t, "ab", cmds[2].(*redis.StringCmd).Val())
			require.EqualValues(t, 1, cmds[3].(*redis.IntCmd).Val())

			// The resp layer labels requests with the command name.
			s.Stats.Reset()
			require.NoError(t, rdb.Incr(ctx, "n2").Err())
			require.Equal(t, map[string]int64{dynastore.OpUpdateItem: 1}, opsFor(s.Stats, "incr"))
		})
	}
}

func TestKeyCommandsOverTCP(t *testing.T) {
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			clock := newTestClock()
			s := b.Start(t, clock.opt())
			rdb := s.Client(t)
			ctx := context.Background()

			require.NoError(t, rdb.MSet(ctx, "a", "1", "b", "2", "c", "3").Err())
			require.EqualValues(t, 3, rdb.Exists(ctx, "a", "b", "c", "zz").Val())
			require.EqualValues(t, 2, rdb.Touch(ctx, "a", "b").Val())
			require.Equal(t, "string", rdb.Type(ctx, "a").Val())
			require.Equal(t, "none", rdb.Type(ctx, "zz").Val())
			require.EqualValues(t, 2, rdb.Del(ctx, "a", "b", "zz").Val())
			require.EqualValues(t, 1, rdb.Unlink(ctx, "c").Val())
			require.EqualValues(t, 0, rdb.DBSize(ctx).Val())

			require.NoError(t, rdb.Set(ctx, "k", "v", 0).Err())
			require.True(t, rdb.Expire(ctx, "k", 100*time.Second).Val())
			require.False(t, rdb.ExpireNX(ctx, "k", 200*time.Second).Val())
			require.True(t, rdb.ExpireGT(ctx, "k", 200*time.Second).Val())
			require.False(t, rdb.ExpireLT(ctx, "k", 300*time.Second).Val())
			require.True(t, rdb.ExpireXX(ctx, "k", 50*time.Second).Val())
			require.Equal(t, 50*time.Second, rdb.TTL(ctx, "k").Val())
			require.Equal(t, 50*time.Second, rdb.PTTL(ctx, "k").Val())
			require.True(t, rdb.PExpire(ctx, "k", 1500*time.Millisecond).Val())
			clock.Advance(1499 * time.Millisecond)
			require.Equal(t, time.Millisecond, rdb.PTTL(ctx, "k").Val())
			clock.Advance(time.Millisecond)
			requireNil(t, rdb.Get(ctx, "k").Err())
			require.Equal(t, time.Duration(-2), rdb.PTTL(ctx, "k").Val())

			require.NoError(t, rdb.Set(ctx, "k", "v", time.Hour).Err())
			require.True(t, rdb.Persist(ctx, "k").Val())
			require.False(t, rdb.Persist(ctx, "k").Val())
			at := time.UnixMilli(clock.UnixMilli() + 10_000)
			require.True(t, rdb.PExpireAt(ctx, "k", at).Val())
			require.Equal(t, time.Duration(at.UnixMilli())*time.Millisecond, rdb.PExpireTime(ctx, "k").Val())
			require.True(t, rdb.ExpireAt(ctx, "k", time.Unix(1, 0)).Val(), "a deadline in the past deletes")
			require.EqualValues(t, 0, rdb.Exists(ctx, "k").Val())

			require.NoError(t, rdb.Set(ctx, "src", "v", time.Hour).Err())
			require.NoError(t, rdb.Rename(ctx, "src", "dst").Err())
			require.Equal(t, time.Hour, rdb.TTL(ctx, "dst").Val())
			requireRedisErr(t, commands.MsgNoSuchKey, rdb.Rename(ctx, "src", "dst").Err())
			require.NoError(t, rdb.Set(ctx, "other", "o", 0).Err())
			require.False(t, rdb.RenameNX(ctx, "dst", "other").Val())
			require.True(t, rdb.RenameNX(ctx, "dst", "dst2").Val())
			require.EqualValues(t, 1, rdb.Copy(ctx, "dst2", "copy", 0, false).Val())
			require.EqualValues(t, 0, rdb.Copy(ctx, "dst2", "copy", 0, false).Val())
			require.EqualValues(t, 1, rdb.Copy(ctx, "dst2", "copy", 5, false).Val())
			requireRedisErr(t, commands.MsgSameObject, rdb.Copy(ctx, "copy", "copy", 0, true).Err())

			keys := rdb.Keys(ctx, "*").Val()
			sort.Strings(keys)
			require.Equal(t, []string{"copy", "dst2", "other"}, keys)
			var scanned []string
			iter := rdb.Scan(ctx, 0, "*", 1).Iterator()
			for iter.Next(ctx) {
				scanned = append(scanned, iter.Val())
			}
			require.NoError(t, iter.Err())
			sort.Strings(scanned)
			require.Equal(t, keys, scanned)
			require.Contains(t, keys, rdb.RandomKey(ctx).Val())

			require.Equal(t, "embstr", rdb.ObjectEncoding(ctx, "other").Val())
			require.NoError(t, rdb.Set(ctx, "int", "42", 0).Err())
			require.Equal(t, "int", rdb.ObjectEncoding(ctx, "int").Val())
			require.EqualValues(t, 2147483647, rdb.ObjectRefCount(ctx, "int").Val())

			require.NoError(t, rdb.FlushDB(ctx).Err())
			require.EqualValues(t, 0, rdb.DBSize(ctx).Val())
			require.NoError(t, rdb.FlushAll(ctx).Err())
		})
	}
}

// TestInstancesShareOneTruth: three servers on one store, as several redamo
// processes on one table. INCR from many clients ends at the exact total;
// each round of SET NX PX has exactly one winner; a SCAN cursor from one
// instance continues on another.
func TestInstancesShareOneTruth(t *testing.T) {
	for _, b := range testserver.Instances(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			clock := newTestClock()
			var rdbs []*redis.Client
			for i := 0; i < 3; i++ {
				rdbs = append(rdbs, b.Start(t, clock.opt()).Client(t))
			}
			const clients, each = 12, 20
			var wg sync.WaitGroup
			errs := make(chan error, clients)
			for i := 0; i < clients; i++ {
				wg.Add(1)
				go func(rdb *redis.Client) {
					defer wg.Done()
					for j := 0; j < each; j++ {
						if err := rdb.Incr(ctx, "counter").Err(); err != nil {
							errs <- err
							return
						}
					}
				}(rdbs[i%3])
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			require.Equal(t, strconv.Itoa(clients*each), rdbs[0].Get(ctx, "counter").Val())

			for round := 0; round < 4; round++ {
				var winners atomic.Int32
				var wg sync.WaitGroup
				for i := 0; i < clients; i++ {
					wg.Add(1)
					go func(i int) {
						defer wg.Done()
						ok, err := rdbs[i%3].SetNX(ctx, "lock", strconv.Itoa(i), 5*time.Second).Result()
						if err == nil && ok {
							winners.Add(1)
						}
					}(i)
				}
				wg.Wait()
				require.EqualValues(t, 1, winners.Load(), "round %d", round)
				clock.Advance(5 * time.Second)
			}

			pairs := []any{}
			for i := 0; i < 40; i++ {
				pairs = append(pairs, fmt.Sprintf("scan:%02d", i), i)
			}
			require.NoError(t, rdbs[0].MSet(ctx, pairs...).Err())
			seen := map[string]bool{}
			var cursor uint64
			for call := 0; ; call++ {
				keys, next, err := rdbs[call%3].Scan(ctx, cursor, "scan:*", 5).Result()
				require.NoError(t, err)
				for _, k := range keys {
					seen[k] = true
				}
				if cursor = next; cursor == 0 {
					break
				}
			}
			require.Len(t, seen, 40)
		})
	}
}

// TestFaultsNeverHalfApply runs multi-key commands on a store that fails a
// share of requests, before or after they reach the table (a lost answer),
// and checks after every command, on the store without faults, that each
// one happened entirely or not at all.
func TestFaultsNeverHalfApply(t *testing.T) {
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			check := b.Start(t).Client(t)
			flaky := faults.New(b.Store, 7)
			rdb := testserver.Start(t, flaky).Client(t)
			require.NoError(t, check.MSet(ctx, "a", "0", "b", "0", "c", "0", "x", "token").Err())

			boom := fmt.Errorf("injected: %w", dynastore.ErrUnavailable)
			for _, op := range []string{dynastore.OpTransactWriteItems, dynastore.OpPutItem, dynastore.OpUpdateItem, dynastore.OpDeleteItem, dynastore.OpBatchGetItem, dynastore.OpGetItem} {
				flaky.FailRate(op, 0.2, boom)
				flaky.FailRateAfter(op, 0.2, boom)
			}
			failures := 0
			for i := 1; i <= 40; i++ {
				v := strconv.Itoa(i)
				if err := rdb.MSet(ctx, "a", v, "b", v, "c", v).Err(); err != nil {
					failures++
				}
				vals := check.MGet(ctx, "a", "b", "c").Val()
				require.True(t, vals[0] == vals[1] && vals[1] == vals[2], "MSET half applied: %v", vals)

				from, to := "x", "y"
				if i%2 == 0 {
					from, to = "y", "x"
				}
				if err := rdb.Rename(ctx, from, to).Err(); err != nil && err.Error() != commands.MsgNoSuchKey {
					failures++
				}
				require.EqualValues(t, 1, check.Exists(ctx, "x", "y").Val(), "RENAME half applied")
				require.Equal(t, "token", check.Get(ctx, "x").Val()+check.Get(ctx, "y").Val())

				if err := rdb.Append(ctx, "log", "+").Err(); err != nil {
					failures++
				}
				n := check.StrLen(ctx, "log").Val()
				require.Equal(t, strings.Repeat("+", int(n)), check.Get(ctx, "log").Val())
			}
			require.Positive(t, failures, "the faults were injected")
			require.Positive(t, flaky.Injected(dynastore.OpTransactWriteItems))
		})
	}
}
