package compat

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/internal/testproc"
	"github.com/redamo/redamo/internal/testserver"
)

// clientTargets are where each client smoke test runs: a real Redis first
// (so a broken script shows as such, not as a redamo bug), then redamo on
// the memory store.
func clientTargets(t *testing.T) []*Target {
	t.Helper()
	ref, _ := redisServers(t)
	srv := testserver.Start(t, nil)
	return []*Target{redisTarget("redis", ref), redamoTarget(t, "memory", srv.Addr)}
}

// TestGoRedisClient drives redamo with go-redis v9 and its defaults: the
// HELLO 3 handshake (with CLIENT SETINFO), RESP3 replies, pipelines.
func TestGoRedisClient(t *testing.T) {
	for _, tg := range clientTargets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rdb := redis.NewClient(&redis.Options{Addr: tg.Addr, MaxRetries: -1})
			defer rdb.Close()
			require.NoError(t, rdb.FlushAll(ctx).Err())
			info, err := rdb.ClientInfo(ctx).Result()
			require.NoError(t, err)
			require.Equal(t, 3, info.Resp, "go-redis negotiated RESP3")

			// strings and counters
			require.NoError(t, rdb.Set(ctx, "s", "hello", 0).Err())
			require.Equal(t, "hello", rdb.Get(ctx, "s").Val())
			require.ErrorIs(t, rdb.Get(ctx, "missing").Err(), redis.Nil)
			require.Equal(t, int64(11), rdb.Append(ctx, "s", " world").Val())
			require.Equal(t, "world", rdb.GetRange(ctx, "s", -5, -1).Val())
			ok, err := rdb.SetNX(ctx, "lock", "me", 5*time.Second).Result()
			require.NoError(t, err)
			require.True(t, ok)
			ok, err = rdb.SetNX(ctx, "lock", "you", 5*time.Second).Result()
			require.NoError(t, err)
			require.False(t, ok)
			require.Equal(t, int64(42), rdb.IncrBy(ctx, "n", 42).Val())
			require.Equal(t, 10.6, rdb.IncrByFloat(ctx, "f", 10.6).Val())
			require.Equal(t, "10.6", rdb.Get(ctx, "f").Val())
			require.NoError(t, rdb.MSet(ctx, "a", "1", "b", "2").Err())
			require.Equal(t, []any{"1", "2", nil}, rdb.MGet(ctx, "a", "b", "nope").Val())
			require.Equal(t, "1", rdb.GetEx(ctx, "a", time.Minute).Val())
			require.Equal(t, "1", rdb.GetDel(ctx, "a").Val())
			bin := string([]byte{0, 0xff, '\r', '\n', 0x80})
			require.NoError(t, rdb.Set(ctx, "\x01\x00", bin, 0).Err())
			require.Equal(t, bin, rdb.Get(ctx, "\x01\x00").Val())

			// keys and expiry
			require.Equal(t, int64(2), rdb.Exists(ctx, "s", "n", "nope").Val())
			require.Equal(t, "string", rdb.Type(ctx, "s").Val())
			begun := time.Now()
			require.True(t, rdb.Expire(ctx, "s", 100*time.Second).Val())
			// What has passed since EXPIRE bounds the TTL, whatever the
			// machine's speed; TTL rounds to the second.
			ttl := rdb.TTL(ctx, "s").Val()
			require.LessOrEqual(t, ttl, 100*time.Second)
			require.GreaterOrEqual(t, ttl, 100*time.Second-time.Since(begun)-time.Second)
			require.True(t, rdb.Persist(ctx, "s").Val())
			require.Equal(t, time.Duration(-1), rdb.TTL(ctx, "s").Val())
			require.Equal(t, time.Duration(-2), rdb.PTTL(ctx, "nope").Val())
			require.NoError(t, rdb.Rename(ctx, "s", "s2").Err())
			require.Equal(t, int64(1), rdb.Copy(ctx, "s2", "s3", 0, false).Val())
			keys := rdb.Keys(ctx, "s[0-9]").Val()
			sort.Strings(keys)
			require.Equal(t, []string{"s2", "s3"}, keys)
			var scanned []string
			iter := rdb.Scan(ctx, 0, "*", 2).Iterator()
			for iter.Next(ctx) {
				scanned = append(scanned, iter.Val())
			}
			require.NoError(t, iter.Err())
			all := rdb.Keys(ctx, "*").Val()
			sort.Strings(all)
			sort.Strings(scanned)
			require.Equal(t, all, dedupe(scanned))
			require.Equal(t, int64(len(all)), rdb.DBSize(ctx).Val())

			// pipelines: replies in order, per-command errors kept
			cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, "p", "1", 0)
				p.Incr(ctx, "p")
				p.Get(ctx, "p")
				p.Incr(ctx, "s2")
				return nil
			})
			require.Error(t, err, "the INCR of a non-integer fails the pipeline")
			require.Len(t, cmds, 4)
			require.Equal(t, int64(2), cmds[1].(*redis.IntCmd).Val())
			require.Equal(t, "2", cmds[2].(*redis.StringCmd).Val())
			require.ErrorContains(t, cmds[3].Err(), "ERR value is not an integer or out of range")

			// collections and transactions, when supported
			if tg.Supports("hset") {
				require.Equal(t, int64(2), rdb.HSet(ctx, "h", "f1", "v1", "f2", "v2").Val())
				require.Equal(t, map[string]string{"f1": "v1", "f2": "v2"}, rdb.HGetAll(ctx, "h").Val())
				require.ErrorContains(t, rdb.HGet(ctx, "s2", "f").Err(), "WRONGTYPE")
			}
			if tg.Supports("sadd") {
				require.Equal(t, int64(2), rdb.SAdd(ctx, "set", "a", "b", "a").Val())
				m := rdb.SMembers(ctx, "set").Val()
				sort.Strings(m)
				require.Equal(t, []string{"a", "b"}, m)
			}
			if tg.Supports("rpush") {
				require.Equal(t, int64(2), rdb.RPush(ctx, "l", "a", "b").Val())
				require.Equal(t, []string{"a", "b"}, rdb.LRange(ctx, "l", 0, -1).Val())
			}
			if tg.Supports("multi") {
				cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Set(ctx, "m", "1", 0)
					p.Incr(ctx, "m")
					return nil
				})
				require.NoError(t, err)
				require.Equal(t, int64(2), cmds[1].(*redis.IntCmd).Val())
			}

			// errors
			var rerr redis.Error
			err = rdb.Do(ctx, "NOSUCHCOMMAND", "x").Err()
			require.True(t, errors.As(err, &rerr), "%v", err)
			require.Equal(t, "ERR unknown command 'NOSUCHCOMMAND', with args beginning with: 'x' ", err.Error())
			require.EqualError(t, rdb.Do(ctx, "GET").Err(), "ERR wrong number of arguments for 'get' command")
			require.EqualError(t, rdb.Do(ctx, "SET", "k", "v", "EX", "0").Err(), "ERR invalid expire time in 'set' command")
			require.Equal(t, "hello world", rdb.Get(ctx, "s2").Val(), "the connection survives errors")

			// a second connection from the pool sees the same data
			require.NoError(t, rdb.Ping(ctx).Err())
			require.Equal(t, "PONG", rdb.Ping(ctx).Val())
		})
	}
}

func dedupe(sorted []string) []string {
	var out []string
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// runScript runs an external smoke script against every client target.
func runScript(t *testing.T, dir string, argv ...string) {
	for _, tg := range clientTargets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			_, port, _ := strings.Cut(tg.Addr, ":")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], port)...)
			cmd.Dir = dir
			testproc.Prepare(cmd)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s against %s:\n%s", strings.Join(argv, " "), tg.Name, out)
			t.Logf("%s: %s", tg.Name, strings.TrimSpace(string(out)))
		})
	}
}

// TestIORedisClient drives redamo with ioredis (npm, pinned in
// clients/node/package-lock.json) and its defaults: the HELLO 3 handshake and
// the INFO readiness check. It installs clients/node's packages with npm ci
// when one is missing (testserver.NodeModules).
func TestIORedisClient(t *testing.T) {
	dir, err := filepath.Abs("clients/node")
	require.NoError(t, err)
	node := testserver.NodeModules(t, dir)
	runScript(t, dir, node, "smoke.js")
}

// TestRedisPyClient drives redamo with redis-py from Debian's python3-redis.
func TestRedisPyClient(t *testing.T) {
	var python string
	var found []string
	for _, cand := range []string{"/usr/bin/python3", "python3"} {
		p, err := exec.LookPath(cand)
		if err != nil {
			continue
		}
		found = append(found, p)
		if exec.Command(p, "-c", "import redis").Run() == nil {
			python = p
			break
		}
	}
	switch {
	case len(found) == 0:
		skipOrFail(t, "python3 not installed")
	case python == "":
		skipOrFail(t, "no python3 with the redis module (apt-get install python3-redis): tried %s", strings.Join(found, ", "))
	}
	dir, err := filepath.Abs("clients/python")
	require.NoError(t, err)
	runScript(t, dir, python, "smoke.py")
}
