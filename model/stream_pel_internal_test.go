package model

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
)

// Pending entries kept as they once were, an item each, read as pages of
// one entry: XPENDING lists them, XACK and XREADGROUP change them (the
// pages they write take in the entries around them), and what is pending
// stays exact.
func TestStreamPELOneEntryItems(t *testing.T) {
	st := memory.New(memory.Options{})
	c := procScope{storeScope{context.Background(), st}, NewProcess(nil)}
	key := []byte("s")
	const n = 200
	for i := 1; i <= n; i++ {
		_, _, _, _, err := XAdd(c, key, XAddArgs{ID: StreamID{Ms: uint64(i)}, IDGiven: true, SeqGiven: true, Fields: [][]byte{[]byte("f"), []byte("v")}})
		require.NoError(t, err)
	}
	require.NoError(t, XGroupCreate(c, key, []byte("g"), XGroupArgs{ID: []byte("0")}))
	read := func(count int64) {
		t.Helper()
		s := &XReadGroupState{Keys: [][]byte{key}, IDs: [][]byte{[]byte(">")}, Group: []byte("g"), Consumer: []byte("c1")}
		_, err := XReadGroup(c, s, count, false)
		require.NoError(t, err)
	}
	read(150)

	// The pages rewritten as an item per entry.
	it, err := st.Get(c, ItemKey(0, key))
	require.NoError(t, err)
	gen := pelGenOf(it)
	require.NotNil(t, gen)
	p, err := st.Query(c, dynastore.Query{PK: MembersPK(gen)})
	require.NoError(t, err)
	var entries int
	for _, page := range p.Items {
		sk := page.Get(dynastore.AttrSK).(dynastore.B)
		gid := sk[:len(sk)-16]
		_, ns, err := decodePage(page, len(gid))
		require.NoError(t, err)
		_, err = st.Delete(c, page.Key(), dynastore.WriteOptions{})
		require.NoError(t, err)
		for _, e := range ns {
			_, err := st.Put(c, dynastore.Item{
				{Name: dynastore.AttrPK, Value: dynastore.B(MembersPK(gen))},
				{Name: dynastore.AttrSK, Value: dynastore.B(pelSK(gid, e.id))},
				{Name: pelConsumer, Value: dynastore.B(e.consumer)},
				{Name: pelDelivered, Value: NInt(e.delivered)},
				{Name: pelCount, Value: NInt(e.count)},
			}, dynastore.WriteOptions{})
			require.NoError(t, err)
			entries++
		}
	}
	require.Equal(t, 150, entries)

	pending := func() []StreamID {
		t.Helper()
		_, es, err := XPending(c, key, []byte("g"), &XPendingRange{Start: StreamID{}, End: MaxStreamID, Count: n})
		require.NoError(t, err)
		ids := make([]StreamID, len(es))
		for i, e := range es {
			require.Equal(t, "c1", e.Consumer)
			ids[i] = e.ID
		}
		return ids
	}
	want := map[StreamID]bool{}
	for i := 1; i <= 150; i++ {
		want[StreamID{Ms: uint64(i)}] = true
	}
	check := func() {
		t.Helper()
		got := pending()
		require.Len(t, got, len(want))
		for _, id := range got {
			require.True(t, want[id], "%v", id)
		}
	}
	check()
	acks := []StreamID{{Ms: 3}, {Ms: 4}, {Ms: 90}, {Ms: 150}, {Ms: 151}}
	acked, err := XAck(c, key, []byte("g"), func() ([]StreamID, error) { return acks, nil })
	require.NoError(t, err)
	require.EqualValues(t, 4, acked)
	for _, id := range acks {
		delete(want, id)
	}
	check()
	read(50)
	for i := 151; i <= n; i++ {
		want[StreamID{Ms: uint64(i)}] = true
	}
	check()
}
