package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/dynamo"
	"github.com/redamo/redamo/dynastore/dynamo/dynamotest"
)

func key(s string) dynastore.Key { return dynastore.Key{PK: []byte(s), SK: []byte{0}} }

func item(k string, attrs ...any) dynastore.Item {
	it := dynastore.Item{{Name: dynastore.AttrPK, Value: dynastore.B(k)}, {Name: dynastore.AttrSK, Value: dynastore.B{0}}}
	for i := 0; i+1 < len(attrs); i += 2 {
		it.Set(attrs[i].(string), attrs[i+1].(dynastore.Value))
	}
	return it
}

// newStore returns a store on a fresh table and the stats it reports to.
func newStore(t *testing.T) (*dynamo.Store, *dynastore.Stats) {
	stats := dynastore.NewStats()
	return dynamotest.NewStore(t, dynamo.Config{Observer: stats}), stats
}

// Every logical request is reported once, under the context's label, with
// the capacity DynamoDB says it consumed.
func TestRequestAccounting(t *testing.T) {
	s, stats := newStore(t)
	ctx := dynastore.WithLabel(context.Background(), "set")
	_, err := s.Put(ctx, item("a", "v", dynastore.B("1")), dynastore.WriteOptions{})
	require.NoError(t, err)
	_, err = s.Update(ctx, key("a"), dynastore.Update{Add: []dynastore.AttrValue{{Attr: "n", Val: dynastore.N("1")}}}, dynastore.WriteOptions{})
	require.NoError(t, err)
	gctx := dynastore.WithLabel(context.Background(), "get")
	_, err = s.Get(gctx, key("a"))
	require.NoError(t, err)
	_, err = s.Delete(ctx, key("a"), dynastore.WriteOptions{Cond: dynastore.Exists{Attr: "nope"}})
	require.ErrorIs(t, err, dynastore.ErrConditionFailed)

	snap := stats.Snapshot()
	require.Equal(t, dynastore.StatRow{Requests: 1, WCU: 1}, snap[dynastore.StatKey{Label: "set", Op: dynastore.OpPutItem}])
	require.Equal(t, dynastore.StatRow{Requests: 1, WCU: 1}, snap[dynastore.StatKey{Label: "set", Op: dynastore.OpUpdateItem}])
	require.Equal(t, dynastore.StatRow{Requests: 1, RCU: 1}, snap[dynastore.StatKey{Label: "get", Op: dynastore.OpGetItem}])
	require.Equal(t, int64(1), snap[dynastore.StatKey{Label: "set", Op: dynastore.OpDeleteItem}].Errors)
	require.Len(t, snap, 4)
}

func TestConditionFailedReturnsOld(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	old := item("k", "v", dynastore.B("old"), "n", dynastore.N("7"))
	_, err := s.Put(ctx, old, dynastore.WriteOptions{})
	require.NoError(t, err)

	_, err = s.Put(ctx, item("k"), dynastore.WriteOptions{Cond: dynastore.NotExists{Attr: dynastore.AttrPK}, OldOnFailure: true})
	var cf *dynastore.ConditionFailedError
	require.ErrorAs(t, err, &cf)
	require.Equal(t, old.Sorted(), cf.Old.Sorted())

	_, err = s.Put(ctx, item("k"), dynastore.WriteOptions{Cond: dynastore.NotExists{Attr: dynastore.AttrPK}})
	require.ErrorAs(t, err, &cf)
	require.Nil(t, cf.Old)

	got, err := s.Update(ctx, key("k"), dynastore.Update{Set: []dynastore.SetAction{{Attr: "v", Val: dynastore.B("new")}}},
		dynastore.WriteOptions{Cond: dynastore.Compare{Attr: "n", Op: dynastore.OpEQ, Val: dynastore.N("7")}, Return: dynastore.ReturnAllOld})
	require.NoError(t, err)
	require.Equal(t, old.Sorted(), got.Sorted())
}

// BatchGet splits into requests of 100 distinct keys, keeps the caller's
// order, answers duplicates and reports nil for missing items.
func TestBatchGet(t *testing.T) {
	s, stats := newStore(t)
	ctx := context.Background()
	for i := 0; i < 150; i += 2 {
		_, err := s.Put(ctx, item(fmt.Sprint(i), "i", dynastore.N(fmt.Sprint(i))), dynastore.WriteOptions{})
		require.NoError(t, err)
	}
	var keys []dynastore.Key
	for i := 149; i >= 0; i-- {
		keys = append(keys, key(fmt.Sprint(i)))
	}
	keys = append(keys, key("4"), key("5"))
	got, err := s.BatchGet(dynastore.WithLabel(ctx, "mget"), keys)
	require.NoError(t, err)
	require.Len(t, got, len(keys))
	for i, k := range keys {
		var n int
		fmt.Sscan(string(k.PK), &n)
		if n%2 == 1 {
			require.Nil(t, got[i], "key %s", k.PK)
			continue
		}
		require.Equal(t, dynastore.N(fmt.Sprint(n)), got[i].Get("i"), "key %s", k.PK)
	}
	require.Equal(t, int64(2), stats.Requests("mget", dynastore.OpBatchGetItem))
}

func TestTransactReasons(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	_, err := s.Put(ctx, item("x", "v", dynastore.B("1")), dynastore.WriteOptions{})
	require.NoError(t, err)
	err = s.Transact(ctx, []dynastore.TxAction{
		{Op: dynastore.TxPut, Item: item("y")},
		{Op: dynastore.TxCheck, Key: key("x"), Cond: dynastore.NotExists{Attr: dynastore.AttrPK}, OldOnFailure: true},
		{Op: dynastore.TxUpdate, Key: key("z"), Update: &dynastore.Update{Remove: []string{"v"}}},
	})
	var tc *dynastore.TxCanceledError
	require.ErrorAs(t, err, &tc)
	require.False(t, errors.Is(err, dynastore.ErrTxConflict))
	for i := range tc.Reasons {
		tc.Reasons[i].Old = tc.Reasons[i].Old.Sorted()
	}
	require.Equal(t, []dynastore.TxReason{
		{Code: dynastore.ReasonNone},
		{Code: dynastore.ReasonConditionalFailed, Old: item("x", "v", dynastore.B("1")).Sorted()},
		{Code: dynastore.ReasonNone},
	}, tc.Reasons)

	// A REMOVE still creates a missing item, and an always-true check
	// (which needs an expression in DynamoDB) passes.
	require.NoError(t, s.Transact(ctx, []dynastore.TxAction{
		{Op: dynastore.TxUpdate, Key: key("z"), Update: &dynastore.Update{Remove: []string{"v"}}},
		{Op: dynastore.TxCheck, Key: key("x"), Cond: dynastore.And{}},
	}))
	got, err := s.Get(ctx, key("z"))
	require.NoError(t, err)
	require.Equal(t, item("z").Sorted(), got.Sorted())
}

func TestQueryAndScan(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	for _, sk := range []string{"a", "b", "c", "d"} {
		it := dynastore.Item{{Name: dynastore.AttrPK, Value: dynastore.B("p")}, {Name: dynastore.AttrSK, Value: dynastore.B(sk)}, {Name: "v", Value: dynastore.S(sk)}}
		_, err := s.Put(ctx, it, dynastore.WriteOptions{})
		require.NoError(t, err)
	}
	page, err := s.Query(ctx, dynastore.Query{PK: []byte("p"), Op: dynastore.SKGT, A: []byte("a"), Reverse: true, Limit: 2})
	require.NoError(t, err)
	require.Len(t, page.Items, 2)
	require.Equal(t, dynastore.S("d"), page.Items[0].Get("v"))
	require.Equal(t, []byte("c"), page.Next)
	page, err = s.Query(ctx, dynastore.Query{PK: []byte("p"), Op: dynastore.SKGT, A: []byte("a"), Reverse: true, After: page.Next,
		Filter: dynastore.Compare{Attr: "v", Op: dynastore.OpNE, Val: dynastore.S("c")}})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, dynastore.S("b"), page.Items[0].Get("v"))
	require.Nil(t, page.Next)

	var all []dynastore.Item
	var after *dynastore.Key
	for {
		sp, err := s.Scan(ctx, dynastore.Scan{Limit: 3, After: after})
		require.NoError(t, err)
		all = append(all, sp.Items...)
		if sp.Next == nil {
			break
		}
		after = sp.Next
	}
	require.Len(t, all, 4)
}

func TestClientSideLimits(t *testing.T) {
	s, stats := newStore(t)
	ctx := context.Background()
	_, err := s.Get(ctx, dynastore.Key{PK: make([]byte, dynastore.MaxPKSize+1), SK: []byte{0}})
	require.ErrorIs(t, err, dynastore.ErrKeyTooLarge)
	_, err = s.Put(ctx, item("big", "v", dynastore.B(make([]byte, dynastore.MaxItemSize))), dynastore.WriteOptions{})
	require.ErrorIs(t, err, dynastore.ErrItemTooLarge)
	acts := make([]dynastore.TxAction, dynastore.MaxTxActions+1)
	for i := range acts {
		acts[i] = dynastore.TxAction{Op: dynastore.TxDelete, Key: key(fmt.Sprint(i))}
	}
	require.ErrorIs(t, s.Transact(ctx, acts), dynastore.ErrTxTooLarge)
	acts = acts[:11]
	for i := range acts {
		acts[i] = dynastore.TxAction{Op: dynastore.TxPut, Item: item(fmt.Sprint(i), "v", dynastore.B(make([]byte, 390*1024)))}
	}
	require.ErrorIs(t, s.Transact(ctx, acts), dynastore.ErrTxTooLarge)
	require.Empty(t, stats.Snapshot(), "limits are checked before any request")

	// DynamoDB's own check agrees: an update that grows an item too far.
	_, err = s.Put(ctx, item("grow", "a", dynastore.B(make([]byte, 300*1024))), dynastore.WriteOptions{})
	require.NoError(t, err)
	_, err = s.Update(ctx, key("grow"), dynastore.Update{Set: []dynastore.SetAction{{Attr: "b", Val: dynastore.B(make([]byte, 200*1024))}}}, dynastore.WriteOptions{})
	require.ErrorIs(t, err, dynastore.ErrItemTooLarge)
}

// CountItems is DescribeTable's ItemCount, not exact, asked for once and
// then served from the cache: monitoring may call it on every scrape.
func TestCountItems(t *testing.T) {
	s, stats := newStore(t)
	ctx := dynastore.WithLabel(context.Background(), "info")
	for _, k := range []string{"a", "b"} {
		_, err := s.Put(ctx, item(k, "v", dynastore.B("1")), dynastore.WriteOptions{})
		require.NoError(t, err)
	}
	for range 3 {
		n, exact, err := s.CountItems(ctx, nil, func(dynastore.Item) { t.Error("each called") })
		require.NoError(t, err)
		require.False(t, exact)
		require.GreaterOrEqual(t, n, int64(0))
	}
	snap := stats.Snapshot()
	require.Equal(t, int64(1), snap[dynastore.StatKey{Label: "info", Op: dynastore.OpDescribeTable}].Requests)
	require.Zero(t, snap[dynastore.StatKey{Label: "info", Op: dynastore.OpScan}].Requests)
}
