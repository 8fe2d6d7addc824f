package commands_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
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

// TestRestoreInMulti: RESTORE of a large collection and of a small one in
// one MULTI, and from a script, with a DUMP in the same transaction.
func TestRestoreInMulti(t *testing.T) {
	ctx := context.Background()
	big := &rdb.Object{Type: rdb.TypeHash}
	for i := range 400 {
		big.Pairs = append(big.Pairs, []byte("field:"+strconv.Itoa(i)), []byte(strconv.Itoa(i)))
	}
	bigHash := string(rdb.Dump(big, rdb.DefaultOptions))
	str := string(rdb.Dump(&rdb.Object{Type: rdb.TypeString, String: []byte("v")}, rdb.DefaultOptions))
	for _, b := range testserver.Stores(t) {
		t.Run(b.Name, func(t *testing.T) {
			c := b.Start(t).Client(t)
			require.NoError(t, c.Set(ctx, "s", "old", 0).Err())
			var dump *redis.StringCmd
			cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Restore(ctx, "h", 0, bigHash)
				p.Restore(ctx, "s", 0, str)
				p.RestoreReplace(ctx, "s", 0, str)
				dump = p.Dump(ctx, "s")
				return nil
			})
			require.Error(t, err) // the BUSYKEY among the replies
			require.NoError(t, cmds[0].Err())
			require.EqualError(t, cmds[1].Err(), "BUSYKEY Target key name already exists.")
			require.NoError(t, cmds[2].Err())
			require.Equal(t, str, dump.Val())
			require.Equal(t, int64(400), c.HLen(ctx, "h").Val())
			require.Equal(t, "399", c.HGet(ctx, "h", "field:399").Val())
			p, err := c.Dump(ctx, "h").Result()
			require.NoError(t, err)
			require.Equal(t, canonicalPayload(t, []byte(bigHash)), canonicalPayload(t, []byte(p)))

			got, err := c.Eval(ctx, "redis.call('RESTORE', KEYS[1], 0, ARGV[1]); return redis.call('HLEN', KEYS[1])", []string{"h2"}, bigHash).Result()
			require.NoError(t, err)
			require.Equal(t, int64(400), got)
		})
	}
}
