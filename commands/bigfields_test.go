package commands_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/internal/testserver"
)

// Hash field values past DynamoDB's item size are kept in chunks, and
// every hash command reads and writes them as Redis does, directly, in
// MULTI and in scripts; RENAME, COPY, MOVE, DUMP/RESTORE keep them.
func TestBigHashFields(t *testing.T) {
	ctx := context.Background()
	const n = 1<<20 + 4321
	a, b := bigValue(11, n), bigValue(12, n)
	eq := sameBytes
	for _, be := range testserver.Stores(t) {
		t.Run(be.Name, func(t *testing.T) {
			rdb := be.Start(t).Client(t, func(o *redis.Options) { o.ReadTimeout = time.Minute })
			// Into a new hash, and into an inline one with small fields.
			require.EqualValues(t, 1, rdb.HSet(ctx, "h", "f", a).Val())
			require.EqualValues(t, 1, rdb.HSet(ctx, "s", "x", "1").Val())
			require.EqualValues(t, 2, rdb.HSet(ctx, "s", "f", b, "y", "2").Val())
			eq(t, a, rdb.HGet(ctx, "h", "f").Val())
			eq(t, b, rdb.HGet(ctx, "s", "f").Val())
			require.EqualValues(t, n, rdb.Do(ctx, "HSTRLEN", "h", "f").Val())
			require.True(t, rdb.HExists(ctx, "h", "f").Val())
			require.EqualValues(t, 3, rdb.HLen(ctx, "s").Val())
			require.Equal(t, "hashtable", rdb.ObjectEncoding(ctx, "s").Val())
			require.Greater(t, rdb.MemoryUsage(ctx, "s").Val(), int64(n))
			vals := rdb.HMGet(ctx, "s", "x", "f", "nope").Val()
			require.Equal(t, "1", vals[0])
			eq(t, b, vals[1].(string))
			require.Nil(t, vals[2])
			all := rdb.HGetAll(ctx, "s").Val()
			require.Len(t, all, 3)
			eq(t, b, all["f"])
			require.ElementsMatch(t, []string{"x", "f", "y"}, rdb.HKeys(ctx, "s").Val())
			require.Len(t, rdb.HVals(ctx, "s").Val(), 3)
			kv := rdb.HRandFieldWithValues(ctx, "h", 1).Val()
			require.Len(t, kv, 1)
			eq(t, a, kv[0].Value)
			keys, cur, err := rdb.HScan(ctx, "h", 0, "*", 10).Result()
			require.NoError(t, err)
			require.Zero(t, cur)
			require.Len(t, keys, 2)
			eq(t, a, keys[1])
			require.EqualError(t, rdb.HIncrBy(ctx, "h", "f", 1).Err(), "ERR hash value is not an integer")
			require.EqualError(t, rdb.HIncrByFloat(ctx, "h", "f", 1).Err(), "ERR hash value is not a float")

			// HSETNX holds a big value back; writes one to a new field.
			require.False(t, rdb.HSetNX(ctx, "h", "f", b).Val())
			require.True(t, rdb.HSetNX(ctx, "h", "g", b).Val())
			eq(t, a, rdb.HGet(ctx, "h", "f").Val())
			eq(t, b, rdb.HGet(ctx, "h", "g").Val())
			// Overwritten by a big value, by a small one; HMSET; HDEL.
			require.EqualValues(t, 0, rdb.HSet(ctx, "h", "f", b).Val())
			eq(t, b, rdb.HGet(ctx, "h", "f").Val())
			require.NoError(t, rdb.HMSet(ctx, "h", "f", "small", "m", a).Err())
			require.Equal(t, "small", rdb.HGet(ctx, "h", "f").Val())
			require.EqualValues(t, 5, rdb.Do(ctx, "HSTRLEN", "h", "f").Val())
			eq(t, a, rdb.HGet(ctx, "h", "m").Val())
			require.EqualValues(t, 1, rdb.HDel(ctx, "h", "g").Val())
			require.False(t, rdb.HExists(ctx, "h", "g").Val())

			// RENAME, COPY (then the source deleted), MOVE, DUMP/RESTORE.
			require.NoError(t, rdb.Rename(ctx, "h", "h2").Err())
			eq(t, a, rdb.HGet(ctx, "h2", "m").Val())
			require.EqualValues(t, 1, rdb.Copy(ctx, "h2", "h3", 0, false).Val())
			dump, err := rdb.Dump(ctx, "h2").Result()
			require.NoError(t, err)
			require.EqualValues(t, 1, rdb.Del(ctx, "h2").Val())
			eq(t, a, rdb.HGet(ctx, "h3", "m").Val())
			require.NoError(t, rdb.Restore(ctx, "h4", 0, dump).Err())
			eq(t, a, rdb.HGet(ctx, "h4", "m").Val())
			require.Equal(t, "small", rdb.HGet(ctx, "h4", "f").Val())
			require.True(t, rdb.Move(ctx, "h3", 1).Val())
			s, err := rdb.Do(ctx, "EVAL", "redis.call('select', 1) return redis.call('hget', KEYS[1], 'm')", 1, "h3").Text()
			require.NoError(t, err)
			eq(t, a, s)
			require.True(t, rdb.Expire(ctx, "h4", time.Hour).Val())
			eq(t, a, rdb.HGet(ctx, "h4", "m").Val())

			// MULTI/EXEC and scripts.
			cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.HSet(ctx, "m", "f", a)
				p.HGet(ctx, "m", "f")
				p.Do(ctx, "HSTRLEN", "m", "f")
				return nil
			})
			require.NoError(t, err)
			eq(t, a, cmds[1].(*redis.StringCmd).Val())
			require.EqualValues(t, n, cmds[2].(*redis.Cmd).Val())
			eq(t, a, rdb.HGet(ctx, "m", "f").Val())
			require.NoError(t, rdb.Eval(ctx, "return redis.call('hset', KEYS[1], 'f', ARGV[1])", []string{"lua"}, b).Err())
			s, err = rdb.Eval(ctx, "return redis.call('hget', KEYS[1], 'f')", []string{"lua"}).Text()
			require.NoError(t, err)
			eq(t, b, s)

			// SORT ... GET reads a big field.
			require.NoError(t, rdb.RPush(ctx, "ids", "1", "2").Err())
			require.NoError(t, rdb.HSet(ctx, "obj_1", "f", a).Err())
			got := rdb.Sort(ctx, "ids", &redis.Sort{By: "nosort", Get: []string{"obj_*->f"}}).Val()
			require.Len(t, got, 2)
			eq(t, a, got[0])
			require.Equal(t, "", got[1])
		})
	}
}
