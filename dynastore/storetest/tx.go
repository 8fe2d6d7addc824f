package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
)

var txScenarios = []scenario{
	{"TxAppliesEveryKind", testTxAppliesEveryKind},
	{"TxAllOrNothing", testTxAllOrNothing},
	{"TxReasonsWithOldItems", testTxReasons},
	{"TxConditionCheck", testTxCheck},
	{"TxActionLimit", testTxActionLimit},
	{"TxSizeLimit", testTxSizeLimit},
	{"TxInvalid", testTxInvalid},
}

func txPut(it Item, c dynastore.Cond) dynastore.TxAction {
	return dynastore.TxAction{Op: dynastore.TxPut, Item: it, Cond: c}
}

func txUpdate(k dynastore.Key, u dynastore.Update, c dynastore.Cond) dynastore.TxAction {
	return dynastore.TxAction{Op: dynastore.TxUpdate, Key: k, Update: &u, Cond: c}
}

func txDelete(k dynastore.Key, c dynastore.Cond) dynastore.TxAction {
	return dynastore.TxAction{Op: dynastore.TxDelete, Key: k, Cond: c}
}

func txCheck(k dynastore.Key, c dynastore.Cond) dynastore.TxAction {
	return dynastore.TxAction{Op: dynastore.TxCheck, Key: k, Cond: c}
}

func testTxAppliesEveryKind(t *testing.T, s dynastore.Store) {
	ctx := ctxOf(t)
	a, b, c, d, e := key("txa"), key("txb"), key("txc"), key("txd"), key("txa", 1)
	put(t, s, item(b, "n", N("1")))
	put(t, s, item(c, "v", S("gone")))
	put(t, s, item(d, "v", S("checked")))
	err := s.Transact(ctx, []dynastore.TxAction{
		txPut(item(a, "v", S("new"), "n", N("1.50")), dynastore.NotExists{Attr: dynastore.AttrPK}),
		txUpdate(b, dynastore.Update{Add: []av{{Attr: "n", Val: N("41")}}, Set: []set{{Attr: "w", Val: BS{[]byte("m")}}}}, dynastore.Exists{Attr: dynastore.AttrPK}),
		txDelete(c, cmp("v", dynastore.OpEQ, S("gone"))),
		txCheck(d, cmp("v", dynastore.OpEQ, S("checked"))),
		txUpdate(e, dynastore.Update{Set: []set{{Attr: "x", Val: N("1")}}}, nil),
	})
	require.NoError(t, err)
	requireSameItem(t, item(a, "v", S("new"), "n", N("1.5")), get(t, s, a))
	requireSameItem(t, item(b, "n", N("42"), "w", BS{[]byte("m")}), get(t, s, b))
	require.Nil(t, get(t, s, c))
	requireItem(t, item(d, "v", S("checked")), get(t, s, d))
	requireItem(t, item(e, "x", N("1")), get(t, s, e), "a transactional update creates the item")
}

func testTxAllOrNothing(t *testing.T, s dynastore.Store) {
	ctx := ctxOf(t)
	a, b, c := key("aon-a"), key("aon-b"), key("aon-c")
	put(t, s, item(b, "n", N("1")))
	put(t, s, item(c, "v", S("keep")))
	err := s.Transact(ctx, []dynastore.TxAction{
		txPut(item(a, "v", S("new")), nil),
		txUpdate(b, dynastore.Update{Add: []av{{Attr: "n", Val: N("1")}}}, cmp("n", dynastore.OpEQ, N("2"))),
		txDelete(c, nil),
	})
	tc := requireTxCanceled(t, err, dynastore.ReasonNone, dynastore.ReasonConditionalFailed, dynastore.ReasonNone)
	require.Nil(t, tc.Reasons[1].Old, "not asked for")
	require.NotErrorIs(t, err, dynastore.ErrTxConflict)
	require.NotErrorIs(t, err, dynastore.ErrConditionFailed)
	require.Nil(t, get(t, s, a), "nothing of a canceled transaction is written")
	requireItem(t, item(b, "n", N("1")), get(t, s, b))
	requireItem(t, item(c, "v", S("keep")), get(t, s, c))
}

func testTxReasons(t *testing.T, s dynastore.Store) {
	ctx := ctxOf(t)
	a, b, c, d := key("rs-a"), key("rs-b"), key("rs-c"), key("rs-d")
	put(t, s, item(a, "v", S("A"), "n", N("1.50")))
	put(t, s, item(c, "v", S("C")))
	actions := []dynastore.TxAction{
		txUpdate(a, dynastore.Update{Remove: []string{"v"}}, dynastore.NotExists{Attr: dynastore.AttrPK}), // fails, present
		txCheck(b, dynastore.Exists{Attr: dynastore.AttrPK}),                                              // fails, absent
		txDelete(c, cmp("v", dynastore.OpEQ, S("C"))),                                                     // holds
		txPut(item(d), dynastore.Exists{Attr: dynastore.AttrPK}),                                          // fails, absent
	}
	for i := range actions {
		actions[i].OldOnFailure = true
	}
	err := s.Transact(ctx, actions)
	tc := requireTxCanceled(t, err, dynastore.ReasonConditionalFailed, dynastore.ReasonConditionalFailed, dynastore.ReasonNone, dynastore.ReasonConditionalFailed)
	requireSameItem(t, item(a, "v", S("A"), "n", N("1.5")), tc.Reasons[0].Old, "the current item of a failed action")
	require.Nil(t, tc.Reasons[1].Old, "no current item")
	require.Nil(t, tc.Reasons[2].Old, "only failed actions carry items")
	require.Nil(t, tc.Reasons[3].Old)
	requireItem(t, item(c, "v", S("C")), get(t, s, c))
}

func testTxCheck(t *testing.T, s dynastore.Store) {
	ctx := ctxOf(t)
	lock, data := key("lock"), key("data")
	put(t, s, item(lock, "owner", S("me"), "ver", N("3")))
	write := txPut(item(data, "v", S("1")), nil)

	err := s.Transact(ctx, []dynastore.TxAction{txCheck(lock, cmp("owner", dynastore.OpEQ, S("you"))), write})
	requireTxCanceled(t, err, dynastore.ReasonConditionalFailed, dynastore.ReasonNone)
	require.Nil(t, get(t, s, data))

	err = s.Transact(ctx, []dynastore.TxAction{
		txCheck(lock, dynastore.And{cmp("owner", dynastore.OpEQ, S("me")), cmp("ver", dynastore.OpEQ, N("3"))}), write,
	})
	require.NoError(t, err)
	requireItem(t, item(data, "v", S("1")), get(t, s, data))
	requireItem(t, item(lock, "owner", S("me"), "ver", N("3")), get(t, s, lock), "a check writes nothing")

	// A check alone, on an absent item.
	err = s.Transact(ctx, []dynastore.TxAction{txCheck(key("nolock"), dynastore.NotExists{Attr: dynastore.AttrPK})})
	require.NoError(t, err)
	require.Nil(t, get(t, s, key("nolock")))
}

func testTxActionLimit(t *testing.T, s dynastore.Store) {
	ctx := ctxOf(t)
	mk := func(n int, prefix string) ([]dynastore.TxAction, []dynastore.Key) {
		var acts []dynastore.TxAction
		var keys []dynastore.Key
		for i := range n {
			k := key(prefix+itoa(i/10), byte(i%10))
			keys = append(keys, k)
			acts = append(acts, txPut(item(k, "i", N(itoa(i))), nil))
		}
		return acts, keys
	}
	acts, keys := mk(dynastore.MaxTxActions+1, "over")
	err := s.Transact(ctx, acts)
	require.ErrorIs(t, err, dynastore.ErrTxTooLarge)
	got, err := s.BatchGet(ctx, keys)
	require.NoError(t, err)
	for i, it := range got {
		require.Nil(t, it, "item %d of a rejected transaction", i)
	}

	acts, keys = mk(dynastore.MaxTxActions, "max")
	require.NoError(t, s.Transact(ctx, acts))
	got, err = s.BatchGet(ctx, keys)
	require.NoError(t, err)
	for i, it := range got {
		requireItem(t, item(keys[i], "i", N(itoa(i))), it)
	}
}

func testTxSizeLimit(t *testing.T, s dynastore.Store) {
	ctx := ctxOf(t)
	// Eleven items of 390 KB make 4.3 MB, over the 4 MB a transaction may carry.
	big := make([]byte, 390*1024)
	var acts []dynastore.TxAction
	for i := range 11 {
		acts = append(acts, txPut(item(key("tx4mb"+itoa(i)), "v", B(big)), nil))
	}
	err := s.Transact(ctx, acts)
	require.ErrorIs(t, err, dynastore.ErrTxTooLarge)
	require.Nil(t, get(t, s, key("tx4mb0")))

	// One item over 400 KB.
	err = s.Transact(ctx, []dynastore.TxAction{
		txPut(item(key("txbig-ok"), "v", S("x")), nil),
		txPut(item(key("txbig"), "v", B(make([]byte, dynastore.MaxItemSize))), nil),
	})
	require.ErrorIs(t, err, dynastore.ErrItemTooLarge)
	require.Nil(t, get(t, s, key("txbig-ok")))

	// An update that would grow an item over 400 KB.
	k := key("txgrow")
	put(t, s, item(k, "a", B(make([]byte, 300*1024))))
	err = s.Transact(ctx, []dynastore.TxAction{
		txUpdate(k, dynastore.Update{Set: []set{{Attr: "b", Val: B(make([]byte, 200*1024))}}}, nil),
	})
	require.ErrorIs(t, err, dynastore.ErrItemTooLarge)
	got := get(t, s, k)
	require.False(t, got.Has("b"))
}

func testTxInvalid(t *testing.T, s dynastore.Store) {
	for i, c := range []struct {
		name string
		acts func(a, b dynastore.Key) []dynastore.TxAction
		err  error
	}{
		{"two actions on one item", func(a, b dynastore.Key) []dynastore.TxAction {
			return []dynastore.TxAction{txPut(item(a), nil), txCheck(a, dynastore.NotExists{Attr: dynastore.AttrPK})}
		}, dynastore.ErrInvalid},
		{"put and update of one item", func(a, b dynastore.Key) []dynastore.TxAction {
			return []dynastore.TxAction{txPut(item(b, "s", S("x")), nil), txUpdate(b, dynastore.Update{Remove: []string{"x"}}, nil)}
		}, dynastore.ErrInvalid},
		{"update without actions", func(a, b dynastore.Key) []dynastore.TxAction {
			// TransactWriteItems requires an UpdateExpression, unlike UpdateItem.
			return []dynastore.TxAction{txPut(item(a), nil), txUpdate(b, dynastore.Update{}, nil)}
		}, dynastore.ErrInvalid},
		{"update DynamoDB cannot apply", func(a, b dynastore.Key) []dynastore.TxAction {
			return []dynastore.TxAction{txPut(item(a), nil), txUpdate(b, dynastore.Update{Add: []av{{Attr: "s", Val: N("1")}}}, nil)}
		}, dynastore.ErrInvalid},
		{"update naming an attribute twice", func(a, b dynastore.Key) []dynastore.TxAction {
			return []dynastore.TxAction{txPut(item(a), nil), txUpdate(b, dynastore.Update{Remove: []string{"s", "s"}}, nil)}
		}, dynastore.ErrInvalid},
		{"check without a condition", func(a, b dynastore.Key) []dynastore.TxAction {
			return []dynastore.TxAction{txPut(item(a), nil), txCheck(b, nil)}
		}, dynastore.ErrInvalid},
		{"no actions", func(a, b dynastore.Key) []dynastore.TxAction { return nil }, dynastore.ErrInvalid},
		{"key too large", func(a, b dynastore.Key) []dynastore.TxAction {
			return []dynastore.TxAction{txPut(item(a), nil), txDelete(dynastore.Key{PK: make([]byte, dynastore.MaxPKSize+1), SK: []byte{0}}, nil)}
		}, dynastore.ErrKeyTooLarge},
		{"empty key", func(a, b dynastore.Key) []dynastore.TxAction {
			return []dynastore.TxAction{txPut(item(a), nil), txCheck(dynastore.Key{PK: []byte("x"), SK: nil}, dynastore.Exists{Attr: dynastore.AttrPK})}
		}, dynastore.ErrKeyTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := key("inv-a"+itoa(i)), key("inv-b"+itoa(i))
			put(t, s, item(b, "s", S("str")))
			err := s.Transact(ctxOf(t), c.acts(a, b))
			require.ErrorIs(t, err, c.err)
			require.NotErrorIs(t, err, dynastore.ErrTxCanceled)
			require.Nil(t, get(t, s, a), "nothing written")
			requireItem(t, item(b, "s", S("str")), get(t, s, b))
		})
	}
}
