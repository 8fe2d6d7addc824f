package storetest

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
)

var limitScenarios = []scenario{
	{"ItemSizeLimit", testItemSizeLimit},
	{"KeyLimits", testKeyLimits},
}

func testItemSizeLimit(t *testing.T, s dynastore.Store) {
	ctx := ctxOf(t)
	k := key("big") // pk "big" (2+3 bytes), sk 0x00 (2+1), attribute "v" (1)
	overhead := 2 + 3 + 2 + 1 + 1
	fits := item(k, "v", B(bytes.Repeat([]byte{0xab}, dynastore.MaxItemSize-overhead)))
	require.Equal(t, dynastore.MaxItemSize, dynastore.ItemSize(fits))

	put(t, s, fits)
	requireItem(t, fits, get(t, s, k), "an item of exactly 400 KB")

	small := item(k, "v", B("small"))
	put(t, s, small)
	_, err := s.Put(ctx, item(k, "v", B(make([]byte, dynastore.MaxItemSize-overhead+1))), dynastore.WriteOptions{})
	require.ErrorIs(t, err, dynastore.ErrItemTooLarge, "one byte over")
	requireItem(t, small, get(t, s, k), "nothing written")

	// Growing past the limit with an update.
	_, err = s.Update(ctx, k, dynastore.Update{Set: []set{{Attr: "w", Val: B(make([]byte, dynastore.MaxItemSize-overhead))}}}, dynastore.WriteOptions{})
	require.ErrorIs(t, err, dynastore.ErrItemTooLarge)
	requireItem(t, small, get(t, s, k), "nothing written")

	// Numbers, lists and maps count as DynamoDB counts them: this item is
	// exactly 400 KB too.
	mixed := item(k, "n", N("-12.5"), "l", L{N("1"), B("xyz")}, "m", M{"ab": NULL{}})
	rest := dynastore.MaxItemSize - dynastore.ItemSize(mixed) - 1
	mixed.Set("v", B(make([]byte, rest)))
	require.Equal(t, dynastore.MaxItemSize, dynastore.ItemSize(mixed))
	put(t, s, mixed)
	mixed.Set("v", B(make([]byte, rest+1)))
	_, err = s.Put(ctx, mixed, dynastore.WriteOptions{})
	require.ErrorIs(t, err, dynastore.ErrItemTooLarge)
}

func testKeyLimits(t *testing.T, s dynastore.Store) {
	ctx := ctxOf(t)
	maxPK := bytes.Repeat([]byte{0xff}, dynastore.MaxPKSize)
	maxSK := bytes.Repeat([]byte{0xfe}, dynastore.MaxSKSize)
	ok := dynastore.Key{PK: maxPK, SK: maxSK}
	put(t, s, item(ok, "v", S("x")))
	requireItem(t, item(ok, "v", S("x")), get(t, s, ok), "the largest keys")
	page, err := s.Query(ctx, dynastore.Query{PK: maxPK, Op: dynastore.SKEq, A: maxSK})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)

	for _, c := range []struct {
		name string
		k    dynastore.Key
	}{
		{"pk over 2048", dynastore.Key{PK: append(bytes.Clone(maxPK), 0), SK: []byte{0}}},
		{"sk over 1024", dynastore.Key{PK: []byte("a"), SK: append(bytes.Clone(maxSK), 0)}},
		{"empty pk", dynastore.Key{PK: nil, SK: []byte{0}}},
		{"empty sk", dynastore.Key{PK: []byte("a"), SK: []byte{}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := ctxOf(t)
			_, err := s.Put(ctx, item(c.k, "v", S("x")), dynastore.WriteOptions{})
			require.ErrorIs(t, err, dynastore.ErrKeyTooLarge, "Put")
			_, err = s.Get(ctx, c.k)
			require.ErrorIs(t, err, dynastore.ErrKeyTooLarge, "Get")
			_, err = s.Update(ctx, c.k, dynastore.Update{}, dynastore.WriteOptions{})
			require.ErrorIs(t, err, dynastore.ErrKeyTooLarge, "Update")
			_, err = s.Delete(ctx, c.k, dynastore.WriteOptions{})
			require.ErrorIs(t, err, dynastore.ErrKeyTooLarge, "Delete")
			_, err = s.BatchGet(ctx, []dynastore.Key{key("fine"), c.k})
			require.ErrorIs(t, err, dynastore.ErrKeyTooLarge, "BatchGet")
			err = s.Transact(ctx, []dynastore.TxAction{txUpdate(c.k, dynastore.Update{Remove: []string{"v"}}, nil)})
			require.ErrorIs(t, err, dynastore.ErrKeyTooLarge, "Transact")
		})
	}
	_, err = s.Query(ctx, dynastore.Query{PK: nil})
	require.ErrorIs(t, err, dynastore.ErrKeyTooLarge, "Query on an empty partition key")
	_, err = s.Query(ctx, dynastore.Query{PK: []byte("a"), Op: dynastore.SKGE, A: nil})
	require.ErrorIs(t, err, dynastore.ErrKeyTooLarge, "Query with an empty sort key bound")
	_, err = s.Query(ctx, dynastore.Query{PK: []byte("a"), Op: dynastore.SKGE, A: append(bytes.Clone(maxSK), 0)})
	require.ErrorIs(t, err, dynastore.ErrKeyTooLarge, "Query with a sort key bound over 1024")

	sp, err := s.Scan(ctx, dynastore.Scan{})
	require.NoError(t, err)
	require.Len(t, sp.Items, 1, "only the valid item exists")
}
