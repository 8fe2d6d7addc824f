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

// Edits of a big value inside MULTI and scripts, several on one key in one
// unit: each sees the ones before it, and EXEC publishes them together.
func TestBigEditsInUnits(t *testing.T) {
	ctx := context.Background()
	const n = 1<<20 + 777
	for _, be := range testserver.Stores(t) {
		t.Run(be.Name, func(t *testing.T) {
			rdb := be.Start(t).Client(t, func(o *redis.Options) { o.ReadTimeout = time.Minute })
			want := bigValue(5, n)
			require.NoError(t, rdb.Set(ctx, "k", want, 0).Err())
			cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.SetRange(ctx, "k", 400000, "one")
				p.SetRange(ctx, "k", 400001, "TWO")
				p.Append(ctx, "k", "tail")
				p.SetBit(ctx, "k", 8*10, 1)
				p.GetRange(ctx, "k", 400000, 400003)
				return nil
			})
			require.NoError(t, err)
			copy(want[400000:], "oTWO")
			want = append(want, "tail"...)
			want[10] |= 0x80
			require.Equal(t, "oTWO", cmds[4].(*redis.StringCmd).Val())
			require.Equal(t, int64(n+4), cmds[2].(*redis.IntCmd).Val())
			require.NoError(t, rdb.Eval(ctx, "redis.call('setrange', KEYS[1], 5, 'lua') return redis.call('append', KEYS[1], 'end')", []string{"k"}).Err())
			copy(want[5:], "lua")
			want = append(want, "end"...)
			got, err := rdb.Get(ctx, "k").Bytes()
			require.NoError(t, err)
			require.True(t, bytes.Equal(want, got))
		})
	}
}
