package scripting_test

// Server tests of Lua scripting for what the compat case files
// (compat/testdata/scripting.txt) cannot express: several instances on one
// store, concurrency, the time limit, injected faults and request counts.

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/internal/testserver"
	"github.com/redamo/redamo/scripting"
)

// incrScript is a read-modify-write that only a serializable run keeps
// exact under concurrency.
const incrScript = `local v = tonumber(redis.call('GET', KEYS[1]) or '0')
redis.call('SET', KEYS[1], v + 1)
return v + 1`

// TestScriptAtomicAcrossInstances runs a read-modify-write script from
// clients of two instances on one store: no increment is lost, and a
// script loaded through one instance runs by SHA1 through the other.
func TestScriptAtomicAcrossInstances(t *testing.T) {
	ctx := context.Background()
	for _, b := range testserver.Instances(t) {
		t.Run(b.Name, func(t *testing.T) {
			a, other := b.Start(t).Client(t), b.Start(t).Client(t)
			sha, err := a.ScriptLoad(ctx, incrScript).Result()
			require.NoError(t, err)
			const workers, each = 6, 15
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c := a
					if w%2 == 1 {
						c = other
					}
					for range each {
						if err := c.EvalSha(ctx, sha, []string{"n"}).Err(); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			require.Equal(t, strconv.Itoa(workers*each), a.Get(ctx, "n").Val())
		})
	}
}

// TestScriptTimeLimit: a script running past busy-reply-threshold is
// stopped, with nothing it wrote kept; the connection goes on.
func TestScriptTimeLimit(t *testing.T) {
	ctx := context.Background()
	c := testserver.Start(t, memory.New(memory.Options{})).Client(t)
	require.NoError(t, c.ConfigSet(ctx, "busy-reply-threshold", "50").Err())
	require.Equal(t, map[string]string{"busy-reply-threshold": "50"}, c.ConfigGet(ctx, "busy-reply-threshold").Val())
	err := c.Eval(ctx, "redis.call('SET', KEYS[1], 'v') while true do end", []string{"k"}).Err()
	require.EqualError(t, err, fmt.Sprintf(scripting.MsgScriptTimeout, 50))
	require.Equal(t, redis.Nil, c.Get(ctx, "k").Err(), "a stopped script writes nothing")
	require.Equal(t, "PONG", c.Ping(ctx).Val())
}

// TestScriptFaults: a store failure in a script's read or commit ends it
// with the store's error, and nothing is written.
func TestScriptFaults(t *testing.T) {
	ctx := context.Background()
	for _, op := range []string{dynastore.OpBatchGetItem, dynastore.OpTransactWriteItems} {
		t.Run(op, func(t *testing.T) {
			mem := memory.New(memory.Options{})
			c := testserver.Start(t, mem).Client(t)
			require.NoError(t, c.Set(ctx, "a", "1", 0).Err())
			mem.FailNext(op, fmt.Errorf("injected: %w", dynastore.ErrThrottled))
			err := c.Eval(ctx, "redis.call('INCR', KEYS[1]) redis.call('SET', KEYS[2], 'x') return 1", []string{"a", "b"}).Err()
			require.EqualError(t, err, commands.MsgTryAgain)
			require.Equal(t, "1", c.Get(ctx, "a").Val())
			require.Equal(t, redis.Nil, c.Get(ctx, "b").Err())
		})
	}
}

// TestScriptRequests counts the DynamoDB requests of typical scripts (of
// a script this process has seen before; the first run also stores it):
// Redlock's release and extend are one conditional request; other scripts
// read their keys in one request (none for blind writes) and commit once.
func TestScriptRequests(t *testing.T) {
	ctx := context.Background()
	stats := dynastore.NewStats()
	srv := testserver.Start(t, memory.New(memory.Options{Observer: stats}), testserver.WithStats(stats))
	c := srv.Client(t)
	const release = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`
	const extend = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end`
	for _, tc := range []struct {
		name   string
		script string
		keys   []string
		args   []any
		want   map[string]int64
	}{
		// Compare-and-act scripts are one conditional request (scriptfast.go).
		{"extend", extend, []string{"lock"}, []any{"tok", 30000}, map[string]int64{dynastore.OpUpdateItem: 1}},
		{"release", release, []string{"lock"}, []any{"tok"}, map[string]int64{dynastore.OpDeleteItem: 1}},
		{"release of another's lock", release, []string{"lock"}, []any{"other"}, map[string]int64{dynastore.OpDeleteItem: 1}},
		{"release of a missing lock", release, []string{"nolock"}, []any{"tok"}, map[string]int64{dynastore.OpDeleteItem: 1}},
		// The general path: read, then write conditioned on what was read.
		{"compare and set", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("set",KEYS[1],ARGV[2]) else return 0 end`, []string{"lock"}, []any{"tok", "new"}, map[string]int64{dynastore.OpGetItem: 1, dynastore.OpPutItem: 1}},
		{"two keys", "redis.call('INCR', KEYS[1]) return redis.call('INCR', KEYS[2])", []string{"x", "y"}, nil, map[string]int64{dynastore.OpBatchGetItem: 1, dynastore.OpTransactWriteItems: 1}},
		// Blind writes read nothing.
		{"two blind writes", "redis.call('SET', KEYS[1], ARGV[1]) return redis.call('SET', KEYS[2], ARGV[1])", []string{"x", "y"}, []any{"v"}, map[string]int64{dynastore.OpTransactWriteItems: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, c.Set(ctx, "lock", "tok", time.Minute).Err())
			// The first EVAL of a script also stores its body (once per
			// process): count a later one.
			require.NoError(t, c.ScriptLoad(ctx, tc.script).Err())
			before := stats.Snapshot()
			require.NoError(t, c.Eval(ctx, tc.script, tc.keys, tc.args...).Err())
			require.Equal(t, tc.want, testserver.RequestsSince(before, stats.Snapshot(), "eval"))
		})
	}
}

// TestScriptFastPathFallsBack: what the one-request form of a
// compare-and-act script cannot decide, the script decides itself: a key
// of another type (GET fails), a value equal to the token but stored in
// another form (APPEND's chunks).
func TestScriptFastPathFallsBack(t *testing.T) {
	ctx := context.Background()
	const release = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			c := b.Start(t).Client(t)
			require.NoError(t, c.LPush(ctx, "list", "x").Err())
			err := c.Eval(ctx, release, []string{"list"}, "tok").Err()
			require.ErrorContains(t, err, commands.MsgWrongType+" script: ")
			require.NoError(t, c.Set(ctx, "lock", "to", 0).Err())
			require.NoError(t, c.Append(ctx, "lock", "k").Err())
			require.Equal(t, int64(1), c.Eval(ctx, release, []string{"lock"}, "tok").Val())
			require.Equal(t, int64(0), c.Exists(ctx, "lock").Val())
		})
	}
}

// TestFunctionsAcrossInstances: a library loaded through one instance is
// called through another (the libraries live in the table), and a
// function's read-modify-write is atomic as a script's.
func TestFunctionsAcrossInstances(t *testing.T) {
	ctx := context.Background()
	const lib = "#!lua name=counters\n" +
		"redis.register_function('incr_by_one', function(keys, args)\n" +
		"  local v = tonumber(redis.call('GET', keys[1]) or '0')\n" +
		"  redis.call('SET', keys[1], v + 1)\n" +
		"  return v + 1\n" +
		"end)\n" +
		"redis.register_function{function_name='peek', flags={'no-writes'}, callback=function(keys) return redis.call('GET', keys[1]) end}"
	for _, b := range testserver.Instances(t) {
		t.Run(b.Name, func(t *testing.T) {
			a, other := b.Start(t).Client(t), b.Start(t).Client(t)
			require.Equal(t, "counters", a.FunctionLoad(ctx, lib).Val())
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c := a
					if w%2 == 1 {
						c = other
					}
					for range 10 {
						if err := c.FCall(ctx, "incr_by_one", []string{"n"}).Err(); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			require.Equal(t, "40", other.FCallRO(ctx, "peek", []string{"n"}).Val())
			require.NoError(t, a.FunctionDelete(ctx, "counters").Err())
			fresh := b.Start(t).Client(t)
			require.EqualError(t, fresh.FCall(ctx, "incr_by_one", []string{"n"}).Err(), scripting.MsgFunctionNotFound)
		})
	}
}

// TestRedissonRenewal: Redisson's watchdog renewal of an RLock (a hash
// field per holder) is one conditional UpdateItem on an inline hash, and
// answers as the script would in every other case, which runs the script.
func TestRedissonRenewal(t *testing.T) {
	ctx := context.Background()
	const renew = "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('pexpire', KEYS[1], ARGV[1]); return 1; end; return 0;"
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			c := b.Start(t).Client(t)
			require.NoError(t, c.HSet(ctx, "rlock", "uuid:1", 1).Err())
			sha, err := c.ScriptLoad(ctx, renew).Result()
			require.NoError(t, err)
			big := map[string]any{}
			for i := range 1000 { // past the inline thresholds
				big["f"+strconv.Itoa(i)] = i
			}
			require.NoError(t, c.HSet(ctx, "big", big).Err())
			require.NoError(t, c.Set(ctx, "str", "x", 0).Err())
			begun := time.Now()
			for _, tc := range []struct {
				key, field string
				want       any // reply, or an error substring
				reqs       map[string]int64
			}{
				{"rlock", "uuid:1", int64(1), map[string]int64{dynastore.OpUpdateItem: 1}},
				{"rlock", "uuid:2", int64(0), map[string]int64{dynastore.OpUpdateItem: 1}},
				{"nolock", "uuid:1", int64(0), map[string]int64{dynastore.OpUpdateItem: 1}},
				{"big", "f7", int64(1), nil},   // the script runs: the field is in a member item
				{"str", "f", "WRONGTYPE", nil}, // the script runs, and HEXISTS fails
			} {
				evalShaCheck(t, b, c, sha, []string{tc.key}, []any{30000, tc.field}, tc.want, 0, tc.reqs)
			}
			pttl, err := c.PTTL(ctx, "rlock").Result()
			require.NoError(t, err)
			requirePTTLSince(t, 30*time.Second, pttl, begun)
			require.Equal(t, "1", c.HGet(ctx, "rlock", "uuid:1").Val())
			pttl, err = c.PTTL(ctx, "big").Result()
			require.NoError(t, err)
			requirePTTLSince(t, 30*time.Second, pttl, begun)
		})
	}
}

// requirePTTLSince checks a PTTL read now of a key given ttl after begun:
// what has passed since begun bounds how much of ttl is gone, whatever the
// machine's speed (give or take the clock's millisecond).
func requirePTTLSince(t *testing.T, ttl, pttl time.Duration, begun time.Time) {
	t.Helper()
	require.LessOrEqual(t, pttl, ttl)
	require.GreaterOrEqual(t, pttl, ttl-time.Since(begun)-time.Millisecond)
}

// evalShaCheck runs the loaded script sha and checks its reply against
// want (nil: the null reply; a string: an error holding it; an int64:
// that integer, within delta) and, when reqs is set, its DynamoDB
// requests.
func evalShaCheck(t *testing.T, b testserver.Backend, c *redis.Client, sha string, keys []string, args []any, want any, delta float64, reqs map[string]int64) {
	t.Helper()
	ctx := context.Background()
	before := b.Stats.Snapshot()
	got, err := c.EvalSha(ctx, sha, keys, args...).Result()
	switch want := want.(type) {
	case nil:
		require.ErrorIs(t, err, redis.Nil, "%v %v", keys, args)
	case string:
		require.ErrorContains(t, err, want, "%v %v", keys, args)
	default:
		require.NoError(t, err, "%v %v", keys, args)
		require.InDelta(t, want, got, delta, "%v %v", keys, args)
	}
	if reqs != nil {
		require.Equal(t, reqs, testserver.RequestsSince(before, b.Stats.Snapshot(), "evalsha"), "%v %v", keys, args)
	}
}

// TestRedissonLock: Redisson's RLock acquire is one conditional UpdateItem
// when the lock is free or the holder's (nil, its count up), and when
// another holder has it (its PTTL); the script itself decides the rest.
func TestRedissonLock(t *testing.T) {
	ctx := context.Background()
	const lock = "if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);"
	one := map[string]int64{dynastore.OpUpdateItem: 1}
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			c := b.Start(t).Client(t)
			sha, err := c.ScriptLoad(ctx, lock).Result()
			require.NoError(t, err)
			require.NoError(t, c.Set(ctx, "str", "x", 0).Err())
			require.NoError(t, c.HSet(ctx, "stale", "old", 1).Err())
			require.NoError(t, c.PExpire(ctx, "stale", 20*time.Millisecond).Err())
			time.Sleep(40 * time.Millisecond)
			for _, tc := range []struct {
				key, holder string
				want        any // nil, a PTTL near it (int64), or an error substring
				reqs        map[string]int64
			}{
				{"rlock", "a", nil, one},
				{"rlock", "a", nil, one},          // reentrant: the count goes up
				{"rlock", "b", int64(30000), one}, // held: its PTTL
				{"stale", "b", nil, nil},          // expired, still in the table: the script
				{"str", "a", "WRONGTYPE", nil},    // the script, and EXISTS/HEXISTS fail
			} {
				evalShaCheck(t, b, c, sha, []string{tc.key}, []any{30000, tc.holder}, tc.want, 2000, tc.reqs)
			}
			require.Equal(t, map[string]string{"a": "2"}, c.HGetAll(ctx, "rlock").Val())
			require.Equal(t, map[string]string{"b": "1"}, c.HGetAll(ctx, "stale").Val())
			pttl, err := c.PTTL(ctx, "rlock").Result()
			require.NoError(t, err)
			require.InDelta(t, 30*time.Second, pttl, float64(2*time.Second))
			require.Equal(t, "hash", c.Type(ctx, "rlock").Val())
			require.Equal(t, "listpack", c.ObjectEncoding(ctx, "rlock").Val())
		})
	}
}

// TestRedissonUnlock: Redisson's RLock release is one conditional
// DeleteItem when the holder's count comes down to zero, and when the
// holder has no field (nil); a reentrant holder's release takes two.
func TestRedissonUnlock(t *testing.T) {
	ctx := context.Background()
	const unlock = "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; else redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], ARGV[1]); return 1; end; return nil;"
	del := map[string]int64{dynastore.OpDeleteItem: 1}
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			c := b.Start(t).Client(t)
			sha, err := c.ScriptLoad(ctx, unlock).Result()
			require.NoError(t, err)
			require.NoError(t, c.HSet(ctx, "rlock", "a", 2).Err())
			require.NoError(t, c.Set(ctx, "str", "x", 0).Err())
			for _, tc := range []struct {
				key, holder string
				want        any // nil, an int64 reply, or an error substring
				reqs        map[string]int64
			}{
				{"rlock", "b", nil, del}, // not the holder
				{"rlock", "a", int64(0), map[string]int64{dynastore.OpDeleteItem: 1, dynastore.OpUpdateItem: 1}}, // reentrant: 2 -> 1
				{"rlock", "a", int64(1), del}, // 1 -> deleted
				{"rlock", "a", nil, del},      // gone
				{"str", "a", "WRONGTYPE", nil},
			} {
				begun := time.Now()
				evalShaCheck(t, b, c, sha, []string{tc.key, "channel"}, []any{0, 30000, tc.holder}, tc.want, 0, tc.reqs)
				if tc.want == int64(0) {
					require.Equal(t, "1", c.HGet(ctx, "rlock", "a").Val())
					pttl, err := c.PTTL(ctx, "rlock").Result()
					require.NoError(t, err)
					requirePTTLSince(t, 30*time.Second, pttl, begun)
				}
			}
			require.Zero(t, c.Exists(ctx, "rlock").Val())
		})
	}
}

// TestScriptKill: SCRIPT KILL stops a script running in the instance (it
// has written nothing anyone sees), FUNCTION KILL a function; each says
// BUSY while only the other kind runs, and NOTBUSY when nothing does.
func TestScriptKill(t *testing.T) {
	ctx := context.Background()
	srv := testserver.Start(t, memory.New(memory.Options{}))
	c := srv.Client(t)
	scriptKill, functionKill := []any{"SCRIPT", "KILL"}, []any{"FUNCTION", "KILL"}
	const notBusy = "NOTBUSY No scripts in execution right now."
	require.EqualError(t, c.Do(ctx, scriptKill...).Err(), notBusy)
	require.EqualError(t, c.Do(ctx, functionKill...).Err(), notBusy)
	require.NoError(t, c.FunctionLoad(ctx, "#!lua name=spin\nredis.register_function('spin', function() redis.call('SET', 'f', 'x') while true do end end)").Err())

	for _, tc := range []struct {
		name            string
		run             func(*redis.Client) error
		kill, wrongKill []any
		wrongMsg        string
	}{
		{"script", func(r *redis.Client) error {
			return r.Eval(ctx, "redis.call('SET', 's', 'x') while true do end", nil).Err()
		},
			scriptKill, functionKill, "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."},
		{"function", func(r *redis.Client) error { return r.FCall(ctx, "spin", nil).Err() },
			functionKill, scriptKill, "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runner := srv.Client(t)
			done := make(chan error, 1)
			go func() { done <- tc.run(runner) }()
			require.Eventually(t, func() bool {
				err := c.Do(ctx, tc.wrongKill...).Err()
				return err != nil && err.Error() == tc.wrongMsg
			}, 5*time.Second, 5*time.Millisecond, "the other KILL says BUSY while it runs")
			require.NoError(t, c.Do(ctx, tc.kill...).Err())
			require.ErrorContains(t, <-done, "Script killed by user with SCRIPT KILL...")
			require.Zero(t, c.Exists(ctx, "s", "f").Val(), "a killed script writes nothing")
			require.EqualError(t, c.Do(ctx, tc.kill...).Err(), notBusy)
		})
	}
}

// rawCommand sends args as one RESP command on conn and returns the
// reply's bytes.
func rawCommand(t *testing.T, conn net.Conn, r *bufio.Reader, args ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	_, err := conn.Write([]byte(b.String()))
	require.NoError(t, err)
	reply, err := testserver.ReadReply(r)
	require.NoError(t, err)
	return string(reply)
}

// TestScriptReplyNesting: a script's value nested past Lua's stack limit
// (or holding itself) is replied as redis-server 7.0.15 replies it: each
// value reached past the limit is an error in its place, and the
// connection goes on. (The replies are too deep for the compat case
// files' reports.)
func TestScriptReplyNesting(t *testing.T) {
	const deep = `local t = {} local c = t for i = 1, tonumber(ARGV[1]) do local x = {} c[1] = x c = x end return t`
	stackLimit := "-ERR reached lua stack limit\r\n"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"deep-below-limit", []string{"EVAL", deep, "0", "7994"}, strings.Repeat("*1\r\n", 7994) + "*0\r\n"},
		{"deep-at-limit", []string{"EVAL", deep, "0", "7995"}, strings.Repeat("*1\r\n", 7995) + stackLimit},
		{"deep-past-limit", []string{"EVAL", deep, "0", "10000"}, strings.Repeat("*1\r\n", 7995) + stackLimit},
		{"cycle", []string{"EVAL", "local a = {}; local b = {a}; a[1] = b; return a", "0"}, strings.Repeat("*1\r\n", 7995) + stackLimit},
		{"cycle-then-more", []string{"EVAL", "local a = {}; a[1] = a; a[2] = 5; return a", "0"},
			strings.Repeat("*2\r\n", 7995) + stackLimit + stackLimit + strings.Repeat(":5\r\n", 7994)},
		{"map-cycle", []string{"EVAL", "local a = {}; a.map = {x = a}; return a", "0"},
			strings.Repeat("*2\r\n$1\r\nx\r\n", 2664) + "*2\r\n" + stackLimit + stackLimit},
		{"set-cycle", []string{"EVAL", "local a = {}; a.set = {[a] = true}; return a", "0"}, strings.Repeat("*1\r\n", 2665) + stackLimit},
		{"function-cycle", []string{"FCALL", "cycle", "0"}, strings.Repeat("*1\r\n", 7995) + stackLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testserver.Start(t, memory.New(memory.Options{}))
			conn := s.Dial(t)
			r := bufio.NewReader(conn)
			require.Equal(t, "$3\r\nlib\r\n", rawCommand(t, conn, r, "FUNCTION", "LOAD",
				"#!lua name=lib\nredis.register_function('cycle', function() local a = {} a[1] = a return a end)"))
			require.Equal(t, tc.want, rawCommand(t, conn, r, tc.args...))
			require.Equal(t, "+PONG\r\n", rawCommand(t, conn, r, "PING"))
		})
	}
}

// TestScriptStackOverflow: recursion that fills gopher-lua's stack of
// values (its registry) before its call frames ends with Lua's stack
// overflow where it happened, as one that runs out of frames does, and
// pcall catches it. (Redis's own stack grows to gigabytes on these: the
// compat case files do not run them.)
func TestScriptStackOverflow(t *testing.T) {
	ctx := context.Background()
	c := testserver.Start(t, memory.New(memory.Options{})).Client(t)
	const grow = `local function f(...) f(1, ...) end f(unpack({}, 1, 7000))`
	err := c.Eval(ctx, grow, nil).Err()
	require.Error(t, err)
	require.Regexp(t, `^ERR user_script:1: stack overflow script: [0-9a-f]{40}, on @user_script:1\.$`, err.Error())
	v, err := c.Eval(ctx, "local ok, e = pcall(function() "+grow+" end) return {tostring(ok), e}", nil).StringSlice()
	require.NoError(t, err)
	require.Equal(t, []string{"false", "user_script:1: stack overflow"}, v)
	require.Equal(t, "PONG", c.Ping(ctx).Val())
}

// TestScriptMemoryLimit: a script that would hold more than
// lua-memory-limit fails with Redis's reply to Lua's memory error (pcall
// catches it as Lua's "not enough memory"), the instance unharmed; one
// that makes more than the limit but drops it goes on.
func TestScriptMemoryLimit(t *testing.T) {
	ctx := context.Background()
	c := testserver.Start(t, memory.New(memory.Options{})).Client(t)
	// Only the memory limit may end these scripts: under -race on a busy
	// machine, the collections the limit runs before it fails can take
	// longer than the default time limit.
	require.NoError(t, c.ConfigSet(ctx, "busy-reply-threshold", "120000").Err())
	require.Equal(t, map[string]string{"lua-memory-limit": strconv.Itoa(commands.DefaultLuaMemoryLimit)}, c.ConfigGet(ctx, "lua-memory-limit").Val())
	require.NotContains(t, c.ConfigGet(ctx, "*").Val(), "lua-memory-limit", "redamo's own parameter answers to its name only")
	oom := `^ERR Error running script [0-9a-f]{40}, not enough memory$`
	for _, script := range []string{
		"return #string.rep('x', 2^31)",
		"local s = 'x' for i = 1, 40 do s = s .. s end return #s",
		"return #table.concat({string.rep('x', 2^27), string.rep('x', 2^27), string.rep('x', 2^27)})",
		"local t = {} local s = string.rep('x', 2^20) for i = 1, 1000 do t[i] = s .. i end return #t",
		"local s = string.rep('x', 2^20) return #s:gsub('x', s)",
		"local f = coroutine.wrap(function() local s = 'x' for i = 1, 40 do s = s .. s end end) f()",
		"local co = coroutine.create(function() local s = 'x' for i = 1, 40 do s = s .. s end end) local ok, e = coroutine.resume(co) error(e, 0)",
	} {
		err := c.Eval(ctx, script, nil).Err()
		require.Error(t, err, script)
		require.Regexp(t, oom, err.Error(), script)
	}
	v, err := c.Eval(ctx, "local ok, e = pcall(string.rep, 'x', 2^31) return {tostring(ok), e}", nil).StringSlice()
	require.NoError(t, err)
	require.Equal(t, []string{"false", "not enough memory"}, v)
	v, err = c.Eval(ctx, "local ok, e = pcall(function() local s = 'x' for i = 1, 40 do s = s .. s end end) return {tostring(ok), e}", nil).StringSlice()
	require.NoError(t, err)
	require.Equal(t, []string{"false", "not enough memory"}, v)

	require.NoError(t, c.ConfigSet(ctx, "lua-memory-limit", "4mb").Err())
	require.Equal(t, map[string]string{"lua-memory-limit": "4194304"}, c.ConfigGet(ctx, "lua-memory-limit").Val())
	err = c.Eval(ctx, "local t = {} for i = 1, 1e7 do t[i] = i end return #t", nil).Err()
	require.Error(t, err)
	require.Regexp(t, oom, err.Error())
	// 64 MB made, 1 MB at most held at once.
	n, err := c.Eval(ctx, "local n = 0 for i = 1, 64 do n = n + #string.rep('x', 2^20) end return n", nil).Int64()
	require.NoError(t, err)
	require.EqualValues(t, 64<<20, n)
	require.Equal(t, "PONG", c.Ping(ctx).Val())
}

// TestMayReplicateRefusedByReadOnlyScripts: a read-only script refuses a
// command its row flags MayReplicate, as it refuses a write.
func TestMayReplicateRefusedByReadOnlyScripts(t *testing.T) {
	h := newHarness(memory.New(memory.Options{}))
	const readOnly = "Write commands are not allowed from read-only scripts."
	r := h.do("EVAL_RO", "return redis.call('publish', 'ch', 'm')", "0")
	require.Equal(t, byte('-'), r.kind)
	require.Contains(t, r.str, readOnly)
	requireReply(t, h, `"x"`, "EVAL_RO", "return redis.call('echo', 'x')", "0")
	h.srv.Table.Lookup("echo").MayReplicate = true
	r = h.do("EVAL_RO", "return redis.call('echo', 'x')", "0")
	require.Equal(t, byte('-'), r.kind)
	require.Contains(t, r.str, readOnly)
}
