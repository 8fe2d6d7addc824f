package commands_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/internal/rdb"
	"github.com/redamo/redamo/internal/testserver"
)

// TestDumpRestoreRequests: RESTORE of a value that fits the key item is
// one conditional PutItem, busy or not; DUMP of one is one GetItem. A
// large collection costs one read of the key item before its generation
// is staged, and DUMP pages through its members.
func TestDumpRestoreRequests(t *testing.T) {
	ctx := context.Background()
	str := rdb.Dump(&rdb.Object{Type: rdb.TypeString, String: []byte("hello")}, rdb.DefaultOptions)
	hash := rdb.Dump(&rdb.Object{Type: rdb.TypeHashListpack, Pairs: [][]byte{[]byte("f"), []byte("v"), []byte("n"), []byte("7")}}, rdb.DefaultOptions)
	list := rdb.Dump(&rdb.Object{Type: rdb.TypeListQuicklist2, Elems: [][]byte{[]byte("a"), []byte("b")}}, rdb.DefaultOptions)
	big := &rdb.Object{Type: rdb.TypeSet}
	for i := range 300 {
		big.Elems = append(big.Elems, []byte("member:"+strconv.Itoa(i)))
	}
	bigSet := rdb.Dump(big, rdb.DefaultOptions)
	put := map[string]int64{dynastore.OpPutItem: 1}
	get := map[string]int64{dynastore.OpGetItem: 1}
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			c := b.Start(t).Client(t)
			for _, tc := range []struct {
				cmd  []any
				want string // reply, or error message
				reqs map[string]int64
			}{
				{[]any{"RESTORE", "s", 0, str}, "OK", put},
				{[]any{"RESTORE", "s", 0, str}, "BUSYKEY Target key name already exists.", put},
				{[]any{"RESTORE", "s", 0, str, "REPLACE"}, "OK", put},
				{[]any{"RESTORE", "h", 100000, hash}, "OK", put},
				{[]any{"RESTORE", "l", 0, list, "ABSTTL"}, "OK", put},
				{[]any{"RESTORE", "s", -1, str}, "BUSYKEY Target key name already exists.", get},
				{[]any{"RESTORE", "new", -1, str}, "ERR Invalid TTL value, must be >= 0", get},
				{[]any{"RESTORE", "new", -1, str, "REPLACE"}, "ERR Invalid TTL value, must be >= 0", map[string]int64{}},
				{[]any{"RESTORE", "s", 0, str, "FREQ", 300}, "ERR Invalid FREQ value, must be >= 0 and <= 255", map[string]int64{}},
				{[]any{"DUMP", "s"}, string(str), get},
				{[]any{"DUMP", "h"}, string(hash), get},
				{[]any{"DUMP", "l"}, string(list), get},
				{[]any{"DUMP", "missing"}, "", get},
			} {
				before := b.Stats.Snapshot()
				got, err := c.Do(ctx, tc.cmd...).Result()
				switch {
				case tc.want == "":
					require.Error(t, err, "%v", tc.cmd[:2])
				case err != nil:
					require.EqualError(t, err, tc.want, "%v", tc.cmd[:2])
				default:
					require.Equal(t, tc.want, got, "%v", tc.cmd[:2])
				}
				name := lower(tc.cmd[0].(string))
				require.Equal(t, tc.reqs, requestsSince(before, b.Stats.Snapshot(), name), "%v", tc.cmd[:2])
			}

			before := b.Stats.Snapshot()
			require.NoError(t, c.Restore(ctx, "big", 0, string(bigSet)).Err())
			reqs := requestsSince(before, b.Stats.Snapshot(), "restore")
			require.Equal(t, int64(1), reqs[dynastore.OpGetItem], "%v", reqs)
			require.Equal(t, int64(300), c.SCard(ctx, "big").Val())
			t.Logf("RESTORE of a 300-member set: %v", reqs)
			before = b.Stats.Snapshot()
			p, err := c.Dump(ctx, "big").Result()
			require.NoError(t, err)
			require.Equal(t, canonicalPayload(t, bigSet), canonicalPayload(t, []byte(p)))
			t.Logf("DUMP of a 300-member set: %v", requestsSince(before, b.Stats.Snapshot(), "dump"))
		})
	}
}
