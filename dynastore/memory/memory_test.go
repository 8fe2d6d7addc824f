package memory_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/dynastore/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) dynastore.Store {
		return memory.New(memory.Options{Observer: storetest.Observer(t)})
	})
}

func key(s string) dynastore.Key { return dynastore.Key{PK: []byte(s), SK: []byte{0}} }

// item builds an item at k from name/value pairs, in one allocation as
// redamo's commands do (the benchmarks build their items with it).
func item(k dynastore.Key, kv ...any) dynastore.Item {
	it := make(dynastore.Item, 0, 2+len(kv)/2)
	it = append(it, dynastore.Attr{Name: dynastore.AttrPK, Value: dynastore.B(k.PK)}, dynastore.Attr{Name: dynastore.AttrSK, Value: dynastore.B(k.SK)})
	for i := 0; i < len(kv); i += 2 {
		it.Set(kv[i].(string), kv[i+1].(dynastore.Value))
	}
	return it
}

func TestFailNext(t *testing.T) {
	stats := dynastore.NewStats()
	s := memory.New(memory.Options{Observer: stats})
	ctx := dynastore.WithLabel(context.Background(), "set")
	boom := errors.New("boom")

	s.FailNext(dynastore.OpPutItem, boom)
	s.FailNext(dynastore.OpPutItem, dynastore.ErrThrottled)
	// Another operation is not affected.
	_, err := s.Get(ctx, key("a"))
	require.NoError(t, err)

	_, err = s.Put(ctx, item(key("a"), "v", dynastore.S("1")), dynastore.WriteOptions{})
	require.ErrorIs(t, err, boom)
	_, err = s.Put(ctx, item(key("a"), "v", dynastore.S("1")), dynastore.WriteOptions{})
	require.ErrorIs(t, err, dynastore.ErrThrottled)
	require.Zero(t, s.Len(), "a failed request writes nothing")
	_, err = s.Put(ctx, item(key("a"), "v", dynastore.S("1")), dynastore.WriteOptions{})
	require.NoError(t, err, "failures are used up")
	require.Equal(t, 1, s.Len())

	// "" fails whatever comes next.
	s.FailNext("", boom)
	err = s.Transact(ctx, []dynastore.TxAction{{Op: dynastore.TxDelete, Key: key("a")}})
	require.ErrorIs(t, err, boom)
	require.Equal(t, 1, s.Len())

	row := stats.Snapshot()[dynastore.StatKey{Label: "set", Op: dynastore.OpPutItem}]
	require.Equal(t, int64(3), row.Requests)
	require.Equal(t, int64(2), row.Errors)
}

func TestFailNextBatchGetChunk(t *testing.T) {
	s := memory.New(memory.Options{})
	keys := make([]dynastore.Key, 150)
	for i := range keys {
		keys[i] = key(strconv.Itoa(i))
	}
	s.FailNext(dynastore.OpBatchGetItem, dynastore.ErrUnavailable)
	_, err := s.BatchGet(context.Background(), keys)
	require.ErrorIs(t, err, dynastore.ErrUnavailable)
	got, err := s.BatchGet(context.Background(), keys)
	require.NoError(t, err)
	require.Len(t, got, 150)
}

func TestLatencyRespectsContext(t *testing.T) {
	s := memory.New(memory.Options{})
	s.SetLatency(time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := s.Put(ctx, item(key("a")), dynastore.WriteOptions{})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	s.SetLatency(0)
	require.Zero(t, s.Len())

	canceled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	_, err = s.Get(canceled, key("a"))
	require.ErrorIs(t, err, context.Canceled)
}

// Many writers doing conditional increments (read, then write on the
// condition that the value is unchanged) end at the exact total: the
// store's conditions are atomic with its writes. Run with -race.
func TestConcurrentConditionalIncrements(t *testing.T) {
	s := memory.New(memory.Options{})
	ctx := context.Background()
	k := key("counter")
	_, err := s.Put(ctx, item(k, "n", dynastore.N("0")), dynastore.WriteOptions{})
	require.NoError(t, err)

	const workers, each = 16, 200
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < each; {
				it, err := s.Get(ctx, k)
				if err != nil {
					t.Error(err)
					return
				}
				seen := it.Get("n").(dynastore.N)
				_, err = s.Update(ctx, k, dynastore.Update{Add: []dynastore.AttrValue{{Attr: "n", Val: dynastore.N("1")}}},
					dynastore.WriteOptions{Cond: dynastore.Compare{Attr: "n", Op: dynastore.OpEQ, Val: seen}})
				switch {
				case errors.Is(err, dynastore.ErrConditionFailed):
					// Another writer got there first: read again.
				case err != nil:
					t.Error(err)
					return
				default:
					done++
				}
			}
		}()
	}
	// Concurrent readers and transactions on other items must not disturb it.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 200 {
			other := key("other" + strconv.Itoa(i%7))
			if err := s.Transact(ctx, []dynastore.TxAction{{Op: dynastore.TxPut, Item: item(other, "i", dynastore.N(strconv.Itoa(i)))}}); err != nil {
				t.Error(err)
				return
			}
			if _, err := s.Scan(ctx, dynastore.Scan{Limit: 3}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	wg.Wait()
	got, err := s.Get(ctx, k)
	require.NoError(t, err)
	require.Equal(t, dynastore.N(strconv.Itoa(workers*each)), got.Get("n"))
}

// Concurrent unconditional ADDs are atomic too (INCR is one UpdateItem).
func TestConcurrentAdds(t *testing.T) {
	s := memory.New(memory.Options{})
	ctx := context.Background()
	k := key("adds")
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 500 {
				if _, err := s.Update(ctx, k, dynastore.Update{Add: []dynastore.AttrValue{{Attr: "n", Val: dynastore.N("1")}}}, dynastore.WriteOptions{}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got, err := s.Get(ctx, k)
	require.NoError(t, err)
	require.Equal(t, dynastore.N("4000"), got.Get("n"))
}

// DynamoDB applies the 1 MB page limit to the data read, before the filter
// (DynamoDB Local does not, so this is not in storetest).
func TestPageLimitCountsFilteredItems(t *testing.T) {
	s := memory.New(memory.Options{})
	ctx := context.Background()
	big := bytes.Repeat([]byte{1}, 300*1024)
	for i := range 6 {
		_, err := s.Put(ctx, item(dynastore.Key{PK: []byte("p"), SK: []byte{byte(i)}}, "v", dynastore.B(big)), dynastore.WriteOptions{})
		require.NoError(t, err)
	}
	none := dynastore.Exists{Attr: "nothing"}
	page, err := s.Query(ctx, dynastore.Query{PK: []byte("p"), Filter: none})
	require.NoError(t, err)
	require.Empty(t, page.Items)
	require.Equal(t, []byte{3}, page.Next)
	sp, err := s.Scan(ctx, dynastore.Scan{Filter: none})
	require.NoError(t, err)
	require.Empty(t, sp.Items)
	require.Equal(t, &dynastore.Key{PK: []byte("p"), SK: []byte{3}}, sp.Next)
}

// Capacity as DynamoDB counts it: reads by 4 KB, writes by 1 KB of the larger
// of the old and new item, transactions double, failed conditions still pay.
func TestCapacityUnits(t *testing.T) {
	rec := &storetest.Recorder{}
	s := memory.New(memory.Options{Observer: rec})
	ctx := context.Background()
	k := key("cap")
	small := item(k, "v", dynastore.B("x"))
	large := item(k, "v", dynastore.B(bytes.Repeat([]byte{1}, 5000)))
	last := func() dynastore.Request {
		r := rec.Requests()
		return r[len(r)-1]
	}

	_, err := s.Get(ctx, k)
	require.NoError(t, err)
	require.Equal(t, 1.0, last().RCU, "reading nothing costs one unit")
	_, err = s.Put(ctx, large, dynastore.WriteOptions{})
	require.NoError(t, err)
	require.Equal(t, 5.0, last().WCU)
	_, err = s.Get(ctx, k)
	require.NoError(t, err)
	require.Equal(t, 2.0, last().RCU)
	_, err = s.Put(ctx, small, dynastore.WriteOptions{})
	require.NoError(t, err)
	require.Equal(t, 5.0, last().WCU, "the larger of old and new")
	_, err = s.Put(ctx, small, dynastore.WriteOptions{Cond: dynastore.NotExists{Attr: dynastore.AttrPK}})
	require.ErrorIs(t, err, dynastore.ErrConditionFailed)
	require.Equal(t, 1.0, last().WCU, "a failed condition still costs")
	err = s.Transact(ctx, []dynastore.TxAction{
		{Op: dynastore.TxPut, Item: large},
		{Op: dynastore.TxCheck, Key: key("other"), Cond: dynastore.NotExists{Attr: dynastore.AttrPK}},
	})
	require.NoError(t, err)
	require.Equal(t, 10.0, last().WCU)
	require.Equal(t, 2.0, last().RCU)
	_, err = s.Query(ctx, dynastore.Query{PK: k.PK})
	require.NoError(t, err)
	require.Equal(t, 2.0, last().RCU)
	_, err = s.BatchGet(ctx, []dynastore.Key{k, key("missing")})
	require.NoError(t, err)
	require.Equal(t, 3.0, last().RCU, "per item, as separate reads")
	require.Equal(t, 1, last().Attempts)
}

func TestLen(t *testing.T) {
	s := memory.New(memory.Options{})
	ctx := context.Background()
	for i := range 10 {
		_, err := s.Put(ctx, item(key(strconv.Itoa(i%4))), dynastore.WriteOptions{})
		require.NoError(t, err)
	}
	require.Equal(t, 4, s.Len())
	_, err := s.Delete(ctx, key("0"), dynastore.WriteOptions{})
	require.NoError(t, err)
	require.Equal(t, 3, s.Len())
}

// Scan pages come in (pk, sk) order across the store's shards, each item
// once, and resume after any key.
func TestScanOrder(t *testing.T) {
	s := memory.New(memory.Options{})
	ctx := context.Background()
	var want []dynastore.Key
	for p := range 200 {
		for i := range 3 {
			k := dynastore.Key{PK: []byte{byte(p % 7), 0, byte(p), 0xff}, SK: []byte{byte(2 - i), 0}}
			want = append(want, k)
			_, err := s.Put(ctx, item(k), dynastore.WriteOptions{})
			require.NoError(t, err)
		}
	}
	slices.SortFunc(want, func(a, b dynastore.Key) int {
		if c := bytes.Compare(a.PK, b.PK); c != 0 {
			return c
		}
		return bytes.Compare(a.SK, b.SK)
	})
	var got []dynastore.Key
	sc := dynastore.Scan{Limit: 7}
	for {
		page, err := s.Scan(ctx, sc)
		require.NoError(t, err)
		for _, it := range page.Items {
			got = append(got, it.Key())
		}
		if page.Next == nil {
			break
		}
		sc.After = page.Next
	}
	require.Equal(t, want, got)
}

// TestOrderAcrossFlushes: Scan and Query see every item in order, whether
// it was inserted long ago, waits to be flushed into the ordered index, or
// was deleted (and maybe written again) before or after a flush.
func TestOrderAcrossFlushes(t *testing.T) {
	s := memory.New(memory.Options{})
	ctx := context.Background()
	const n = 40_000 // enough for every shard to flush several times
	want := map[string]bool{}
	put := func(k dynastore.Key) {
		_, err := s.Put(ctx, item(k), dynastore.WriteOptions{})
		require.NoError(t, err)
		want[string(k.PK)+"/"+string(k.SK)] = true
	}
	del := func(k dynastore.Key) {
		_, err := s.Delete(ctx, k, dynastore.WriteOptions{})
		require.NoError(t, err)
		delete(want, string(k.PK)+"/"+string(k.SK))
	}
	big := []byte("big partition")
	for i := range n {
		// A scrambled order, so each flush sorts a real batch.
		j := (i * 7919) % n
		put(key("k" + strconv.Itoa(j)))
		if i%3 == 0 {
			put(dynastore.Key{PK: big, SK: []byte(strconv.Itoa(j))})
		}
		switch {
		case i%11 == 0: // deleted soon after its insert: likely still pending
			del(key("k" + strconv.Itoa(j)))
		case i%13 == 0 && i > 1000: // deleted long after: in the tree
			del(key("k" + strconv.Itoa((j+5000)%n)))
		}
		if i%17 == 0 { // written again after a delete
			put(key("k" + strconv.Itoa(j)))
		}
	}
	var sorted []string
	for k := range want {
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)

	var got []string
	var after *dynastore.Key
	for {
		page, err := s.Scan(ctx, dynastore.Scan{Limit: 997, After: after})
		require.NoError(t, err)
		for _, it := range page.Items {
			k := it.Key()
			got = append(got, string(k.PK)+"/"+string(k.SK))
		}
		if page.Next == nil {
			break
		}
		after = page.Next
		between := key("between" + strconv.Itoa(len(got))) // pending again between pages
		put(between)
		del(between)
	}
	require.Equal(t, sorted, got)
	require.Equal(t, len(sorted), s.Len())

	var sks []string
	for _, k := range sorted {
		if sk, ok := strings.CutPrefix(k, string(big)+"/"); ok {
			sks = append(sks, sk)
		}
	}
	put(dynastore.Key{PK: big, SK: []byte("~last")}) // pending at the query
	sks = append(sks, "~last")
	page, err := s.Query(ctx, dynastore.Query{PK: big})
	require.NoError(t, err)
	var gotSKs []string
	for _, it := range page.Items {
		gotSKs = append(gotSKs, string(it.Key().SK))
	}
	require.Equal(t, sks, gotSKs)
}

// durations records the Duration of every request it observes.
type durations struct {
	mu     sync.Mutex
	ignore bool
	seen   []time.Duration
}

func (d *durations) Observe(_ context.Context, r dynastore.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seen = append(d.seen, r.Duration)
}

func (d *durations) IgnoresDuration() bool { return d.ignore }

// TestRequestTiming checks that requests are timed when an observer may
// read their durations, and only then (dynastore.Timed).
func TestRequestTiming(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		d := &durations{ignore: ignore}
		s := memory.New(memory.Options{Observer: dynastore.Observers{dynastore.NewStats(), d}})
		s.SetLatency(2 * time.Millisecond)
		_, err := s.Get(context.Background(), dynastore.Key{PK: []byte("k"), SK: []byte{0}})
		require.NoError(t, err)
		require.Len(t, d.seen, 1)
		if ignore {
			require.Zero(t, d.seen[0])
		} else {
			require.GreaterOrEqual(t, d.seen[0], 2*time.Millisecond)
		}
	}
}

// TestPartitionLimit: a partition past its capacity is throttled, its
// neighbours are not, and the store is unchanged by the throttled write.
func TestPartitionLimit(t *testing.T) {
	ctx := context.Background()
	st := memory.New(memory.Options{PartitionLimit: &memory.PartitionLimit{RCU: 1, WCU: 1}})
	item := func(pk string, size int) dynastore.Item {
		return dynastore.Item{
			{Name: dynastore.AttrPK, Value: dynastore.B(pk)},
			{Name: dynastore.AttrSK, Value: dynastore.B("s")},
			{Name: "v", Value: dynastore.B(make([]byte, size))},
		}
	}
	// 9 KB: 9 write units from a bucket of 1, 8 s of debt: more than a
	// request waits.
	_, err := st.Put(ctx, item("hot", 9000), dynastore.WriteOptions{})
	require.NoError(t, err)
	_, err = st.Put(ctx, item("hot", 10), dynastore.WriteOptions{})
	require.ErrorIs(t, err, dynastore.ErrThrottled)
	_, err = st.Get(ctx, dynastore.Key{PK: []byte("hot"), SK: []byte("s")})
	require.NoError(t, err, "reads have capacity of their own")
	// That read took 3 units (4 KB each) of 1: 2 s of debt.
	_, err = st.Get(ctx, dynastore.Key{PK: []byte("hot"), SK: []byte("s")})
	require.ErrorIs(t, err, dynastore.ErrThrottled, "reads past the partition's read units")
	_, err = st.Put(ctx, item("cold", 10), dynastore.WriteOptions{})
	require.NoError(t, err, "another partition has its own capacity")
	err = st.Transact(ctx, []dynastore.TxAction{{Op: dynastore.TxPut, Item: item("hot", 1)}, {Op: dynastore.TxPut, Item: item("other", 1)}})
	require.ErrorIs(t, err, dynastore.ErrThrottled, "a transaction waits for every partition it touches")
	require.Equal(t, 2, st.Len(), "the throttled writes wrote nothing")
}

// CountItems counts exactly what matches its filter, without a request.
func TestCountItems(t *testing.T) {
	ctx := context.Background()
	stats := dynastore.NewStats()
	s := memory.New(memory.Options{Observer: stats})
	for _, pk := range []string{"a1", "a2", "b1"} {
		_, err := s.Put(ctx, dynastore.Item{
			{Name: dynastore.AttrPK, Value: dynastore.B(pk)}, {Name: dynastore.AttrSK, Value: dynastore.B("s")},
		}, dynastore.WriteOptions{})
		require.NoError(t, err)
	}
	before := stats.Snapshot()
	var seen []string
	n, exact, err := s.CountItems(ctx, dynastore.BeginsWith{Attr: dynastore.AttrPK, Prefix: []byte("a")}, func(it dynastore.Item) {
		seen = append(seen, string(it.Get(dynastore.AttrPK).(dynastore.B)))
	})
	require.NoError(t, err)
	require.True(t, exact)
	require.Equal(t, int64(2), n)
	require.ElementsMatch(t, []string{"a1", "a2"}, seen)
	n, _, err = s.CountItems(ctx, nil, nil)
	require.NoError(t, err)
	require.Equal(t, int64(3), n)
	require.Equal(t, before, stats.Snapshot())
}
