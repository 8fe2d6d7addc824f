package storetest

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
)

var queryScenarios = []scenario{
	{"QueryRanges", testQueryRanges},
	{"QueryPaging", testQueryPaging},
	{"QueryFilter", testQueryFilter},
	{"QueryPageSize", testQueryPageSize},
	{"QueryInvalid", testQueryInvalid},
}

// rangeSKs are sort keys that probe unsigned ordering and prefixes.
var rangeSKs = [][]byte{
	{0x00}, {0x00, 0x00}, {0x00, 0xff}, {0x01}, {0x01, 0x02}, {0x01, 0x02, 0x03},
	{0x7f}, {0x80}, {0x80, 0x00}, {0xfe}, {0xff}, {0xff, 0x00}, {0xff, 0xff}, {0xff, 0xff, 0xff},
}

// expectQuery is the reference answer: the sort keys of pk's partition that
// satisfy q's key condition, in q's order.
func expectQuery(sks [][]byte, q dynastore.Query) [][]byte {
	var out [][]byte
	for _, sk := range sks {
		a, b := bytes.Compare(sk, q.A), bytes.Compare(sk, q.B)
		ok := false
		switch q.Op {
		case dynastore.SKAll:
			ok = true
		case dynastore.SKEq:
			ok = a == 0
		case dynastore.SKLT:
			ok = a < 0
		case dynastore.SKLE:
			ok = a <= 0
		case dynastore.SKGT:
			ok = a > 0
		case dynastore.SKGE:
			ok = a >= 0
		case dynastore.SKBetween:
			ok = a >= 0 && b <= 0
		case dynastore.SKBeginsWith:
			ok = bytes.HasPrefix(sk, q.A)
		}
		if ok {
			out = append(out, sk)
		}
	}
	slices.SortFunc(out, bytes.Compare)
	if q.Reverse {
		slices.Reverse(out)
	}
	return out
}

func sortKeys(items []Item) [][]byte {
	out := make([][]byte, len(items))
	for i, it := range items {
		out[i] = it.Key().SK
	}
	return out
}

// queryAll pages through q with After, checking each page's shape, and
// returns every item in order.
func queryAll(t *testing.T, s dynastore.Store, q dynastore.Query) []Item {
	t.Helper()
	var all []Item
	for pages := 0; ; pages++ {
		require.Less(t, pages, 1000, "paging does not end")
		page, err := s.Query(ctxOf(t), q)
		require.NoError(t, err)
		for _, it := range page.Items {
			require.Equal(t, q.PK, []byte(it.Key().PK), "an item from another partition")
		}
		all = append(all, page.Items...)
		if page.Next == nil {
			return all
		}
		if q.Limit > 0 && q.Filter == nil {
			require.Len(t, page.Items, q.Limit, "a page cut by Limit is full")
		}
		require.NotEqual(t, q.After, page.Next, "paging makes progress")
		q.After = page.Next
	}
}

func testQueryRanges(t *testing.T, s dynastore.Store) {
	pk := []byte("q\x00r")
	var items []Item
	for i, sk := range rangeSKs {
		items = append(items, item(dynastore.Key{PK: pk, SK: sk}, "i", N(itoa(i))))
	}
	// Neighbouring partitions that a sloppy range would leak into.
	for _, other := range []string{"q", "q\x00", "q\x00r\x00", "q\x00q", "q\x00s", "q\x00r\xff"} {
		for _, sk := range [][]byte{{0x00}, {0x80}, {0xff}} {
			items = append(items, item(dynastore.Key{PK: []byte(other), SK: sk}, "other", BOOL(true)))
		}
	}
	putAll(t, s, items)

	for _, q := range []dynastore.Query{
		{Op: dynastore.SKAll},
		{Op: dynastore.SKEq, A: []byte{0x01, 0x02}},
		{Op: dynastore.SKEq, A: []byte{0x03}},
		{Op: dynastore.SKLT, A: []byte{0x80}},
		{Op: dynastore.SKLT, A: []byte{0x00}},
		{Op: dynastore.SKLE, A: []byte{0x80}},
		{Op: dynastore.SKLE, A: []byte{0xff, 0xff, 0xff, 0xff}},
		{Op: dynastore.SKGT, A: []byte{0x01}},
		{Op: dynastore.SKGT, A: []byte{0xff, 0xff, 0xff}},
		{Op: dynastore.SKGE, A: []byte{0x01}},
		{Op: dynastore.SKGE, A: []byte{0x7f, 0xff}},
		{Op: dynastore.SKBetween, A: []byte{0x01}, B: []byte{0xfe}},
		{Op: dynastore.SKBetween, A: []byte{0x00, 0x01}, B: []byte{0x01, 0x02, 0x00}},
		{Op: dynastore.SKBetween, A: []byte{0x80}, B: []byte{0x80}},
		{Op: dynastore.SKBeginsWith, A: []byte{0xff}},
		{Op: dynastore.SKBeginsWith, A: []byte{0xff, 0xff}},
		{Op: dynastore.SKBeginsWith, A: []byte{0x00}},
		{Op: dynastore.SKBeginsWith, A: []byte{0x01, 0x02}},
		{Op: dynastore.SKBeginsWith, A: []byte{0x02}},
		// Prefixes whose end (the last byte plus one) is 0x80 or more.
		{Op: dynastore.SKBeginsWith, A: []byte{0x7f}},
		{Op: dynastore.SKBeginsWith, A: []byte{0x80}},
		{Op: dynastore.SKBeginsWith, A: []byte{0x01, 0xa0}},
	} {
		for _, rev := range []bool{false, true} {
			q.PK, q.Reverse = pk, rev
			t.Run(fmt.Sprintf("op%d_%x_%x_rev%v", q.Op, q.A, q.B, rev), func(t *testing.T) {
				page, err := s.Query(ctxOf(t), q)
				require.NoError(t, err)
				require.Nil(t, page.Next, "a small partition fits one page")
				want := expectQuery(rangeSKs, q)
				require.Equal(t, fmtKeys(want), fmtKeys(sortKeys(page.Items)))
				for _, it := range page.Items {
					require.False(t, it.Has("other"))
				}
			})
		}
	}
}

func fmtKeys(ks [][]byte) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = fmt.Sprintf("%x", k)
	}
	return out
}

func testQueryPaging(t *testing.T, s dynastore.Store) {
	pk := []byte("paging")
	var items []Item
	var sks [][]byte
	for i := range 25 {
		sk := []byte{byte(i * 10), 0x00}
		sks = append(sks, sk)
		items = append(items, item(dynastore.Key{PK: pk, SK: sk}, "i", N(itoa(i))))
	}
	items = append(items, item(dynastore.Key{PK: []byte("paging2"), SK: []byte{0x00}}))
	putAll(t, s, items)

	for _, base := range []dynastore.Query{
		{Op: dynastore.SKAll},
		{Op: dynastore.SKBetween, A: []byte{30}, B: []byte{200}},
		{Op: dynastore.SKGT, A: []byte{50, 0x00}},
		{Op: dynastore.SKLE, A: []byte{100, 0x00}},
	} {
		for _, limit := range []int{1, 3, 7, 25, 26} {
			for _, rev := range []bool{false, true} {
				q := base
				q.PK, q.Limit, q.Reverse = pk, limit, rev
				t.Run(fmt.Sprintf("op%d_limit%d_rev%v", q.Op, limit, rev), func(t *testing.T) {
					want := expectQuery(sks, q)
					require.Equal(t, fmtKeys(want), fmtKeys(sortKeys(queryAll(t, s, q))), "every item exactly once, in order")
				})
			}
		}
	}

	// DynamoDB returns a LastEvaluatedKey whenever a page stops at Limit,
	// even when nothing follows; the next page is then empty.
	page, err := s.Query(ctxOf(t), dynastore.Query{PK: pk, Limit: 25})
	require.NoError(t, err)
	require.Len(t, page.Items, 25)
	require.Equal(t, sks[24], page.Next)
	page, err = s.Query(ctxOf(t), dynastore.Query{PK: pk, Limit: 25, After: page.Next})
	require.NoError(t, err)
	require.Empty(t, page.Items)
	require.Nil(t, page.Next)

	page, err = s.Query(ctxOf(t), dynastore.Query{PK: pk, Limit: 26})
	require.NoError(t, err)
	require.Len(t, page.Items, 25)
	require.Nil(t, page.Next, "a page that ends before Limit is the last")

	page, err = s.Query(ctxOf(t), dynastore.Query{PK: []byte("nobody")})
	require.NoError(t, err)
	require.Empty(t, page.Items)
	require.Nil(t, page.Next)
}

func testQueryFilter(t *testing.T, s dynastore.Store) {
	pk := []byte("filter")
	var items []Item
	for i := range 20 {
		items = append(items, item(dynastore.Key{PK: pk, SK: []byte{byte(i + 1)}}, "i", N(itoa(i)), "even", BOOL(i%2 == 0)))
	}
	putAll(t, s, items)
	even := cmp("even", dynastore.OpEQ, BOOL(true))

	// The filter runs after Limit: a page reads Limit items and may return none.
	page, err := s.Query(ctxOf(t), dynastore.Query{PK: pk, Limit: 1, After: []byte{1}, Filter: even})
	require.NoError(t, err)
	require.Empty(t, page.Items)
	require.Equal(t, []byte{2}, page.Next)

	page, err = s.Query(ctxOf(t), dynastore.Query{PK: pk, Limit: 4, Filter: even})
	require.NoError(t, err)
	require.Len(t, page.Items, 2)
	require.Equal(t, []byte{4}, page.Next)

	for _, limit := range []int{0, 3, 4} {
		for _, rev := range []bool{false, true} {
			got := queryAll(t, s, dynastore.Query{PK: pk, Limit: limit, Reverse: rev, Filter: even})
			require.Len(t, got, 10, "limit %d reverse %v", limit, rev)
			for _, it := range got {
				require.Equal(t, BOOL(true), it.Get("even"))
			}
		}
	}
	got := queryAll(t, s, dynastore.Query{PK: pk, Op: dynastore.SKGT, A: []byte{10}, Filter: dynastore.And{even, cmp("i", dynastore.OpLT, N("15"))}})
	require.Equal(t, fmtKeys([][]byte{{11}, {13}, {15}}), fmtKeys(sortKeys(got)))
}

func testQueryPageSize(t *testing.T, s dynastore.Store) {
	pk := []byte("pages")
	big := bytes.Repeat([]byte{0x5a}, 300*1024)
	var items []Item
	for i := range 6 {
		items = append(items, item(dynastore.Key{PK: pk, SK: []byte{byte(i)}}, "v", B(big)))
	}
	putAll(t, s, items)

	for _, rev := range []bool{false, true} {
		// A page reads up to 1 MB: the item that crosses 1 MB is the page's
		// last (four 300 KB items), and the page carries a Next.
		page, err := s.Query(ctxOf(t), dynastore.Query{PK: pk, Reverse: rev})
		require.NoError(t, err)
		require.Len(t, page.Items, 4, "reverse %v", rev)
		require.NotNil(t, page.Next)
		page, err = s.Query(ctxOf(t), dynastore.Query{PK: pk, Reverse: rev, After: page.Next})
		require.NoError(t, err)
		require.Len(t, page.Items, 2)
		require.Nil(t, page.Next)

		// A filter that drops everything still pages to the end. (DynamoDB
		// counts filtered-out items towards the 1 MB, DynamoDB Local does
		// not, so the page count is not checked here; the memory backend's
		// own tests check the service's rule.)
		got := queryAll(t, s, dynastore.Query{PK: pk, Reverse: rev, Filter: dynastore.Exists{Attr: "nothing"}})
		require.Empty(t, got)
	}
}

func testQueryInvalid(t *testing.T, s dynastore.Store) {
	ctx := ctxOf(t)
	pk := []byte("qi")
	put(t, s, item(dynastore.Key{PK: pk, SK: []byte{5}}))
	_, err := s.Query(ctx, dynastore.Query{PK: pk, Op: dynastore.SKBetween, A: []byte{2}, B: []byte{1}})
	require.ErrorIs(t, err, dynastore.ErrInvalid, "BETWEEN with bounds reversed")
	_, err = s.Query(ctx, dynastore.Query{PK: pk, Op: dynastore.SKGT, A: []byte{3}, After: []byte{1}})
	require.ErrorIs(t, err, dynastore.ErrInvalid, "After outside the key condition")
	_, err = s.Query(ctx, dynastore.Query{PK: pk, Filter: cmp("x", dynastore.OpLT, BOOL(true))})
	require.ErrorIs(t, err, dynastore.ErrInvalid, "invalid filter")
}
