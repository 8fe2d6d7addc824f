package commands_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/internal/testserver"
)

// TestBitsHLLRequests: the requests each bitmap, HyperLogLog and LCS
// command makes, in order on one set of keys: a read-modify-write of one
// key is one read and one conditional write (none when nothing changes),
// a read one read, several keys one batch.
func TestBitsHLLRequests(t *testing.T) {
	ctx := context.Background()
	steps := []struct {
		cmd  []any
		want map[string]int64
	}{
		{[]any{"SETBIT", "s", 0, 1}, map[string]int64{dynastore.OpGetItem: 1, dynastore.OpPutItem: 1}},
		{[]any{"SETBIT", "s", 0, 1}, map[string]int64{dynastore.OpGetItem: 1}},
		{[]any{"GETBIT", "s", 0}, map[string]int64{dynastore.OpGetItem: 1}},
		{[]any{"BITCOUNT", "s", 0, -1, "BIT"}, map[string]int64{dynastore.OpGetItem: 1}},
		{[]any{"BITPOS", "s", 0}, map[string]int64{dynastore.OpGetItem: 1}},
		{[]any{"BITFIELD", "s", "INCRBY", "u8", 8, 1, "GET", "u4", 0}, map[string]int64{dynastore.OpGetItem: 1, dynastore.OpPutItem: 1}},
		{[]any{"BITFIELD", "s", "OVERFLOW", "FAIL", "INCRBY", "u8", 8, 1000}, map[string]int64{dynastore.OpGetItem: 1}},
		{[]any{"BITFIELD_RO", "s", "GET", "u8", 0}, map[string]int64{dynastore.OpGetItem: 1}},
		{[]any{"BITOP", "OR", "d", "s", "t", "s"}, map[string]int64{dynastore.OpBatchGetItem: 1, dynastore.OpTransactWriteItems: 1}},
		{[]any{"BITOP", "AND", "nosuch", "nosuch2"}, map[string]int64{dynastore.OpBatchGetItem: 1}},
		{[]any{"PFADD", "h", "a", "b", "c"}, map[string]int64{dynastore.OpGetItem: 1, dynastore.OpPutItem: 1}},
		{[]any{"PFADD", "h", "a"}, map[string]int64{dynastore.OpGetItem: 1}},
		// The first count caches itself in the value, as Redis does.
		{[]any{"PFCOUNT", "h"}, map[string]int64{dynastore.OpGetItem: 1, dynastore.OpPutItem: 1}},
		{[]any{"PFCOUNT", "h"}, map[string]int64{dynastore.OpGetItem: 1}},
		{[]any{"PFCOUNT", "h", "h2", "h3"}, map[string]int64{dynastore.OpBatchGetItem: 1}},
		{[]any{"PFMERGE", "m", "h", "h2"}, map[string]int64{dynastore.OpBatchGetItem: 1, dynastore.OpTransactWriteItems: 1}},
		{[]any{"PFMERGE", "m"}, map[string]int64{dynastore.OpBatchGetItem: 1, dynastore.OpPutItem: 1}},
		{[]any{"LCS", "s", "t", "IDX"}, map[string]int64{dynastore.OpBatchGetItem: 1}},
	}
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			rdb := b.Start(t).Client(t)
			require.NoError(t, rdb.Set(ctx, "t", "bar", 0).Err())
			require.NoError(t, rdb.Do(ctx, "PFADD", "h2", "x").Err())
			for _, st := range steps {
				before := b.Stats.Snapshot()
				require.NoError(t, rdb.Do(ctx, st.cmd...).Err(), "%v", st.cmd)
				label := st.cmd[0].(string)
				got := requestsSince(before, b.Stats.Snapshot(), strings.ToLower(label))
				require.Equal(t, st.want, got, "%v", st.cmd)
			}
		})
	}
}
