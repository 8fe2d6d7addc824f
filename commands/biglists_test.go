package commands_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/internal/testserver"
)

// List elements past DynamoDB's item size are kept in chunks, and every
// list command reads, compares and writes them as Redis does, directly,
// in MULTI and in scripts; RENAME, COPY, MOVE, DUMP/RESTORE keep them.
func TestBigListElements(t *testing.T) {
	ctx := context.Background()
	const n = 1<<20 + 4321
	a, b := bigValue(21, n), bigValue(22, n)
	A, B := string(a), string(b)
	eq := sameBytes
	for _, be := range testserver.Stores(t) {
		t.Run(be.Name, func(t *testing.T) {
			rdb := be.Start(t).Client(t, func(o *redis.Options) { o.ReadTimeout = time.Minute })
			require.EqualValues(t, 3, rdb.RPush(ctx, "l", "x", A, "y").Val())
			require.EqualValues(t, 4, rdb.LPushX(ctx, "l", B).Val())
			require.EqualValues(t, 5, rdb.RPushX(ctx, "l", B).Val())
			require.EqualValues(t, 0, rdb.LPushX(ctx, "none", A).Val())
			require.EqualValues(t, 5, rdb.LLen(ctx, "l").Val())
			require.Equal(t, "quicklist", rdb.ObjectEncoding(ctx, "l").Val())
			require.Greater(t, rdb.MemoryUsage(ctx, "l").Val(), int64(3*n))
			got := rdb.LRange(ctx, "l", 0, -1).Val()
			require.Len(t, got, 5)
			require.Equal(t, []string{"x", "y"}, []string{got[1], got[3]})
			eq(t, b, got[0])
			eq(t, a, got[2])
			eq(t, b, got[4])
			eq(t, a, rdb.LIndex(ctx, "l", 2).Val())
			require.Equal(t, []int64{0, 4}, rdb.LPosCount(ctx, "l", B, 0, redis.LPosArgs{}).Val())
			require.EqualValues(t, 6, rdb.LInsertAfter(ctx, "l", A, B).Val())
			require.EqualValues(t, 2, rdb.LRem(ctx, "l", 2, B).Val())
			require.NoError(t, rdb.LSet(ctx, "l", 0, A).Err())
			got = rdb.LRange(ctx, "l", 0, -1).Val()
			require.Len(t, got, 4)
			eq(t, a, got[0])
			eq(t, a, got[1])
			require.Equal(t, "y", got[2])
			eq(t, b, got[3])

			// Pops and moves, blocking ones included.
			eq(t, a, rdb.LPop(ctx, "l").Val())
			eq(t, a, rdb.LMove(ctx, "l", "m", "LEFT", "RIGHT").Val())
			eq(t, b, rdb.BLMove(ctx, "l", "m", "RIGHT", "LEFT", time.Second).Val())
			eq(t, a, rdb.RPopLPush(ctx, "m", "m").Val())
			require.Equal(t, []string{"l", "y"}, rdb.BLPop(ctx, time.Second, "l").Val())
			key, vals := rdb.LMPop(ctx, "right", 1, "l", "m").Val()
			require.Equal(t, "m", key)
			require.Len(t, vals, 1)
			eq(t, b, vals[0])
			require.EqualValues(t, 2, rdb.RPush(ctx, "m", A).Val())
			require.NoError(t, rdb.LTrim(ctx, "m", 1, 1).Err())
			eq(t, a, rdb.LIndex(ctx, "m", 0).Val())

			// RENAME, COPY (then the source deleted), MOVE, DUMP/RESTORE.
			require.NoError(t, rdb.Rename(ctx, "m", "m2").Err())
			require.EqualValues(t, 1, rdb.Copy(ctx, "m2", "m3", 0, false).Val())
			dump, err := rdb.Dump(ctx, "m2").Result()
			require.NoError(t, err)
			require.EqualValues(t, 1, rdb.Del(ctx, "m2").Val())
			eq(t, a, rdb.LIndex(ctx, "m3", 0).Val())
			require.NoError(t, rdb.Restore(ctx, "m4", 0, dump).Err())
			eq(t, a, rdb.LIndex(ctx, "m4", 0).Val())
			require.True(t, rdb.Move(ctx, "m3", 1).Val())
			s, err := rdb.Do(ctx, "EVAL", "redis.call('select', 1) return redis.call('lindex', KEYS[1], 0)", 1, "m3").Text()
			require.NoError(t, err)
			eq(t, a, s)

			// MULTI/EXEC and scripts.
			cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.RPush(ctx, "t", "s", A)
				p.LIndex(ctx, "t", 1)
				p.LMove(ctx, "t", "t2", "RIGHT", "LEFT")
				return nil
			})
			require.NoError(t, err)
			eq(t, a, cmds[1].(*redis.StringCmd).Val())
			eq(t, a, cmds[2].(*redis.StringCmd).Val())
			eq(t, a, rdb.LIndex(ctx, "t2", 0).Val())
			require.NoError(t, rdb.Eval(ctx, "return redis.call('lpush', KEYS[1], ARGV[1])", []string{"lua"}, B).Err())
			s, err = rdb.Eval(ctx, "return redis.call('lpop', KEYS[1])", []string{"lua"}).Text()
			require.NoError(t, err)
			eq(t, b, s)

			// SORT ... STORE writes a list of big elements.
			require.NoError(t, rdb.RPush(ctx, "src", B, A).Err())
			require.EqualValues(t, 2, rdb.SortStore(ctx, "src", "sorted", &redis.Sort{Alpha: true}).Val())
			got = rdb.LRange(ctx, "sorted", 0, -1).Val()
			require.Len(t, got, 2)
			if A < B {
				eq(t, a, got[0])
			} else {
				eq(t, b, got[0])
			}
		})
	}
}

// sameBytes requires a reply of a big value to be want, byte for byte.
func sameBytes(t *testing.T, want []byte, got string) {
	t.Helper()
	require.True(t, bytes.Equal(want, []byte(got)), "a value of %d bytes where %d were written", len(got), len(want))
}
