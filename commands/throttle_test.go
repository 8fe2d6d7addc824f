package commands_test

// Server tests of CL.THROTTLE (redis-cell's rate limiter) over real TCP,
// on every backend testserver.Stores gives, directly, inside MULTI and
// from a script.

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/internal/testserver"
)

// nsClock is a server clock to the nanosecond that only moves when the
// test moves it (CL.THROTTLE's arithmetic is in nanoseconds).
type nsClock struct{ ns atomic.Int64 }

// newNSClock starts at the real time (DynamoDB Local collects items whose
// ttl is in the real past), at a fraction of a millisecond.
func newNSClock() *nsClock {
	c := &nsClock{}
	c.ns.Store(time.Now().Truncate(time.Second).Add(123_456_789).UnixNano())
	return c
}

func (c *nsClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *nsClock) Set(t time.Time)         { c.ns.Store(t.UnixNano()) }
func (c *nsClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// throttlePath runs CL.THROTTLE one way: directly, queued in MULTI (with
// another command, so that EXEC runs a transaction), or from a script.
type throttlePath struct {
	name string
	do   func(ctx context.Context, rdb *redis.Client, args ...any) ([]int64, error)
}

var throttlePaths = []throttlePath{
	{"direct", func(ctx context.Context, rdb *redis.Client, args ...any) ([]int64, error) {
		return rdb.Do(ctx, append([]any{"CL.THROTTLE"}, args...)...).Int64Slice()
	}},
	{"multi", func(ctx context.Context, rdb *redis.Client, args ...any) ([]int64, error) {
		var cmd *redis.Cmd
		_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			cmd = p.Do(ctx, append([]any{"CL.THROTTLE"}, args...)...)
			p.Echo(ctx, "x")
			return nil
		})
		if err != nil {
			return nil, err
		}
		return cmd.Int64Slice()
	}},
	{"script", func(ctx context.Context, rdb *redis.Client, args ...any) ([]int64, error) {
		return rdb.Eval(ctx, "return redis.call('CL.THROTTLE', KEYS[1], unpack(ARGV))", []string{fmt.Sprint(args[0])}, args[1:]...).Int64Slice()
	}},
}

// TestThrottleRedisCellCases runs redis-cell's own table (it_rate_limits: a
// limit of 5 at one per second) through the server, replies rounded to
// whole seconds as CL.THROTTLE gives them; then the key holds the TAT as
// redis-cell stores it and expires when the TAT passes.
func TestThrottleRedisCellCases(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		at       time.Duration
		quantity int
		want     []int64
	}{
		{0, 6, []int64{1, 5, 5, -1, 0}},
		{0, 1, []int64{0, 5, 4, -1, 1}},
		{0, 1, []int64{0, 5, 3, -1, 2}},
		{0, 1, []int64{0, 5, 2, -1, 3}},
		{0, 1, []int64{0, 5, 1, -1, 4}},
		{0, 1, []int64{0, 5, 0, -1, 5}},
		{0, 1, []int64{1, 5, 0, 1, 5}},
		{3000 * time.Millisecond, 1, []int64{0, 5, 2, -1, 3}},
		{3100 * time.Millisecond, 1, []int64{0, 5, 1, -1, 4}},
		{4000 * time.Millisecond, 1, []int64{0, 5, 1, -1, 4}},
		{8000 * time.Millisecond, 1, []int64{0, 5, 4, -1, 1}},
		{9500 * time.Millisecond, 1, []int64{0, 5, 4, -1, 1}},
		{9500 * time.Millisecond, 0, []int64{0, 5, 4, -1, 1}},
		{9500 * time.Millisecond, 2, []int64{0, 5, 2, -1, 3}},
		{9500 * time.Millisecond, 5, []int64{1, 5, 2, 3, 3}},
	}
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			clock := newNSClock()
			start := clock.Now()
			rdb := b.Start(t, testserver.WithClock(clock.Now)).Client(t)
			for _, path := range throttlePaths {
				t.Run(path.name, func(t *testing.T) {
					key := "cell:" + path.name
					for i, tc := range cases {
						clock.Set(start.Add(tc.at))
						got, err := path.do(ctx, rdb, key, 4, 1, 1, tc.quantity)
						require.NoError(t, err, "case %d", i)
						require.Equal(t, tc.want, got, "case %d", i)
					}
					// The last allowed call left TAT = start + 12.5 s.
					tat := start.Add(12500 * time.Millisecond)
					require.Equal(t, strconv.FormatInt(tat.UnixNano(), 10), rdb.Get(ctx, key).Val())
					require.Equal(t, "string", rdb.Type(ctx, key).Val())
					require.Equal(t, "embstr", rdb.ObjectEncoding(ctx, key).Val())
					// It expires at the TAT: the whole ms after it, as expiry
					// is to the ms.
					ceil := time.UnixMilli(tat.UnixMilli() + 1)
					require.Equal(t, ceil.UnixMilli(), rdb.PExpireTime(ctx, key).Val().Milliseconds())
					clock.Set(ceil.Add(-time.Nanosecond))
					require.Equal(t, int64(1), rdb.Exists(ctx, key).Val())
					clock.Set(ceil)
					require.Equal(t, int64(0), rdb.Exists(ctx, key).Val())
				})
			}
		})
	}
}

// TestThrottleKeyspace: the key is an ordinary string key. DEL resets the
// limit; a key whose expiry another command changed, or removed, gets its
// TAT's expiry back with the next allowed call.
func TestThrottleKeyspace(t *testing.T) {
	ctx := context.Background()
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			clock := newNSClock()
			rdb := b.Start(t, testserver.WithClock(clock.Now)).Client(t)
			throttle := func(args ...any) []int64 {
				t.Helper()
				got, err := rdb.Do(ctx, append([]any{"CL.THROTTLE", "k"}, args...)...).Int64Slice()
				require.NoError(t, err)
				return got
			}
			// 1 per 10 s, burst 2: three fit.
			for _, want := range [][]int64{{0, 3, 2, -1, 10}, {0, 3, 1, -1, 20}, {0, 3, 0, -1, 30}, {1, 3, 0, 10, 30}} {
				require.Equal(t, want, throttle(2, 1, 10))
			}
			require.Equal(t, int64(1), rdb.Del(ctx, "k").Val())
			require.Equal(t, []int64{0, 3, 2, -1, 10}, throttle(2, 1, 10))

			tat := clock.Now().Add(10 * time.Second)
			wantExpiry := tat.UnixMilli() + 1
			for _, tamper := range []func(){
				func() { rdb.Expire(ctx, "k", time.Hour) },
				func() { rdb.Persist(ctx, "k") },
				func() { rdb.PExpire(ctx, "k", 2*time.Second) },
			} {
				tamper()
				require.Equal(t, []int64{0, 3, 2, -1, 10}, throttle(2, 1, 10, 0), "a peek rewrites the key")
				require.Equal(t, wantExpiry, rdb.PExpireTime(ctx, "k").Val().Milliseconds())
				require.Equal(t, strconv.FormatInt(tat.UnixNano(), 10), rdb.Get(ctx, "k").Val())
			}
			// Moved by hand within the bucket, the TAT is what counts.
			require.NoError(t, rdb.Set(ctx, "k", strconv.FormatInt(clock.Now().Add(15*time.Second).UnixNano(), 10), 0).Err())
			require.Equal(t, []int64{0, 3, 0, -1, 25}, throttle(2, 1, 10))
			require.Equal(t, clock.Now().Add(25*time.Second).UnixMilli()+1, rdb.PExpireTime(ctx, "k").Val().Milliseconds())
		})
	}
}

// TestThrottleErrors: redis-cell's replies to bad arguments, byte for byte,
// WRONGTYPE for a key of another type (directly, in MULTI, in a script),
// and the replies to values redis-cell cannot read as a TAT.
func TestThrottleErrors(t *testing.T) {
	ctx := context.Background()
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			rdb := b.Start(t).Client(t)
			for _, tc := range []struct {
				args []any
				want string
			}{
				{nil, commands.MsgCellUsage},
				{[]any{"k"}, commands.MsgCellUsage},
				{[]any{"k", 1, 2}, commands.MsgCellUsage},
				{[]any{"k", 1, 2, 3, 4, 5}, commands.MsgCellUsage},
				{[]any{"k", "x", 1, 1}, "Cell error: Store error: Couldn't parse as integer: x"},
				{[]any{"k", 1, 1, 1, "1.5"}, "Cell error: Store error: Couldn't parse as integer: 1.5"},
				{[]any{"k", 1, 0, "x"}, "Cell error: Store error: Couldn't parse as integer: x"},
				{[]any{"k", 1, 0, 60}, commands.MsgCellZeroRate},
				{[]any{"k", 1, 30, 0}, commands.MsgCellZeroRate},
			} {
				err := rdb.Do(ctx, append([]any{"cl.throttle"}, tc.args...)...).Err()
				require.EqualError(t, err, tc.want, "%v", tc.args)
			}
			require.Equal(t, int64(0), rdb.Exists(ctx, "k").Val(), "an error writes nothing")

			require.NoError(t, rdb.LPush(ctx, "list", "x").Err())
			for _, path := range throttlePaths {
				_, err := path.do(ctx, rdb, "list", 1, 1, 1)
				require.ErrorContains(t, err, commands.MsgWrongType, path.name)
			}
			for val, want := range map[string]string{
				"abc":                  "Cell error: invalid digit found in string",
				"":                     "Cell error: cannot parse integer from empty string",
				"-5":                   "Cell error: invalid digit found in string",
				"18446744073709551616": "Cell error: number too large to fit in target type",
			} {
				require.NoError(t, rdb.Set(ctx, "s", val, 0).Err())
				require.EqualError(t, rdb.Do(ctx, "CL.THROTTLE", "s", 1, 1, 1).Err(), want, "%q", val)
				require.Equal(t, val, rdb.Get(ctx, "s").Val())
			}
			// Text redis-cell reads as a u64 is a TAT: "+5" is 5 ns past
			// the epoch, long gone.
			require.NoError(t, rdb.Set(ctx, "s", "+5", 0).Err())
			got, err := rdb.Do(ctx, "CL.THROTTLE", "s", 15, 30, 60).Int64Slice()
			require.NoError(t, err)
			require.Equal(t, []int64{0, 16, 15, -1, 2}, got)

			// A negative quantity moves the TAT back: the value is written,
			// the expiry refused, as Redis refuses redis-cell's.
			err = rdb.Do(ctx, "CL.THROTTLE", "neg", 5, 10, 60, -1).Err()
			require.EqualError(t, err, commands.MsgCellExpire)
			require.Equal(t, time.Duration(-1), rdb.TTL(ctx, "neg").Val())
			require.Equal(t, "string", rdb.Type(ctx, "neg").Val())
		})
	}
}

// TestThrottleCommandInfo: COMMAND reports CL.THROTTLE as Redis does with
// redis-cell loaded.
func TestThrottleCommandInfo(t *testing.T) {
	ctx := context.Background()
	rdb := testserver.Start(t, nil).Client(t, func(o *redis.Options) { o.Protocol = 2 })
	info, err := rdb.Do(ctx, "COMMAND", "INFO", "cl.throttle").Slice()
	require.NoError(t, err)
	entry := info[0].([]any)
	require.Equal(t, []any{"cl.throttle", int64(-1), []any{"write", "module"}, int64(1), int64(1), int64(1)}, entry[:6])
	keys, err := rdb.CommandGetKeys(ctx, "cl.throttle", "user123", 15, 30, 60).Result()
	require.NoError(t, err)
	require.Equal(t, []string{"user123"}, keys)
}

// TestThrottleRequests counts the DynamoDB requests of CL.THROTTLE: one
// for every call in the steady state, allowed (PutItem on an empty bucket,
// UpdateItem on a filling one) or limited (GetItem); two only when the
// process guessed the key's state wrong (another instance changed it).
func TestThrottleRequests(t *testing.T) {
	ctx := context.Background()
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			clock := newNSClock()
			a := b.Start(t, testserver.WithClock(clock.Now)).Client(t)
			other := b.Start(t, testserver.WithClock(clock.Now)).Client(t)
			const (
				put    = dynastore.OpPutItem
				update = dynastore.OpUpdateItem
				get    = dynastore.OpGetItem
			)
			for i, step := range []struct {
				rdb     *redis.Client
				advance time.Duration
				want    []int64
				ops     map[string]int64
			}{
				// Burst 2 at one per 10 s.
				{a, 0, []int64{0, 3, 2, -1, 10}, map[string]int64{put: 1}},
				{a, time.Second, []int64{0, 3, 1, -1, 19}, map[string]int64{update: 1}},
				{a, 0, []int64{0, 3, 0, -1, 29}, map[string]int64{update: 1}},
				{a, 0, []int64{1, 3, 0, 9, 29}, map[string]int64{get: 1}},
				{a, 0, []int64{1, 3, 0, 9, 29}, map[string]int64{get: 1}},
				{a, 9 * time.Second, []int64{0, 3, 0, -1, 30}, map[string]int64{update: 1}},
				// Drained: a fresh bucket.
				{a, 31 * time.Second, []int64{0, 3, 2, -1, 10}, map[string]int64{put: 1}},
				// Another instance, which never saw the key, guesses an
				// empty bucket: the failed PutItem returns the key, then
				// an UpdateItem.
				{other, 0, []int64{0, 3, 1, -1, 20}, map[string]int64{put: 1, update: 1}},
				// The first instance saw it filling, it still is.
				{a, 0, []int64{0, 3, 0, -1, 30}, map[string]int64{update: 1}},
				// The other saw room, which is gone: the failed UpdateItem
				// returns the key, and the answer.
				{other, 0, []int64{1, 3, 0, 10, 30}, map[string]int64{update: 1}},
			} {
				clock.Advance(step.advance)
				before := b.Stats.Snapshot()
				got, err := step.rdb.Do(ctx, "CL.THROTTLE", "k", 2, 1, 10).Int64Slice()
				require.NoError(t, err, "step %d", i)
				require.Equal(t, step.want, got, "step %d", i)
				require.Equal(t, step.ops, requestsSince(before, b.Stats.Snapshot(), "cl.throttle"), "step %d", i)
			}
			// A quantity over the limit is refused whatever the key holds:
			// one read.
			before := b.Stats.Snapshot()
			got, err := a.Do(ctx, "CL.THROTTLE", "k", 2, 1, 10, 4).Int64Slice()
			require.NoError(t, err)
			require.Equal(t, []int64{1, 3, 0, -1, 30}, got)
			require.Equal(t, map[string]int64{get: 1}, requestsSince(before, b.Stats.Snapshot(), "cl.throttle"))
			// DEL through the other instance: the first, which saw the
			// bucket full, reads it and finds none.
			require.Equal(t, int64(1), other.Del(ctx, "k").Val())
			before = b.Stats.Snapshot()
			got, err = a.Do(ctx, "CL.THROTTLE", "k", 2, 1, 10).Int64Slice()
			require.NoError(t, err)
			require.Equal(t, []int64{0, 3, 2, -1, 10}, got)
			require.Equal(t, map[string]int64{get: 1, put: 1}, requestsSince(before, b.Stats.Snapshot(), "cl.throttle"))

			// In a transaction, the keys are read first, in one request,
			// and written in one.
			before = b.Stats.Snapshot()
			cmds, err := a.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Do(ctx, "CL.THROTTLE", "k", 2, 1, 10)
				p.Do(ctx, "CL.THROTTLE", "k2", 2, 1, 10)
				return nil
			})
			require.NoError(t, err)
			require.Equal(t, []int64{0, 3, 1, -1, 20}, must(cmds[0].(*redis.Cmd).Int64Slice()))
			require.Equal(t, []int64{0, 3, 2, -1, 10}, must(cmds[1].(*redis.Cmd).Int64Slice()))
			require.Equal(t, map[string]int64{dynastore.OpBatchGetItem: 1, dynastore.OpTransactWriteItems: 1}, requestsSince(before, b.Stats.Snapshot(), "exec"))
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestThrottleAcrossInstances: clients of two instances on one store
// throttle one key at once. Exactly limit calls are allowed, and each
// allowed call sees one less remaining: every call applied atomically.
func TestThrottleAcrossInstances(t *testing.T) {
	ctx := context.Background()
	for _, b := range testserver.Instances(t) {
		t.Run(b.Name, func(t *testing.T) {
			clients := []*redis.Client{b.Start(t).Client(t), b.Start(t).Client(t)}
			const workers, each, limit = 8, 12, 30
			var mu sync.Mutex
			var remaining []int64
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range each {
						// One per hour: nothing refills during the test.
						got, err := clients[w%2].Do(ctx, "CL.THROTTLE", "hot", limit-1, 1, 3600).Int64Slice()
						if err != nil {
							t.Error(err)
							return
						}
						if got[0] == 0 {
							mu.Lock()
							remaining = append(remaining, got[2])
							mu.Unlock()
						}
					}
				}()
			}
			wg.Wait()
			t.Logf("%d calls, requests: %v", workers*each, opsFor(b.Stats, "cl.throttle"))
			sort.Slice(remaining, func(i, j int) bool { return remaining[i] < remaining[j] })
			want := make([]int64, limit)
			for i := range want {
				want[i] = int64(i)
			}
			require.Equal(t, want, remaining)
		})
	}
}
