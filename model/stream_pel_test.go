package model_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

// pelKeyGen is the generation key's pending entries are in (nil: inline).
func pelKeyGen(t *testing.T, c *scope, key string) []byte {
	t.Helper()
	it, err := c.st.Get(c, model.ItemKey(0, []byte(key)))
	require.NoError(t, err)
	g, _ := it.Get("xp").(dynastore.B)
	if len(g) == 0 {
		return nil
	}
	return g
}

// genItems counts the items of a generation.
func genItems(t *testing.T, c *scope, gen []byte) int {
	t.Helper()
	n := 0
	q := dynastore.Query{PK: model.MembersPK(gen)}
	for {
		p, err := c.st.Query(c, q)
		require.NoError(t, err)
		n += len(p.Items)
		if p.Next == nil {
			return n
		}
		q.After = p.Next
	}
}

// deliverAll makes a stream of n entries at key with group g and every
// entry pending for consumer c1.
func deliverAll(t *testing.T, c *scope, key string, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		_, _, _, _, err := model.XAdd(c, []byte(key), model.XAddArgs{ID: model.StreamID{Ms: uint64(i)}, IDGiven: true, SeqGiven: true, Fields: [][]byte{[]byte("f"), []byte("v")}})
		require.NoError(t, err)
	}
	require.NoError(t, model.XGroupCreate(c, []byte(key), []byte("g"), model.XGroupArgs{ID: []byte("0")}))
	s := &model.XReadGroupState{Keys: [][]byte{[]byte(key)}, IDs: [][]byte{[]byte(">")}, Group: []byte("g"), Consumer: []byte("c1")}
	got, err := model.XReadGroup(c, s, 0, false)
	require.NoError(t, err)
	require.Len(t, got[0].Entries, n)
}

func pendingCount(t *testing.T, c *scope, key string) int64 {
	t.Helper()
	sum, _, err := model.XPending(c, []byte(key), []byte("g"), nil)
	require.NoError(t, err)
	return sum.Count
}

// TestStreamPELLifecycle: pending entries past the inline few are pages of
// a generation the key item names; RENAME keeps them, COPY copies them,
// the sweeper deletes those of a deleted key, and a group with none left
// goes back inline, its generation swept.
func TestStreamPELLifecycle(t *testing.T) {
	forBackends(t, func(t *testing.T, c *scope) {
		const n = 150
		// The entries are in pages of at most 64: 98 delivered at
		// once make 4 (32, 32, 32, 2), the 52 more a page of their own.
		const pages = 5
		for _, k := range []string{"dead", "renamed", "live", "drained"} {
			deliverAll(t, c, k, n)
			gen := pelKeyGen(t, c, k)
			require.NotNil(t, gen, k)
			require.Equal(t, pages, genItems(t, c, gen), k)
		}
		few := "few"
		deliverAll(t, c, few, 10)
		require.Nil(t, pelKeyGen(t, c, few), "a few pending entries stay in the key item")

		deadGen, renamedGen, drainedGen := pelKeyGen(t, c, "dead"), pelKeyGen(t, c, "renamed"), pelKeyGen(t, c, "drained")
		_, err := c.st.Delete(c, model.ItemKey(0, []byte("dead")), dynastore.WriteOptions{})
		require.NoError(t, err)
		old, err := c.st.Get(c, model.ItemKey(0, []byte("renamed")))
		require.NoError(t, err)
		moved := model.Retarget(old, 0, []byte("renamed2"))
		acts := append([]dynastore.TxAction{
			{Op: dynastore.TxDelete, Key: model.ItemKey(0, []byte("renamed"))},
			{Op: dynastore.TxPut, Item: moved},
		}, model.CollectionRenameActions(old, model.KeyPK(0, []byte("renamed2")))...)
		require.NoError(t, c.st.Transact(c, acts))
		// COPY: the copy's entries are its own.
		src, err := c.st.Get(c, model.ItemKey(0, []byte("live")))
		require.NoError(t, err)
		cp, checks, err := model.CopyCollectionItem(c, c.st, src, model.KeyPK(0, []byte("copy")), c.now.Load())
		require.NoError(t, err)
		require.NoError(t, c.st.Transact(c, append([]dynastore.TxAction{{Op: dynastore.TxPut, Item: cp}}, checks...)))
		require.NotEqual(t, pelKeyGen(t, c, "live"), pelKeyGen(t, c, "copy"))
		acked, err := model.XAck(c, []byte("copy"), []byte("g"), func() ([]model.StreamID, error) {
			return []model.StreamID{{Ms: 1}, {Ms: 2}}, nil
		})
		require.NoError(t, err)
		require.EqualValues(t, 2, acked)
		require.EqualValues(t, n-2, pendingCount(t, c, "copy"))
		require.EqualValues(t, n, pendingCount(t, c, "live"))

		// Every entry of drained acknowledged: back in the key item.
		ids := make([]model.StreamID, n)
		for i := range ids {
			ids[i] = model.StreamID{Ms: uint64(i + 1)}
		}
		acked, err = model.XAck(c, []byte("drained"), []byte("g"), func() ([]model.StreamID, error) { return ids, nil })
		require.NoError(t, err)
		require.EqualValues(t, n, acked)
		require.Nil(t, pelKeyGen(t, c, "drained"))
		require.Zero(t, pendingCount(t, c, "drained"))

		clock := time.Now()
		sw := &model.Sweeper{Store: c.st, Clock: func() time.Time { return clock }, Grace: time.Minute, Rate: 100000}
		require.NoError(t, sw.SweepOnce(c))
		clock = clock.Add(2 * time.Minute)
		require.NoError(t, sw.SweepOnce(c))
		require.Zero(t, genItems(t, c, deadGen))
		require.Zero(t, genItems(t, c, drainedGen))
		require.Equal(t, pages, genItems(t, c, renamedGen))
		c.proc = model.NewProcess(testLimits)
		for k, want := range map[string]int64{"renamed2": n, "live": n, "copy": n - 2, "few": 10} {
			require.Equal(t, want, pendingCount(t, c, k), k)
			_, entries, err := model.XPending(c, []byte(k), []byte("g"), &model.XPendingRange{Start: model.StreamID{}, End: model.MaxStreamID, Count: 1000})
			require.NoError(t, err)
			require.Len(t, entries, int(want), k)
			require.Equal(t, "c1", entries[0].Consumer, fmt.Sprint(k))
		}
	})
}
