package commands_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/faults"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/internal/testserver"
)

// listBackends runs body on every backend with a fresh server.
func listBackends(t *testing.T, body func(t *testing.T, b testserver.Backend, s *testserver.Server, c *redis.Client)) {
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			s := b.Start(t)
			body(t, b, s, s.Client(t))
		})
	}
}

// requestCounter returns a function that runs one command and returns
// the DynamoDB requests it made (their label is the command's name).
func requestCounter(t *testing.T, b testserver.Backend, c *redis.Client) func(cmd string, args ...any) int64 {
	return func(cmd string, args ...any) int64 {
		t.Helper()
		b.Stats.Reset()
		require.NoError(t, c.Do(context.Background(), append([]any{cmd}, args...)...).Err())
		return b.Stats.Requests(cmd)
	}
}

// ldo runs a command and renders its reply in order: [a b [c]], nil,
// "ERR: ..." (norm sorts arrays, list replies are ordered).
func ldo(ctx context.Context, c *redis.Client, args ...any) string {
	v, err := c.Do(ctx, args...).Result()
	if err != nil {
		return norm(v, err)
	}
	return ordered(v)
}

func ordered(v any) string {
	switch v := v.(type) {
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = ordered(x)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case nil:
		return "nil"
	}
	return fmt.Sprint(v)
}

func TestListCommands(t *testing.T) {
	small := []any{"a", "b", "c", "d", "e"}
	var large []any // past the inline limits: the large layout
	for i := 0; i < 200; i++ {
		large = append(large, fmt.Sprintf("e%03d", i))
	}
	large[3] = "a"
	type step struct {
		args []any
		want string
	}
	cases := []struct {
		name  string
		setup []any
		steps []step
	}{
		{"pops", small, []step{
			{[]any{"lpop", "l"}, "a"},
			{[]any{"rpop", "l"}, "e"},
			{[]any{"lpop", "l", 2}, "[b c]"},
			{[]any{"rpop", "l", 0}, "[]"},
			{[]any{"rpop", "l", 9}, "[d]"},
			{[]any{"exists", "l"}, "0"},
			{[]any{"lpop", "l"}, "nil"},
		}},
		{"large-pops", large, []step{
			{[]any{"llen", "l"}, "200"},
			{[]any{"lpop", "l", 3}, "[e000 e001 e002]"},
			{[]any{"rpop", "l"}, "e199"},
			{[]any{"lindex", "l", 0}, "a"},
			{[]any{"lindex", "l", -1}, "e198"},
			{[]any{"lindex", "l", 196}, "nil"},
			{[]any{"llen", "l"}, "196"},
			{[]any{"lrange", "l", 0, 2}, "[a e004 e005]"},
			{[]any{"lrange", "l", -2, -1}, "[e197 e198]"},
		}},
		{"large-middle", large, []step{
			{[]any{"lset", "l", 1, "x"}, "OK"},
			{[]any{"lindex", "l", 1}, "x"},
			{[]any{"linsert", "l", "before", "a", "ins"}, "201"},
			{[]any{"lrange", "l", 2, 4}, "[e002 ins a]"},
			{[]any{"lrem", "l", 0, "ins"}, "1"},
			{[]any{"lpos", "l", "a"}, "3"},
			{[]any{"lpos", "l", "e150", "rank", -1}, "150"},
			{[]any{"ltrim", "l", 100, 149}, "OK"},
			{[]any{"llen", "l"}, "50"},
			{[]any{"lrange", "l", 0, 1}, "[e100 e101]"},
			{[]any{"ltrim", "l", 1, 0}, "OK"},
			{[]any{"exists", "l"}, "0"},
		}},
		{"large-push-both-ends", large, []step{
			{[]any{"lpush", "l", "h1", "h2"}, "202"},
			{[]any{"rpush", "l", "t1"}, "203"},
			{[]any{"lrange", "l", 0, 2}, "[h2 h1 e000]"},
			{[]any{"lrange", "l", -2, -1}, "[e199 t1]"},
			{[]any{"lmove", "l", "l", "left", "right"}, "h2"},
			{[]any{"lindex", "l", -1}, "h2"},
			{[]any{"rpoplpush", "l", "other"}, "h2"},
			{[]any{"lrange", "other", 0, -1}, "[h2]"},
		}},
		{"large-keys", large, []step{
			{[]any{"type", "l"}, "list"},
			{[]any{"object", "encoding", "l"}, "quicklist"},
			{[]any{"expire", "l", 100}, "1"},
			{[]any{"rpush", "l", "z"}, "201"},
			{[]any{"ttl", "l"}, "100"},
			{[]any{"rename", "l", "m"}, "OK"},
			{[]any{"lrange", "m", 0, 1}, "[e000 e001]"},
			{[]any{"copy", "m", "n"}, "1"},
			{[]any{"rpop", "n"}, "z"},
			{[]any{"llen", "m"}, "201"},
			{[]any{"lindex", "n", -1}, "e199"},
			{[]any{"lindex", "m", -1}, "z"},
			{[]any{"del", "m", "n"}, "2"},
			{[]any{"llen", "m"}, "0"},
		}},
		{"lmpop", small, []step{
			{[]any{"lmpop", 2, "none", "l", "right", "count", 2}, "[l [e d]]"},
			{[]any{"lmpop", 1, "none", "left"}, "nil"},
		}},
	}
	listBackends(t, func(t *testing.T, _ testserver.Backend, _ *testserver.Server, c *redis.Client) {
		ctx := context.Background()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				require.NoError(t, c.FlushAll(ctx).Err())
				require.NoError(t, c.RPush(ctx, "l", tc.setup...).Err())
				for _, s := range tc.steps {
					require.Equal(t, s.want, ldo(ctx, c, s.args...), "%v", s.args)
				}
			})
		}
	})
}

// TestListRequestCounts checks the DynamoDB requests of the hot list
// commands (their labels are the command names).
func TestListRequestCounts(t *testing.T) {
	listBackends(t, func(t *testing.T, b testserver.Backend, _ *testserver.Server, c *redis.Client) {
		ctx := context.Background()
		count := requestCounter(t, b, c)
		// Small lists: one request each.
		require.EqualValues(t, 1, count("lpush", "s", "a", "b"))
		require.EqualValues(t, 1, count("rpush", "s", "c"))
		require.EqualValues(t, 1, count("lpop", "s"))
		require.EqualValues(t, 1, count("rpop", "s"))
		require.EqualValues(t, 1, count("llen", "s"))
		require.EqualValues(t, 1, count("lrange", "s", 0, -1))
		require.EqualValues(t, 1, count("lmove", "s", "s", "left", "right"))

		// Large lists this instance wrote last: pushes are one
		// transaction, and so are pops of elements it knows (it pushed
		// them, or read them ahead with an earlier pop).
		var vals []any
		for i := 0; i < 1000; i++ {
			vals = append(vals, strconv.Itoa(i))
		}
		require.NoError(t, c.RPush(ctx, "big", vals...).Err())
		require.EqualValues(t, 1, count("lpush", "big", "x"))
		require.EqualValues(t, 1, count("rpush", "big", "y"))
		require.EqualValues(t, 1, count("lpop", "big"))
		require.EqualValues(t, 1, count("rpop", "big"))
		// "0" was never read: a Query (reading ahead), then the transaction.
		require.EqualValues(t, 2, count("lmove", "big", "big", "left", "right"))
		require.EqualValues(t, 1, count("lmove", "big", "big", "left", "right"))
		require.Equal(t, []string{"2", "3"}, c.LPopCount(ctx, "big", 2).Val())
		require.Equal(t, []string{"1", "0", "999"}, c.RPopCount(ctx, "big", 3).Val())
		// Another instance's write: the guard fails, then a fresh read.
		require.NoError(t, b.Start(t).Client(t).RPush(ctx, "big", "z").Err())
		require.EqualValues(t, 3, count("lpush", "big", "w"))
		require.EqualValues(t, 1, count("llen", "big"))
		require.EqualValues(t, 2, count("lindex", "big", 500))
		b.Stats.Reset()
		got, err := c.LRange(ctx, "big", 0, 99).Result()
		require.NoError(t, err)
		require.Len(t, got, 100)
		require.EqualValues(t, 1, b.Stats.Requests("lrange", dynastore.OpQuery))
		require.EqualValues(t, 1, b.Stats.Requests("lrange", dynastore.OpGetItem))
	})
}

// TestListCachesAcrossInstances runs random list commands through two
// instances on one store against a model: instance a starts its writes
// from its item cache (the key item, and element values it pushed or read
// ahead), b changes the list behind a's back, including LSET of elements a
// knows, and now and then deletes and rebuilds it. Every reply must match
// the model; elements differ in content and length, so a value that
// aliased an earlier request's bytes would show.
func TestListCachesAcrossInstances(t *testing.T) {
	for _, b := range testserver.Instances(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			a, other := b.Start(t).Client(t), b.Start(t).Client(t)
			ops := 600
			if b.Name == "dynamodb" {
				ops = 200
			}
			rng := rand.New(rand.NewPCG(7, 11))
			var model []string
			seq := 0
			elem := func() string {
				seq++
				return strings.Repeat(strconv.Itoa(seq), 1+seq%4)
			}
			rebuild := func(c *redis.Client, n int) {
				require.NoError(t, c.Del(ctx, "l").Err())
				model = model[:0]
				vals := make([]any, n)
				for i := range vals {
					model = append(model, elem())
					vals[i] = model[i]
				}
				require.NoError(t, c.RPush(ctx, "l", vals...).Err())
			}
			rebuild(a, 300)
			// a reads ahead from the tail with its first pop; then the
			// elements it knows change, through a and through b.
			steps := []struct {
				c    *redis.Client
				args []any
				want string
			}{
				{a, []any{"rpop", "l"}, model[299]},
				{a, []any{"lset", "l", -2, "mine"}, "OK"},
				{a, []any{"rpop", "l"}, model[298]},
				{a, []any{"rpop", "l"}, "mine"},
				{other, []any{"lset", "l", -1, "theirs"}, "OK"},
				{a, []any{"rpop", "l"}, "theirs"},
				{a, []any{"rpop", "l"}, model[295]},
			}
			for _, st := range steps {
				require.Equal(t, st.want, ldo(ctx, st.c, st.args...), "%v", st.args)
			}
			model = model[:295]
			for i := 0; i < ops; i++ {
				c := a
				if rng.IntN(4) == 0 {
					c = other
				}
				var cmd []any
				var want string
				switch op := rng.IntN(20); {
				case op < 4:
					e := elem()
					model = append([]string{e}, model...)
					cmd, want = []any{"lpush", "l", e}, strconv.Itoa(len(model))
				case op < 7:
					e := elem()
					model = append(model, e)
					cmd, want = []any{"rpush", "l", e}, strconv.Itoa(len(model))
				case op < 10:
					cmd, want = []any{"lpop", "l"}, "nil"
					if len(model) > 0 {
						want, model = model[0], model[1:]
					}
				case op < 14:
					cmd, want = []any{"rpop", "l"}, "nil"
					if len(model) > 0 {
						want, model = model[len(model)-1], model[:len(model)-1]
					}
				case op < 15:
					n := 1 + rng.IntN(4)
					n = min(n, len(model))
					cmd, want = []any{"rpop", "l", n}, "nil"
					if len(model) > 0 {
						popped := make([]string, n)
						for j := range popped {
							popped[j] = model[len(model)-1-j]
						}
						model = model[:len(model)-n]
						want = "[" + strings.Join(popped, " ") + "]"
					}
				case op < 17 && len(model) > 0:
					// Near either end: where a's known values are.
					idx := rng.IntN(min(len(model), 20))
					if rng.IntN(2) == 0 {
						idx = len(model) - 1 - idx
					}
					e := elem()
					model[idx] = e
					cmd, want = []any{"lset", "l", idx, e}, "OK"
				case op < 18 && len(model) > 0:
					model = append([]string{model[len(model)-1]}, model[:len(model)-1]...)
					cmd, want = []any{"lmove", "l", "l", "right", "left"}, model[0]
				case op < 19:
					cmd, want = []any{"llen", "l"}, strconv.Itoa(len(model))
				default:
					if rng.IntN(3) == 0 {
						rebuild(c, 130+rng.IntN(60))
						continue
					}
					cmd, want = []any{"lrange", "l", 0, -1}, "["+strings.Join(model, " ")+"]"
				}
				if cmd == nil {
					continue
				}
				got := ldo(ctx, c, cmd...)
				if len(model) == 0 && strings.HasPrefix(want, "[") {
					want = "[]"
				}
				require.Equal(t, want, got, "op %d: %v", i, cmd)
			}
			require.Equal(t, "["+strings.Join(model, " ")+"]", ldo(ctx, a, "lrange", "l", 0, -1))
		})
	}
}

// TestListCacheNeverAnswersAlone: a command that writes nothing (an LTRIM
// that keeps everything, LPOP with count 0) or fails on what it read (LSET
// out of range) answers from the list as it is, not as instance a's item
// cache last saw it: the cache may only seed guarded writes. Each case
// pushes through a (which caches the key item), changes the key through
// b (another instance on the same table; a SET through a itself leaves the
// cache as stale), then asks a. Found by the fuzzer (an LTRIM answering OK
// on a string).
func TestListCacheNeverAnswersAlone(t *testing.T) {
	wrongType := "ERR: WRONGTYPE Operation against a key holding the wrong kind of value"
	cases := []struct {
		name   string
		change [][]any // through b
		ask    []any   // through a
		want   string
		after  string // LRANGE k 0 -1 through a, "" to skip
	}{
		{"ltrim-on-string", [][]any{{"set", "k", "s"}}, []any{"ltrim", "k", 0, -1}, wrongType, ""},
		{"lpop-0-on-string", [][]any{{"set", "k", "s"}}, []any{"lpop", "k", 0}, wrongType, ""},
		{"lset-on-string", [][]any{{"set", "k", "s"}}, []any{"lset", "k", 5, "v"}, wrongType, ""},
		{"lpop-0-on-deleted", [][]any{{"del", "k"}}, []any{"lpop", "k", 0}, "nil", "[]"},
		{"lset-on-deleted", [][]any{{"del", "k"}}, []any{"lset", "k", 0, "v"}, "ERR: ERR no such key", "[]"},
		{"lset-past-the-cached-end", [][]any{{"rpush", "k", "z", "w"}}, []any{"lset", "k", 3, "v"}, "OK", "[x y z v]"},
		{"ltrim-past-the-cached-end", [][]any{{"rpush", "k", "z"}}, []any{"ltrim", "k", 0, 1}, "OK", "[x y]"},
	}
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			a, other := b.Start(t).Client(t), b.Start(t).Client(t)
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					require.NoError(t, a.Del(ctx, "k").Err())
					require.NoError(t, a.RPush(ctx, "k", "x", "y").Err())
					for _, ch := range tc.change {
						require.NoError(t, other.Do(ctx, ch...).Err())
					}
					require.Equal(t, tc.want, ldo(ctx, a, tc.ask...))
					if tc.after != "" {
						require.Equal(t, tc.after, ldo(ctx, a, "lrange", "k", 0, -1))
					}
				})
			}
			// The same instance's own SET leaves its cache as stale.
			require.NoError(t, a.RPush(ctx, "own", "x", "y").Err())
			require.NoError(t, a.Set(ctx, "own", "s", 0).Err())
			require.Equal(t, wrongType, ldo(ctx, a, "ltrim", "own", 0, -1))
		})
	}
}

// TestListBigPushAllOrNothing checks that a push of more elements than one
// transaction holds is never seen in part.
func TestListBigPushAllOrNothing(t *testing.T) {
	listBackends(t, func(t *testing.T, _ testserver.Backend, s *testserver.Server, c *redis.Client) {
		ctx := context.Background()
		var vals []any
		for i := 0; i < 1000; i++ {
			vals = append(vals, fmt.Sprintf("v%04d", i))
		}
		for _, start := range [][]any{nil, {"old"}, vals[:300]} {
			require.NoError(t, c.Del(ctx, "l").Err())
			if start != nil {
				require.NoError(t, c.RPush(ctx, "l", start...).Err())
			}
			before := int64(len(start))
			watcher := s.Client(t)
			stop := make(chan struct{})
			seen := make(chan int64, 1)
			go func() {
				bad := int64(-1)
				for {
					select {
					case <-stop:
						seen <- bad
						return
					default:
					}
					n, err := watcher.LLen(ctx, "l").Result()
					if err == nil && n != before && n != before+1000 {
						bad = n
					}
				}
			}()
			require.EqualValues(t, before+1000, c.LPush(ctx, "l", vals...).Val())
			close(stop)
			require.EqualValues(t, -1, <-seen, "a reader saw a partial push")
			got, err := c.LRange(ctx, "l", 0, 2).Result()
			require.NoError(t, err)
			require.Equal(t, []string{"v0999", "v0998", "v0997"}, got)
			require.Equal(t, "v0000", c.LIndex(ctx, "l", 999).Val())
		}
	})
}

func TestListBlockingWakeAndTimeout(t *testing.T) {
	listBackends(t, func(t *testing.T, b testserver.Backend, s *testserver.Server, c *redis.Client) {
		ctx := context.Background()
		// A timeout answers a null array; go-redis reports it as Nil.
		for _, args := range [][]any{
			{"blpop", "none", 0.05},
			{"brpop", "none", "other", 0.05},
			{"blmove", "none", "d", "left", "left", 0.05},
			{"brpoplpush", "none", "d", 0.05},
			{"blmpop", 0.05, 1, "none", "left"},
		} {
			require.Equal(t, "nil", ldo(ctx, c, args...), "%v", args)
		}
		require.EqualValues(t, 0, c.Exists(ctx, "d").Val())

		// A push through the same instance wakes the waiter; the waiter
		// is woken by the push, not by a poll, so a long poll interval
		// does not matter: use a server that polls every 10 s.
		slow := b.Start(t, testserver.WithConfig(func(cfg *commands.Config) { cfg.BlockingPoll = 10 * time.Second }))
		sc := slow.Client(t)
		got := make(chan []string, 1)
		go func() {
			v, _ := sc.BLPop(ctx, 0, "q").Result()
			got <- v
		}()
		waitBlocked(t, slow, 1)
		// The poller's first reads come at 10 ms, 15 ms, ...: wait until
		// it is at its long interval before pushing.
		time.Sleep(50 * time.Millisecond)
		require.NoError(t, slow.Client(t).RPush(ctx, "q", "x").Err())
		require.Equal(t, []string{"q", "x"}, <-got)
	})
}

// waitBlocked waits until n clients of s run a blocking command, as INFO
// clients reports them (blocked_clients: without that field this never ends).
func waitBlocked(t *testing.T, s *testserver.Server, n int) {
	t.Helper()
	c := s.Client(t)
	require.Eventually(t, func() bool {
		info, err := c.Info(context.Background(), "clients").Result()
		require.NoError(t, err)
		var blocked int
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "blocked_clients:"); ok {
				blocked, err = strconv.Atoi(v)
				require.NoError(t, err)
			}
		}
		return blocked >= n
	}, 10*time.Second, time.Millisecond)
}

// TestListBlockingAcrossInstances: a push through one instance reaches a
// client blocked on another (same store) through the poller.
func TestListBlockingAcrossInstances(t *testing.T) {
	for _, b := range testserver.Instances(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			s1 := b.Start(t, testserver.WithConfig(func(cfg *commands.Config) { cfg.BlockingPoll = 50 * time.Millisecond }))
			s2 := b.Start(t)
			c1, c2 := s1.Client(t), s2.Client(t)
			got := make(chan []string, 1)
			go func() {
				v, _ := c1.BRPop(ctx, time.Minute, "q1", "q2").Result()
				got <- v
			}()
			waitBlocked(t, s1, 1)
			// Polling: the poller reads the keys while the client waits.
			require.Eventually(t, func() bool { return b.Stats.Requests(commands.BlockingPollLabel) > 0 }, time.Minute, time.Millisecond)
			require.NoError(t, c2.LPush(ctx, "q2", "hello").Err())
			select {
			case v := <-got:
				require.Equal(t, []string{"q2", "hello"}, v)
			case <-time.After(time.Minute):
				t.Fatal("the blocked client was not served")
			}
		})
	}
}

// TestListBlockingOrder: clients blocked on one key are served in arrival
// order, each exactly one element.
func TestListBlockingOrder(t *testing.T) {
	listBackends(t, func(t *testing.T, _ testserver.Backend, s *testserver.Server, c *redis.Client) {
		ctx := context.Background()
		const n = 5
		results := make([]chan []string, n)
		for i := 0; i < n; i++ {
			results[i] = make(chan []string, 1)
			cl := s.Client(t)
			go func(i int) {
				v, _ := cl.BLPop(ctx, 10*time.Second, "q").Result()
				results[i] <- v
			}(i)
			waitBlocked(t, s, i+1)
		}
		for i := 0; i < n; i++ {
			require.NoError(t, c.RPush(ctx, "q", fmt.Sprint(i)).Err())
			require.Equal(t, []string{"q", fmt.Sprint(i)}, <-results[i])
		}
	})
}

// TestListBlockingWrongTypeTarget: of two clients blocked in BRPOPLPUSH
// on one source, the first one's target holds a string: a push answers it
// WRONGTYPE and hands the element to the second, as Redis does; whether
// the push comes through the waiters' instance (which wakes them at once)
// or through another one (which the poller notices).
func TestListBlockingWrongTypeTarget(t *testing.T) {
	listBackends(t, func(t *testing.T, _ testserver.Backend, s *testserver.Server, c *redis.Client) {
		for _, via := range []string{"same instance", "another instance"} {
			t.Run(via, func(t *testing.T) {
				ctx := context.Background()
				require.NoError(t, c.Del(ctx, "src", "dst").Err())
				require.NoError(t, c.Set(ctx, "dst0", "x", 0).Err())
				type result struct {
					v   string
					err error
				}
				results := make([]chan result, 2)
				for i, dst := range []string{"dst0", "dst"} {
					results[i] = make(chan result, 1)
					cl := s.Client(t)
					go func() {
						v, err := cl.BRPopLPush(ctx, "src", dst, 0).Result()
						results[i] <- result{v, err}
					}()
					waitBlocked(t, s, i+1)
				}
				pusher := c
				if via == "another instance" {
					pusher = testserver.Start(t, s.Srv.Store.Data()).Client(t)
				}
				require.NoError(t, pusher.LPush(ctx, "src", "foo").Err())
				r := <-results[0]
				require.EqualError(t, r.err, "WRONGTYPE Operation against a key holding the wrong kind of value")
				r = <-results[1]
				require.NoError(t, r.err)
				require.Equal(t, "foo", r.v)
				require.Equal(t, []string{"foo"}, c.LRange(ctx, "dst", 0, -1).Val())
				require.EqualValues(t, 0, c.Exists(ctx, "src").Val())
			})
		}
	})
}

// TestListBlockingSharesPolls: clients blocked on one key share the
// poller's reads: however many wait, the key is read at most once per poll
// interval (which never drops below 8 ms: 10 ms less 20% jitter), and the
// poller stops when nobody waits.
func TestListBlockingSharesPolls(t *testing.T) {
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			s := b.Start(t, testserver.WithConfig(func(cfg *commands.Config) { cfg.BlockingPoll = 20 * time.Millisecond }))
			const waiters = 20
			done := make(chan error, waiters)
			for range waiters {
				cl := s.Client(t)
				go func() { done <- cl.BLPop(ctx, 0, "q").Err() }()
			}
			waitBlocked(t, s, waiters)
			polls := func() int64 { return b.Stats.Requests(commands.BlockingPollLabel) }
			before, start := polls(), time.Now()
			time.Sleep(500 * time.Millisecond)
			n, elapsed := polls()-before, time.Since(start)
			// One poller per client would read it ~20 times as often.
			require.LessOrEqual(t, n, int64(elapsed/(8*time.Millisecond))+2, "%d reads in %s", n, elapsed)
			// A busy machine may not have run the poller yet: only
			// that it reads at all is asked of it, not when.
			require.Eventually(t, func() bool { return polls() > before }, time.Minute, time.Millisecond,
				"the poller reads the key while clients wait")

			for i := range waiters {
				require.NoError(t, s.Client(t).RPush(ctx, "q", i).Err())
			}
			for range waiters {
				require.NoError(t, <-done)
			}
			// Nobody waits: the reads stop. A read already in flight may
			// land late on a loaded machine, so what is asked is a quiet
			// spell of five poll intervals, which a poller still running
			// never leaves.
			require.Eventually(t, func() bool {
				idle := polls()
				time.Sleep(100 * time.Millisecond)
				return polls() == idle
			}, time.Minute, time.Millisecond, "nobody waits: no reads")
		})
	}
}

// TestListQueueExactlyOnce: 20 producers and 20 consumers on one list over
// three instances sharing one store deliver every element exactly once,
// with RPOP polling and with BLPOP.
func TestListQueueExactlyOnce(t *testing.T) {
	for _, b := range testserver.Stores(t) {
		for _, mode := range []string{"rpop", "blpop"} {
			t.Run(b.Name+"/"+mode, func(t *testing.T) {
				ctx := context.Background()
				var servers []*testserver.Server
				for i := 0; i < 3; i++ {
					servers = append(servers, b.Start(t, testserver.WithConfig(func(cfg *commands.Config) { cfg.BlockingPoll = 20 * time.Millisecond })))
				}
				const producers, consumers, per = 20, 20, 25
				total := producers * per
				var mu sync.Mutex
				got := map[string]int{}
				var wg sync.WaitGroup
				done := make(chan struct{})
				for i := 0; i < consumers; i++ {
					cl := servers[i%3].Client(t)
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							select {
							case <-done:
								return
							default:
							}
							var v string
							if mode == "rpop" {
								r, err := cl.RPop(ctx, "q").Result()
								if err == redis.Nil {
									time.Sleep(10 * time.Millisecond)
									continue
								}
								require.NoError(t, err)
								v = r
							} else {
								r, err := cl.Do(ctx, "blpop", "q", 0.1).StringSlice()
								if err == redis.Nil {
									continue
								}
								require.NoError(t, err)
								v = r[1]
							}
							mu.Lock()
							got[v]++
							n := len(got)
							mu.Unlock()
							if n == total {
								return
							}
						}
					}()
				}
				var pwg sync.WaitGroup
				for p := 0; p < producers; p++ {
					cl := servers[p%3].Client(t)
					pwg.Add(1)
					go func(p int) {
						defer pwg.Done()
						for i := 0; i < per; i++ {
							require.NoError(t, cl.LPush(ctx, "q", fmt.Sprintf("%d-%d", p, i)).Err())
						}
					}(p)
				}
				pwg.Wait()
				require.Eventually(t, func() bool {
					mu.Lock()
					defer mu.Unlock()
					return len(got) == total
				}, 60*time.Second, 10*time.Millisecond)
				close(done)
				wg.Wait()
				for v, n := range got {
					require.Equal(t, 1, n, "element %s delivered %d times", v, n)
				}
				require.EqualValues(t, 0, servers[0].Client(t).LLen(ctx, "q").Val())
			})
		}
	}
}

// TestListMoveNeverLosesElements: concurrent LMOVEs between two lists
// (and rotations of one) over three instances keep every element exactly
// once.
func TestListMoveNeverLosesElements(t *testing.T) {
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			var cls []*redis.Client
			for i := 0; i < 3; i++ {
				cls = append(cls, b.Start(t).Client(t))
			}
			var vals []any
			for i := 0; i < 150; i++ {
				vals = append(vals, fmt.Sprint(i))
			}
			require.NoError(t, cls[0].RPush(ctx, "a", vals...).Err())
			var wg sync.WaitGroup
			for w := 0; w < 6; w++ {
				cl := cls[w%3]
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for i := 0; i < 15; i++ {
						src, dst := "a", "b"
						if (w+i)%2 == 1 {
							src, dst = "b", "a"
						}
						if i%5 == 0 {
							dst = src
						}
						err := cl.LMove(ctx, src, dst, "right", "left").Err()
						if err != nil && err != redis.Nil {
							require.NoError(t, err)
						}
					}
				}(w)
			}
			wg.Wait()
			all := append(cls[0].LRange(ctx, "a", 0, -1).Val(), cls[0].LRange(ctx, "b", 0, -1).Val()...)
			sort.Slice(all, func(i, j int) bool { return atoi(all[i]) < atoi(all[j]) })
			require.Len(t, all, 150)
			for i, v := range all {
				require.Equal(t, fmt.Sprint(i), v)
			}
		})
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// TestListSize builds a 100,000-element list on memory (20,000 on
// DynamoDB Local) and reads it back in ranges.
func TestListSize(t *testing.T) {
	if testing.Short() {
		t.Skip("size test")
	}
	listBackends(t, func(t *testing.T, b testserver.Backend, _ *testserver.Server, c *redis.Client) {
		ctx := context.Background()
		size := 100_000
		if b.Name == "dynamodb" {
			size = 20_000
		}
		const batch = 5000
		for i := 0; i < size; i += batch {
			vals := make([]any, batch)
			for j := range vals {
				vals[j] = strconv.Itoa(i + j)
			}
			require.EqualValues(t, i+batch, c.RPush(ctx, "big", vals...).Val())
		}
		require.EqualValues(t, size, c.LLen(ctx, "big").Val())
		b.Stats.Reset()
		got := c.LRange(ctx, "big", 0, 99).Val()
		require.Len(t, got, 100)
		require.Equal(t, "99", got[99])
		require.EqualValues(t, 2, b.Stats.Requests("lrange"))
		require.Equal(t, strconv.Itoa(size/2), c.LIndex(ctx, "big", int64(size/2)).Val())
		require.Equal(t, []string{"0", "1"}, c.LPopCount(ctx, "big", 2).Val())
		require.Equal(t, strconv.Itoa(size-1), c.RPop(ctx, "big").Val())
		require.EqualValues(t, size-3, c.LLen(ctx, "big").Val())
		b.Stats.Reset()
		require.EqualValues(t, 1, c.Del(ctx, "big").Val())
		require.LessOrEqual(t, b.Stats.Requests("del"), int64(2))
	})
}

// TestListBlockingDisconnect: a blocked client that hangs up stops waiting
// and consumes nothing; the next blocked client gets the element.
func TestListBlockingDisconnect(t *testing.T) {
	listBackends(t, func(t *testing.T, _ testserver.Backend, s *testserver.Server, c *redis.Client) {
		ctx := context.Background()
		for _, cmd := range []string{
			"*3\r\n$5\r\nBLPOP\r\n$1\r\nq\r\n$1\r\n0\r\n",
			"*6\r\n$6\r\nBLMOVE\r\n$1\r\nq\r\n$1\r\nd\r\n$4\r\nLEFT\r\n$4\r\nLEFT\r\n$1\r\n0\r\n",
			"*5\r\n$6\r\nBLMPOP\r\n$1\r\n0\r\n$1\r\n1\r\n$1\r\nq\r\n$4\r\nLEFT\r\n",
		} {
			conn := s.Dial(t)
			_, err := conn.Write([]byte(cmd))
			require.NoError(t, err)
			waitBlocked(t, s, 1)
			require.NoError(t, conn.Close())
			require.Eventually(t, func() bool { return s.Srv.BlockedClients() == 0 }, 5*time.Second, time.Millisecond)
		}
		// A live waiter queued behind nobody gets the element; the
		// departed ones took nothing.
		got := make(chan []string, 1)
		go func() {
			v, _ := s.Client(t).Do(ctx, "blpop", "q", 10).StringSlice()
			got <- v
		}()
		waitBlocked(t, s, 1)
		require.NoError(t, c.RPush(ctx, "q", "a", "b").Err())
		require.Equal(t, []string{"q", "a"}, <-got)
		require.Equal(t, []string{"b"}, c.LRange(ctx, "q", 0, -1).Val())
		require.EqualValues(t, 0, c.Exists(ctx, "d").Val())
	})
}

// TestListFaultsNeverHalfApply: with requests failing at random (before
// they reach the store, as if redamo died before the step, or after, as if
// it died before hearing the answer), LMOVE never loses or duplicates an
// element and a push bigger than one transaction is all or nothing.
func TestListFaultsNeverHalfApply(t *testing.T) {
	ctx := context.Background()
	for _, after := range []bool{false, true} {
		t.Run(fmt.Sprintf("after=%v", after), func(t *testing.T) {
			fs := faults.New(memory.New(memory.Options{}), 7)
			s := testserver.Start(t, fs)
			c := s.Client(t)
			var vals []any
			for i := 0; i < 300; i++ {
				vals = append(vals, strconv.Itoa(i))
			}
			require.NoError(t, c.RPush(ctx, "a", vals[:150]...).Err())
			require.NoError(t, c.RPush(ctx, "b", "x").Err())
			if after {
				fs.FailRateAfter(faults.Any, 0.2, dynastore.ErrUnavailable)
			} else {
				fs.FailRate(faults.Any, 0.2, dynastore.ErrUnavailable)
			}
			failed := 0
			for i := 0; i < 200; i++ {
				src, dst := "a", "b"
				if i%3 == 1 {
					src, dst = "b", "a"
				}
				if err := c.LMove(ctx, src, dst, "left", "right").Err(); err != nil && err != redis.Nil {
					failed++
				}
			}
			for i := 0; i < 20; i++ {
				fs.Reset()
				n, err := c.LLen(ctx, "big").Result()
				require.NoError(t, err)
				if after {
					fs.FailRateAfter(faults.Any, 0.1, dynastore.ErrUnavailable)
				} else {
					fs.FailRate(faults.Any, 0.1, dynastore.ErrUnavailable)
				}
				if err := c.RPush(ctx, "big", vals...).Err(); err != nil {
					failed++
				}
				fs.Reset()
				got, err := c.LLen(ctx, "big").Result()
				require.NoError(t, err)
				require.Contains(t, []int64{n, n + 300}, got, "a push was seen in part")
			}
			fs.Reset()
			require.Positive(t, failed, "no fault was injected")
			all := append(c.LRange(ctx, "a", 0, -1).Val(), c.LRange(ctx, "b", 0, -1).Val()...)
			sort.Strings(all)
			want := []string{"x"}
			for i := 0; i < 150; i++ {
				want = append(want, strconv.Itoa(i))
			}
			sort.Strings(want)
			require.Equal(t, want, all)
		})
	}
}

// TestListBigChanges runs changes of a large list too big for one
// transaction (the list layout's planSpan: pushes written around the
// range, pops and trims cleaned up after), alone and inside MULTI (a new
// generation), and checks the replies, the request counts, and that the
// generation's partition holds exactly the list's elements afterwards.
func TestListBigChanges(t *testing.T) {
	listBackends(t, func(t *testing.T, b testserver.Backend, s *testserver.Server, c *redis.Client) {
		ctx := context.Background()
		elems := func(prefix string, from, to int) []any {
			var out []any
			for i := from; i < to; i++ {
				out = append(out, fmt.Sprintf("%s%04d", prefix, i))
			}
			return out
		}
		// members counts the items in the list's generation partition.
		members := func() int {
			key, err := b.Store.Get(ctx, dynastore.Key{PK: append([]byte{'k', 0}, "l"...), SK: []byte{0}})
			require.NoError(t, err)
			gen, _ := key.Get("g").(dynastore.B)
			require.NotEmpty(t, gen, "large layout")
			n := 0
			q := dynastore.Query{PK: append([]byte{'m'}, gen...)}
			for {
				page, err := b.Store.Query(ctx, q)
				require.NoError(t, err)
				n += len(page.Items)
				if page.Next == nil {
					return n
				}
				q.After = page.Next
			}
		}
		require.EqualValues(t, 1000, c.RPush(ctx, "l", elems("e", 0, 1000)...).Val())
		require.Equal(t, 1000, members())

		b.Stats.Reset()
		require.Equal(t, toStrings(elems("e", 0, 150)), c.LPopCount(ctx, "l", 150).Val())
		// The key update, then the 150 deletes (99 per transaction),
		// after a read of the popped elements.
		t.Logf("LPOP 150 of 1000: %d requests", b.Stats.Requests("lpop"))
		require.LessOrEqual(t, b.Stats.Requests("lpop"), int64(5))
		require.Equal(t, 850, members())
		popped := c.RPopCount(ctx, "l", 120).Val()
		require.Len(t, popped, 120)
		require.Equal(t, "e0999", popped[0])
		require.Equal(t, 730, members())

		// Both ends at once: 110 positions go on each side.
		require.Equal(t, "OK", c.LTrim(ctx, "l", 110, -111).Val())
		require.EqualValues(t, 510, c.LLen(ctx, "l").Val())
		require.Equal(t, 510, members())
		require.Equal(t, []string{"e0260", "e0261"}, c.LRange(ctx, "l", 0, 1).Val())
		require.Equal(t, []string{"e0768", "e0769"}, c.LRange(ctx, "l", -2, -1).Val())

		b.Stats.Reset()
		require.EqualValues(t, 810, c.LPush(ctx, "l", elems("h", 0, 300)...).Val())
		// Four transactions of 99 new elements before the key update.
		t.Logf("LPUSH 300 onto 510: %d requests", b.Stats.Requests("lpush"))
		require.LessOrEqual(t, b.Stats.Requests("lpush"), int64(6))
		require.Equal(t, 810, members())
		require.Equal(t, "h0299", c.LIndex(ctx, "l", 0).Val())

		// Inside MULTI the change is one transaction: a new generation
		// holding the result, with no leftover.
		cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.RPush(ctx, "l", elems("t", 0, 200)...)
			p.LPopCount(ctx, "l", 150)
			return nil
		})
		require.NoError(t, err)
		require.EqualValues(t, 1010, cmds[0].(*redis.IntCmd).Val())
		require.Len(t, cmds[1].(*redis.StringSliceCmd).Val(), 150)
		require.EqualValues(t, 860, c.LLen(ctx, "l").Val())
		require.Equal(t, 860, members())
		all := c.LRange(ctx, "l", 0, -1).Val()
		require.Len(t, all, 860)
		require.Equal(t, "h0149", all[0])
		require.Equal(t, "t0199", all[859])
	})
}

func toStrings(vs []any) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.(string)
	}
	return out
}
