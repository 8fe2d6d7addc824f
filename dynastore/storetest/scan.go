package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
)

var scanScenarios = []scenario{
	{"ScanPaging", testScanPaging},
	{"ScanSegments", testScanSegments},
	{"ScanEmpty", testScanEmpty},
}

// scanItems are 300 items over 30 partitions of 10.
func scanItems() []Item {
	var out []Item
	for p := range 30 {
		for i := range 10 {
			n := p*10 + i
			out = append(out, item(dynastore.Key{PK: []byte(fmt.Sprintf("scan\x00%02d", p)), SK: []byte{byte(i), 0xff}}, "n", N(itoa(n)), "odd", BOOL(n%2 == 1)))
		}
	}
	return out
}

func keyID(k dynastore.Key) string { return fmt.Sprintf("%x/%x", k.PK, k.SK) }

// scanAll pages through sc and returns how often each key was seen.
func scanAll(t *testing.T, s dynastore.Store, sc dynastore.Scan) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for pages := 0; ; pages++ {
		require.Less(t, pages, 1000, "paging does not end")
		page, err := s.Scan(ctxOf(t), sc)
		require.NoError(t, err)
		if sc.Limit > 0 && page.Next != nil && sc.Filter == nil {
			require.Len(t, page.Items, sc.Limit, "a page cut by Limit is full")
		}
		for _, it := range page.Items {
			seen[keyID(it.Key())]++
		}
		if page.Next == nil {
			return seen
		}
		sc.After = page.Next
	}
}

func requireOnce(t *testing.T, want []Item, seen map[string]int) {
	t.Helper()
	for _, it := range want {
		id := keyID(it.Key())
		require.Equal(t, 1, seen[id], "item %s seen %d times", id, seen[id])
	}
	require.Len(t, seen, len(want), "no other items")
}

func testScanPaging(t *testing.T, s dynastore.Store) {
	all := scanItems()
	putAll(t, s, all)
	requireOnce(t, all, scanAll(t, s, dynastore.Scan{}))
	requireOnce(t, all, scanAll(t, s, dynastore.Scan{Limit: 7}))
	requireOnce(t, all, scanAll(t, s, dynastore.Scan{Limit: 100}))

	var odd []Item
	for _, it := range all {
		if it.Get("odd") == BOOL(true) {
			odd = append(odd, it)
		}
	}
	requireOnce(t, odd, scanAll(t, s, dynastore.Scan{Limit: 13, Filter: cmp("odd", dynastore.OpEQ, BOOL(true))}))

	// The filter runs after Limit.
	page, err := s.Scan(ctxOf(t), dynastore.Scan{Limit: 5, Filter: dynastore.Exists{Attr: "nothing"}})
	require.NoError(t, err)
	require.Empty(t, page.Items)
	require.NotNil(t, page.Next)
}

func testScanSegments(t *testing.T, s dynastore.Store) {
	all := scanItems()
	putAll(t, s, all)
	const segments = 3
	seen := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, segments)
	for seg := range segments {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := dynastore.Scan{Limit: 11, Segment: seg, Segments: segments}
			for pages := 0; pages < 1000; pages++ {
				page, err := s.Scan(ctxOf(t), sc)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for _, it := range page.Items {
					seen[keyID(it.Key())]++
				}
				mu.Unlock()
				if page.Next == nil {
					return
				}
				sc.After = page.Next
			}
			errs <- errors.New("segment paging does not end")
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	requireOnce(t, all, seen)

	_, err := s.Scan(ctxOf(t), dynastore.Scan{Segment: 3, Segments: 3})
	require.ErrorIs(t, err, dynastore.ErrInvalid, "segment out of range")
}

func testScanEmpty(t *testing.T, s dynastore.Store) {
	page, err := s.Scan(ctxOf(t), dynastore.Scan{Limit: 10})
	require.NoError(t, err)
	require.Empty(t, page.Items)
	require.Nil(t, page.Next)
}

var accountingScenarios = []scenario{
	{"ObserverSeesEveryRequest", testObserver},
	{"ConcurrentConditionalIncrements", testConcurrentIncrements},
}

func testObserver(t *testing.T, s dynastore.Store) {
	rec := Observer(t)
	ctx := dynastore.WithLabel(t.Context(), "observed")
	k := key("obs")
	type step struct {
		op  string
		run func() error
		err bool
	}
	var keys []dynastore.Key
	for i := range 250 {
		keys = append(keys, key("obs-batch"+itoa(i)))
	}
	steps := []step{
		{dynastore.OpPutItem, func() error { _, err := s.Put(ctx, item(k, "n", N("1")), dynastore.WriteOptions{}); return err }, false},
		{dynastore.OpGetItem, func() error { _, err := s.Get(ctx, k); return err }, false},
		{dynastore.OpGetItem, func() error { _, err := s.Get(ctx, key("obs-missing")); return err }, false},
		{dynastore.OpUpdateItem, func() error {
			_, err := s.Update(ctx, k, dynastore.Update{Add: []av{{Attr: "n", Val: N("1")}}}, dynastore.WriteOptions{Return: dynastore.ReturnAllNew})
			return err
		}, false},
		{dynastore.OpPutItem, func() error {
			_, err := s.Put(ctx, item(k), dynastore.WriteOptions{Cond: dynastore.NotExists{Attr: dynastore.AttrPK}})
			return err
		}, true},
		{dynastore.OpTransactWriteItems, func() error {
			return s.Transact(ctx, []dynastore.TxAction{txPut(item(key("obs2")), nil), txCheck(k, dynastore.Exists{Attr: dynastore.AttrPK})})
		}, false},
		{dynastore.OpQuery, func() error { _, err := s.Query(ctx, dynastore.Query{PK: k.PK}); return err }, false},
		{dynastore.OpScan, func() error { _, err := s.Scan(ctx, dynastore.Scan{}); return err }, false},
		{dynastore.OpDeleteItem, func() error { _, err := s.Delete(ctx, k, dynastore.WriteOptions{}); return err }, false},
	}
	for _, st := range steps {
		rec.Reset()
		err := st.run()
		if st.err {
			require.Error(t, err, st.op)
		} else {
			require.NoError(t, err, st.op)
		}
		reqs := rec.Requests()
		require.Len(t, reqs, 1, "%s: one request per call (did newStore pass storetest.Observer(t) to the store?)", st.op)
		require.Equal(t, st.op, reqs[0].Op)
		require.Equal(t, "observed", reqs[0].Label)
		require.GreaterOrEqual(t, reqs[0].Attempts, 1)
		require.Equal(t, st.err, reqs[0].Err != nil, "%s: the request's error", st.op)
		if st.err {
			continue // DynamoDB Local reports no capacity with an error
		}
		switch st.op {
		case dynastore.OpGetItem, dynastore.OpQuery, dynastore.OpScan:
			require.Positive(t, reqs[0].RCU, "%s consumes read capacity", st.op)
		default:
			require.Positive(t, reqs[0].WCU, "%s consumes write capacity", st.op)
		}
	}

	// 250 keys are three BatchGetItem requests of at most 100 keys.
	rec.Reset()
	_, err := s.BatchGet(ctx, keys)
	require.NoError(t, err)
	reqs := rec.Requests()
	require.Len(t, reqs, 3)
	for _, r := range reqs {
		require.Equal(t, dynastore.OpBatchGetItem, r.Op)
		require.Equal(t, "observed", r.Label)
	}
}

// testConcurrentIncrements: optimistic read-modify-write with a condition on
// what was read ends at the exact total, however the writers interleave.
func testConcurrentIncrements(t *testing.T, s dynastore.Store) {
	k := key("counter")
	put(t, s, item(k, "n", N("0")))
	const workers, each = 6, 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := ctxOf(t)
			for done := 0; done < each; {
				if err := incrementOnce(ctx, s, k); err != nil {
					if errors.Is(err, dynastore.ErrConditionFailed) {
						continue // someone else won; read again
					}
					errs <- err
					return
				}
				done++
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	requireSameItem(t, item(k, "n", N(itoa(workers*each))), get(t, s, k))
}

func incrementOnce(ctx context.Context, s dynastore.Store, k dynastore.Key) error {
	it, err := s.Get(ctx, k)
	if err != nil {
		return err
	}
	seen := it.Get("n").(N)
	next, err := dynastore.AddNumbers(seen, "1")
	if err != nil {
		return err
	}
	_, err = s.Put(ctx, item(k, "n", next), dynastore.WriteOptions{Cond: cmp("n", dynastore.OpEQ, seen)})
	return err
}
