package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
)

type (
	B    = dynastore.B
	N    = dynastore.N
	S    = dynastore.S
	BS   = dynastore.BS
	L    = dynastore.L
	M    = dynastore.M
	BOOL = dynastore.BOOL
	NULL = dynastore.NULL
	Item = dynastore.Item
)

var basicScenarios = []scenario{
	{"GetMissing", testGetMissing},
	{"PutGetEveryType", testPutGetEveryType},
	{"GetSnapshot", testGetSnapshot},
	{"BatchWrite", testBatchWrite},
	{"EmptyBinaryAndStringValues", testEmptyValues},
	{"PutReplacesWholeItem", testPutReplaces},
	{"Delete", testDelete},
	{"ReturnValues", testReturnValues},
	{"Ownership", testOwnership},
	{"BinaryKeys", testBinaryKeys},
	{"BatchGet", testBatchGet},
	{"DuplicateAttributeName", testDuplicateAttribute},
}

// An item naming an attribute twice (which DynamoDB's JSON item cannot
// carry) is rejected before anything is written, alone, handed over or in
// a transaction.
func testDuplicateAttribute(t *testing.T, s dynastore.Store) {
	k := key("dup")
	dup := func() Item { return append(item(k, "a", N("1")), dynastore.Attr{Name: "a", Value: N("2")}) }
	_, err := s.Put(ctxOf(t), dup(), dynastore.WriteOptions{})
	require.ErrorIs(t, err, dynastore.ErrInvalid)
	_, err = s.Put(ctxOf(t), dup(), dynastore.WriteOptions{Handover: true})
	require.ErrorIs(t, err, dynastore.ErrInvalid)
	err = s.Transact(ctxOf(t), []dynastore.TxAction{{Op: dynastore.TxPut, Item: dup()}})
	require.ErrorIs(t, err, dynastore.ErrInvalid)
	require.Nil(t, get(t, s, k))
}

func testGetMissing(t *testing.T, s dynastore.Store) {
	require.Nil(t, get(t, s, key("nothing")))
	items, err := s.BatchGet(ctxOf(t), nil)
	require.NoError(t, err)
	require.Empty(t, items)
}

func everyType(k dynastore.Key) Item {
	return item(k,
		"b", B{0x00, 0xff, 0x7f, 0x80},
		"n", N("-12.5"),
		"s", S("héllo"),
		"bs", BS{[]byte("x"), {0x00}, {0xff, 0xfe}},
		"l", L{S("a"), N("1"), L{B("nested")}, M{"k": BOOL(false)}},
		"m", M{"a": N("1"), "b": S("two"), "c": NULL{}},
		"t", BOOL(true),
		"f", BOOL(false),
		"nul", NULL{},
	)
}

func testPutGetEveryType(t *testing.T, s dynastore.Store) {
	k := key("every\x00type")
	put(t, s, everyType(k))
	requireItem(t, everyType(k), get(t, s, k))
}

func testEmptyValues(t *testing.T, s dynastore.Store) {
	k := key("empty")
	put(t, s, item(k, "eb", B{}, "es", S(""), "l", L{B{}}))
	got := get(t, s, k)
	require.True(t, got.Has("eb"), "an empty binary is a value, not a missing attribute")
	require.Equal(t, dynastore.KindB, got.Get("eb").Kind())
	require.Len(t, got.Get("eb"), 0)
	require.Equal(t, S(""), got.Get("es"))
	requireItem(t, item(k, "eb", B{}, "es", S(""), "l", L{B{}}), got)

	// And through an update, compared with a condition.
	_, err := s.Update(ctxOf(t), k, dynastore.Update{Set: []dynastore.SetAction{{Attr: "eb2", Val: B{}}}},
		dynastore.WriteOptions{Cond: dynastore.Compare{Attr: "eb", Op: dynastore.OpEQ, Val: B{}}})
	require.NoError(t, err)
	_, err = s.Put(ctxOf(t), item(k), dynastore.WriteOptions{Cond: dynastore.SizeCompare{Attr: "eb2", Op: dynastore.OpEQ, Size: 0}})
	require.NoError(t, err)
}

func testPutReplaces(t *testing.T, s dynastore.Store) {
	k := key("replace")
	put(t, s, item(k, "a", S("1"), "b", S("2")))
	put(t, s, item(k, "c", S("3")))
	requireItem(t, item(k, "c", S("3")), get(t, s, k))
}

func testDelete(t *testing.T, s dynastore.Store) {
	ctx := ctxOf(t)
	k := key("del")
	old, err := s.Delete(ctx, k, dynastore.WriteOptions{Return: dynastore.ReturnAllOld})
	require.NoError(t, err, "deleting a missing item is not an error")
	require.Nil(t, old)

	put(t, s, item(k, "v", S("x")))
	put(t, s, item(key("del", 1), "v", S("y")))
	_, err = s.Delete(ctx, k, dynastore.WriteOptions{})
	require.NoError(t, err)
	require.Nil(t, get(t, s, k))
	requireItem(t, item(key("del", 1), "v", S("y")), get(t, s, key("del", 1)), "a neighbour survives")
}

func testReturnValues(t *testing.T, s dynastore.Store) {
	ctx := ctxOf(t)
	k := key("rv")
	v1 := item(k, "a", N("1"), "b", S("x"))

	// PutItem: NONE and ALL_OLD only.
	got, err := s.Put(ctx, v1, dynastore.WriteOptions{Return: dynastore.ReturnAllOld})
	require.NoError(t, err)
	require.Nil(t, got, "ALL_OLD of a new item")
	got, err = s.Put(ctx, v1, dynastore.WriteOptions{Return: dynastore.ReturnNone})
	require.NoError(t, err)
	require.Nil(t, got)
	got, err = s.Put(ctx, item(k, "a", N("2")), dynastore.WriteOptions{Return: dynastore.ReturnAllOld})
	require.NoError(t, err)
	requireItem(t, v1, got)
	for _, rv := range []dynastore.ReturnValues{dynastore.ReturnAllNew, dynastore.ReturnUpdatedOld, dynastore.ReturnUpdatedNew} {
		_, err = s.Put(ctx, v1, dynastore.WriteOptions{Return: rv})
		require.ErrorIs(t, err, dynastore.ErrInvalid, "PutItem with ReturnValues %d", rv)
	}
	requireItem(t, item(k, "a", N("2")), get(t, s, k), "rejected puts wrote nothing")

	// UpdateItem: all five.
	put(t, s, v1)
	u := dynastore.Update{
		Set:    []dynastore.SetAction{{Attr: "a", Val: dynastore.Plus{A: dynastore.Ref{Attr: "a"}, B: N("1")}}, {Attr: "c", Val: S("new")}},
		Remove: []string{"b", "never"},
	}
	for _, c := range []struct {
		rv   dynastore.ReturnValues
		want Item
	}{
		{dynastore.ReturnNone, nil},
		{dynastore.ReturnAllOld, item(k, "a", N("1"), "b", S("x"))},
		{dynastore.ReturnAllNew, item(k, "a", N("2"), "c", S("new"))},
		{dynastore.ReturnUpdatedOld, Item{{Name: "a", Value: N("1")}, {Name: "b", Value: S("x")}}},
		{dynastore.ReturnUpdatedNew, Item{{Name: "a", Value: N("2")}, {Name: "c", Value: S("new")}}},
	} {
		// The same with memory lent for the result, holding leftovers.
		for _, into := range []Item{nil, make(Item, 1, 8)} {
			put(t, s, v1)
			got, err := s.Update(ctx, k, u, dynastore.WriteOptions{Return: c.rv, ReturnInto: into})
			require.NoError(t, err)
			requireSameItem(t, c.want, got, "UpdateItem ReturnValues %d, ReturnInto %v", c.rv, into != nil)
			stored, err := s.Get(ctx, k)
			require.NoError(t, err)
			requireSameItem(t, item(k, "a", N("2"), "c", S("new")), stored, "after ReturnValues %d", c.rv)
		}
	}

	// UpdateItem creating the item.
	k2 := key("rv2")
	got, err = s.Update(ctx, k2, dynastore.Update{Set: []dynastore.SetAction{{Attr: "a", Val: N("7")}}}, dynastore.WriteOptions{Return: dynastore.ReturnAllOld})
	require.NoError(t, err)
	require.Nil(t, got)
	_, err = s.Delete(ctx, k2, dynastore.WriteOptions{})
	require.NoError(t, err)
	got, err = s.Update(ctx, k2, dynastore.Update{Remove: []string{"zz"}}, dynastore.WriteOptions{Return: dynastore.ReturnUpdatedOld})
	require.NoError(t, err)
	require.Nil(t, got, "UPDATED_OLD with nothing updated")
	got, err = s.Update(ctx, key("rv3"), dynastore.Update{}, dynastore.WriteOptions{Return: dynastore.ReturnAllNew})
	require.NoError(t, err)
	requireItem(t, item(key("rv3")), got, "an empty update creates the bare item")

	// DeleteItem: NONE and ALL_OLD only.
	put(t, s, v1)
	for _, rv := range []dynastore.ReturnValues{dynastore.ReturnAllNew, dynastore.ReturnUpdatedOld, dynastore.ReturnUpdatedNew} {
		_, err = s.Delete(ctx, k, dynastore.WriteOptions{Return: rv})
		require.ErrorIs(t, err, dynastore.ErrInvalid, "DeleteItem with ReturnValues %d", rv)
	}
	require.NotNil(t, get(t, s, k), "rejected deletes deleted nothing")
	got, err = s.Delete(ctx, k, dynastore.WriteOptions{Return: dynastore.ReturnAllOld})
	require.NoError(t, err)
	requireItem(t, v1, got)
	got, err = s.Delete(ctx, k, dynastore.WriteOptions{Return: dynastore.ReturnNone})
	require.NoError(t, err)
	require.Nil(t, got)
}

// testOwnership checks dynastore.Store's ownership rules: the store copies
// what it is lent, keeps what is handed over (WriteOptions.Handover) as it
// would have kept a copy, and what it returns is a snapshot that later
// writes to the item (every kind of update, overwrite, delete) never change.
func testOwnership(t *testing.T, s dynastore.Store) {
	ctx := ctxOf(t)
	k, hk := key("copy"), key("handed")
	in := item(k, "b", B("abc"), "l", L{B("x")}, "m", M{"k": B("v")}, "bs", BS{[]byte("m")}, "n", N("1"))
	want := dynastore.CloneItem(in)
	_, err := s.Put(ctx, in, dynastore.WriteOptions{})
	require.NoError(t, err)
	// The caller may reuse what it lent.
	in.Get("b").(B)[0] = 'Z'
	in.Get("l").(L)[0].(B)[0] = 'Z'
	in.Get("bs").(BS)[0][0] = 'Z'
	in.Set("n", N("2")) // in place: a store that kept in itself would see it
	in.Set("extra", S("x"))
	requireItem(t, want, get(t, s, k))
	// A handed-over item is the store's from the call on (never touched
	// again here), stored as a copy of it would have been.
	_, err = s.Put(ctx, item(hk, "b", B("abc"), "l", L{B("x")}, "m", M{"k": B("v")}, "bs", BS{[]byte("m")}, "n", N("01.0")),
		dynastore.WriteOptions{Handover: true})
	require.NoError(t, err)
	wantHanded := item(hk, "b", B("abc"), "l", L{B("x")}, "m", M{"k": B("v")}, "bs", BS{[]byte("m")}, "n", N("1"))
	requireItem(t, wantHanded, get(t, s, hk))
	require.Equal(t, N("1"), get(t, s, hk).Get("n"), "a handed-over number is made canonical")

	for _, c := range []struct {
		k    dynastore.Key
		want Item
	}{{k, want}, {hk, wantHanded}} {
		var snapshots []Item
		snapshots = append(snapshots, get(t, s, c.k))
		items, err := s.BatchGet(ctx, []dynastore.Key{c.k})
		require.NoError(t, err)
		snapshots = append(snapshots, items[0])
		page, err := s.Query(ctx, dynastore.Query{PK: c.k.PK})
		require.NoError(t, err)
		require.Len(t, page.Items, 1)
		snapshots = append(snapshots, page.Items[0])
		sp, err := s.Scan(ctx, dynastore.Scan{Filter: dynastore.Compare{Attr: dynastore.AttrPK, Op: dynastore.OpEQ, Val: B(c.k.PK)}})
		require.NoError(t, err)
		require.Len(t, sp.Items, 1)
		snapshots = append(snapshots, sp.Items[0])
		nw, err := s.Update(ctx, c.k, dynastore.Update{}, dynastore.WriteOptions{Return: dynastore.ReturnAllNew})
		require.NoError(t, err)
		snapshots = append(snapshots, nw)

		_, err = s.Update(ctx, c.k, dynastore.Update{
			Set: []dynastore.SetAction{
				{Attr: "b", Val: B("new")},
				{Attr: "l", Val: dynastore.ListAppend{A: dynastore.Ref{Attr: "l"}, B: L{B("y")}}},
			},
			Add:    []dynastore.AttrValue{{Attr: "bs", Val: BS{[]byte("m2")}}, {Attr: "n", Val: N("1")}},
			Remove: []string{"m"},
		}, dynastore.WriteOptions{})
		require.NoError(t, err)
		old, err := s.Put(ctx, item(c.k, "b", B("other")), dynastore.WriteOptions{Return: dynastore.ReturnAllOld, Handover: true})
		require.NoError(t, err)
		_, err = s.Delete(ctx, c.k, dynastore.WriteOptions{})
		require.NoError(t, err)
		for i, snap := range snapshots {
			requireItem(t, c.want, snap, "%q: snapshot %d changed by later writes", c.k.PK, i)
		}
		require.Equal(t, L{B("x"), B("y")}, old.Get("l"), "the item as the update left it")
	}
}

func testBinaryKeys(t *testing.T, s dynastore.Store) {
	ctx := ctxOf(t)
	pks := []string{"\x00", "\x00\x00", "\x00\xff", "\xff", "\xff\x00", "\xff\xff", "a\x00b", "a"}
	for i, pk := range pks {
		put(t, s, item(dynastore.Key{PK: []byte(pk), SK: []byte{0xff, 0x00}}, "i", N(itoa(i))))
	}
	for i, pk := range pks {
		k := dynastore.Key{PK: []byte(pk), SK: []byte{0xff, 0x00}}
		requireItem(t, item(k, "i", N(itoa(i))), get(t, s, k), "pk %q", pk)
		require.Nil(t, get(t, s, dynastore.Key{PK: []byte(pk), SK: []byte{0xff}}), "sk prefix is another key")
		page, err := s.Query(ctx, dynastore.Query{PK: []byte(pk)})
		require.NoError(t, err)
		require.Len(t, page.Items, 1, "partition %q holds only its own item", pk)
	}
}

func testBatchGet(t *testing.T, s dynastore.Store) {
	ctx := ctxOf(t)
	var keys []dynastore.Key
	var want []Item
	var items []Item
	for i := range 250 {
		k := key("bg"+itoa(i/10), byte(i%10))
		keys = append(keys, k)
		if i%5 == 3 {
			want = append(want, nil) // missing
			continue
		}
		it := item(k, "i", N(itoa(i)))
		items = append(items, it)
		want = append(want, it)
	}
	putAll(t, s, items)
	// A repeated key is answered at each of its positions.
	keys = append(keys, keys[0], keys[3])
	want = append(want, want[0], nil)

	got, err := s.BatchGet(ctx, keys)
	require.NoError(t, err)
	require.Len(t, got, len(keys))
	for i := range keys {
		requireItem(t, want[i], got[i], "position %d", i)
	}
}

// testGetSnapshot checks a SnapshotReader's TransactGetItems: items in the
// order of the keys, nil where missing, its limits and its accounting.
func testGetSnapshot(t *testing.T, s dynastore.Store) {
	sr, ok := s.(dynastore.SnapshotReader)
	if !ok {
		t.Skip("the store reads no snapshots")
	}
	ctx := ctxOf(t)
	var keys []dynastore.Key
	var want, items []Item
	for i := range 100 {
		k := key("snap"+itoa(i/10), byte(i%10))
		keys = append(keys, k)
		if i%4 == 1 {
			want = append(want, nil)
			continue
		}
		it := item(k, "i", N(itoa(i)))
		items = append(items, it)
		want = append(want, it)
	}
	putAll(t, s, items)
	Observer(t).Reset()
	got, err := sr.GetSnapshot(ctx, keys)
	require.NoError(t, err)
	require.Len(t, got, len(keys))
	for i := range keys {
		requireItem(t, want[i], got[i], "position %d", i)
	}
	reqs := Observer(t).Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, dynastore.OpTransactGetItems, reqs[0].Op)
	require.Positive(t, reqs[0].RCU)

	_, err = sr.GetSnapshot(ctx, append(keys, key("snap-extra", 0)))
	require.ErrorIs(t, err, dynastore.ErrTxTooLarge, "101 items")
	_, err = sr.GetSnapshot(ctx, []dynastore.Key{keys[0], keys[0]})
	require.ErrorIs(t, err, dynastore.ErrInvalid, "one item twice")
}

// testBatchWrite checks a BatchWriter's BatchWriteItem: puts replace and
// deletes remove without conditions, MaxBatchWrite writes per request
// each billed as a single write, and a key named twice is refused before
// anything is written.
func testBatchWrite(t *testing.T, s dynastore.Store) {
	bw, ok := s.(dynastore.BatchWriter)
	if !ok {
		t.Skip("the store has no BatchWriteItem")
	}
	ctx := ctxOf(t)
	var old, puts []Item
	var dels []dynastore.Key
	for i := range 40 {
		k := key("bw"+itoa(i/10), byte(i%10))
		old = append(old, item(k, "i", N("0")))
		if i%4 == 0 {
			dels = append(dels, k)
			continue
		}
		puts = append(puts, item(k, "i", N(itoa(i))))
	}
	putAll(t, s, old)
	Observer(t).Reset()
	require.NoError(t, bw.BatchWrite(ctx, puts, dels))
	reqs := Observer(t).Requests()
	require.Len(t, reqs, 2, "40 writes are two requests")
	var wcu float64
	for _, r := range reqs {
		require.Equal(t, dynastore.OpBatchWriteItem, r.Op)
		wcu += r.WCU
	}
	require.InDelta(t, 40, wcu, 0.001, "one unit per small write, not a transaction's two")
	for i, it := range old {
		got, err := s.Get(ctx, it.Key())
		require.NoError(t, err)
		if i%4 == 0 {
			require.Nil(t, got, "deleted %d", i)
			continue
		}
		requireItem(t, item(it.Key(), "i", N(itoa(i))), got, "put %d", i)
	}

	Observer(t).Reset()
	k := key("bw-dup")
	err := bw.BatchWrite(ctx, []Item{item(k, "i", N("1"))}, []dynastore.Key{k})
	require.ErrorIs(t, err, dynastore.ErrInvalid, "one item twice")
	got, err := s.Get(ctx, k)
	require.NoError(t, err)
	require.Nil(t, got, "a refused batch writes nothing")
	big := item(key("bw-big"), "b", dynastore.B(make([]byte, dynastore.MaxItemSize)))
	require.ErrorIs(t, bw.BatchWrite(ctx, []Item{item(key("bw-small")), big}, nil), dynastore.ErrItemTooLarge)
	got, err = s.Get(ctx, key("bw-small"))
	require.NoError(t, err)
	require.Nil(t, got, "a batch with an item too large writes nothing")
}
