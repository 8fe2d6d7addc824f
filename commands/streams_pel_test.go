package commands_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/internal/rdb"
	"github.com/redamo/redamo/internal/testserver"
)

// bigPEL is the pending entries of TestStreamGroupBigPEL: five times what
// one key item could hold when they lived in it. On DynamoDB Local, whose
// transactions are slow, the test makes bigPELDynamo of them (still past
// what the key item keeps, so they are items) unless REDAMO_TEST_BIG_PEL
// gives a number.
const (
	bigPEL       = 100_000
	bigPELDynamo = 2_500
)

// TestStreamGroupBigPEL: a group with bigPEL pending entries is read,
// summed up, listed, acknowledged by ranges and claimed as Redis does, and
// DUMP gives the same bytes for it as for its RESTOREd copy.
func TestStreamGroupBigPEL(t *testing.T) {
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			n := bigPEL
			if b.Name == "dynamodb" {
				n = bigPELDynamo
				if v, err := strconv.Atoi(os.Getenv("REDAMO_TEST_BIG_PEL")); err == nil {
					n = v
				}
			}
			// A read of n entries takes as long as the store makes it.
			bigPELCase(t, b.Start(t).Client(t, func(o *redis.Options) { o.ReadTimeout = -1 }), n)
		})
	}
}

func bigPELCase(t *testing.T, c *redis.Client, bigPEL int) {
	ctx := context.Background()
	id := func(i int) string { return fmt.Sprintf("%d-0", i) }
	do := func(args ...any) any {
		t.Helper()
		v, err := c.Do(ctx, args...).Result()
		require.NoError(t, err, "%v", args[:min(len(args), 4)])
		return v
	}
	// The stream, made by RESTORE (an XADD each would take minutes on
	// DynamoDB Local).
	st := &rdb.Stream{Length: uint64(bigPEL), FirstID: rdb.StreamID{Ms: 1}, LastID: rdb.StreamID{Ms: uint64(bigPEL)}, EntriesAdded: uint64(bigPEL)}
	for i := 1; i <= bigPEL; i++ {
		st.Entries = append(st.Entries, rdb.StreamEntry{ID: rdb.StreamID{Ms: uint64(i)}, Fields: [][]byte{[]byte("f"), []byte("v")}})
	}
	do("restore", "s", 0, string(rdb.Dump(&rdb.Object{Type: rdb.TypeStream3, Stream: st}, rdb.DefaultOptions)))
	do("xgroup", "create", "s", "g", "0")

	got := do("xreadgroup", "group", "g", "c1", "count", bigPEL+5, "streams", "s", ">").(map[any]any)
	es := got["s"].([]any)
	require.Len(t, es, bigPEL)
	for i, e := range es {
		require.Equal(t, id(i+1), e.([]any)[0])
	}
	require.Equal(t, []any{int64(bigPEL), id(1), id(bigPEL), []any{[]any{"c1", fmt.Sprint(bigPEL)}}}, do("xpending", "s", "g"))
	ext := do("xpending", "s", "g", id(bigPEL-2), "+", 10).([]any)
	require.Len(t, ext, 3)
	require.Equal(t, []any{id(bigPEL - 2), "c1"}, ext[0].([]any)[:2])
	info := do("xinfo", "groups", "s").([]any)[0].(map[any]any)
	require.EqualValues(t, bigPEL, info["pending"])

	// DUMP and RESTORE: the copy's groups are the same, to the byte.
	dump := do("dump", "s").(string)
	do("restore", "copy", 0, dump)
	require.Equal(t, dump, do("dump", "copy"))
	require.Equal(t, do("xpending", "s", "g"), do("xpending", "copy", "g"))
	do("del", "copy")

	// XACK by ranges of 10,000 ids: the first half.
	var acked int64
	for lo := 1; lo <= bigPEL/2; lo += 10_000 {
		args := []any{"xack", "s", "g"}
		for i := lo; i < min(lo+10_000, bigPEL/2+1); i++ {
			args = append(args, id(i))
		}
		acked += do(args...).(int64)
	}
	require.EqualValues(t, bigPEL/2, acked)
	require.EqualValues(t, 0, do("xack", "s", "g", id(1)))

	// XAUTOCLAIM takes the oldest 1,000 for c2.
	ac := do("xautoclaim", "s", "g", "c2", 0, "-", "count", 1000, "justid").([]any)
	require.Equal(t, id(bigPEL/2+1001), ac[0])
	claimed := ac[1].([]any)
	require.Len(t, claimed, 1000)
	require.Equal(t, id(bigPEL/2+1), claimed[0])
	require.Equal(t, id(bigPEL/2+1000), claimed[999])
	require.Equal(t, []any{int64(bigPEL / 2), id(bigPEL/2 + 1), id(bigPEL),
		[]any{[]any{"c1", fmt.Sprint(bigPEL/2 - 1000)}, []any{"c2", "1000"}}}, do("xpending", "s", "g"))
	mine := do("xpending", "s", "g", "-", "+", 3, "c2").([]any)
	require.Len(t, mine, 3)
	require.Equal(t, id(bigPEL/2+1), mine[0].([]any)[0])
	// c2's history: the first three, then all of it (in steps).
	hist := do("xreadgroup", "group", "g", "c2", "count", 3, "streams", "s", "0").(map[any]any)["s"].([]any)
	require.Len(t, hist, 3)
	require.Equal(t, id(bigPEL/2+1), hist[0].([]any)[0])
	hist = do("xreadgroup", "group", "g", "c2", "streams", "s", "0").(map[any]any)["s"].([]any)
	require.Len(t, hist, 1000)
	for i, e := range hist {
		require.Equal(t, id(bigPEL/2+1+i), e.([]any)[0])
	}
	counts := do("xpending", "s", "g", "-", "+", 4, "c2").([]any)
	require.Equal(t, []any{int64(3), int64(3), int64(3), int64(2)}, []any{counts[0].([]any)[3], counts[1].([]any)[3], counts[2].([]any)[3], counts[3].([]any)[3]})

	// The rest acknowledged: nothing pending, the entries back in the
	// key item.
	for lo := bigPEL/2 + 1; lo <= bigPEL; lo += 10_000 {
		args := []any{"xack", "s", "g"}
		for i := lo; i < min(lo+10_000, bigPEL+1); i++ {
			args = append(args, id(i))
		}
		acked += do(args...).(int64)
	}
	require.EqualValues(t, bigPEL, acked)
	require.Equal(t, []any{int64(0), nil, nil, nil}, do("xpending", "s", "g"))
	cs := do("xinfo", "consumers", "s", "g").([]any)[0].(map[any]any)
	require.Equal(t, []any{"c1", int64(0)}, []any{cs["name"], cs["pending"]})
}
