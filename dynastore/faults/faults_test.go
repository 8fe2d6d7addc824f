package faults_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/faults"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/dynastore/storetest"
)

// With no rules the wrapper is transparent: it passes the conformance suite.
func TestConformanceWithoutFaults(t *testing.T) {
	storetest.Run(t, func(t *testing.T) dynastore.Store {
		return faults.New(memory.New(memory.Options{Observer: storetest.Observer(t)}), 1)
	})
}

func key(s string) dynastore.Key { return dynastore.Key{PK: []byte(s), SK: []byte{0}} }

func item(s string) dynastore.Item {
	return dynastore.Item{{Name: dynastore.AttrPK, Value: dynastore.B(s)}, {Name: dynastore.AttrSK, Value: dynastore.B{0}}}
}

func newStore() (*faults.Store, *memory.Store) {
	m := memory.New(memory.Options{})
	return faults.New(m, 42), m
}

func TestFailNext(t *testing.T) {
	ctx := context.Background()
	f, m := newStore()
	f.FailNext(dynastore.OpPutItem, 2, dynastore.ErrThrottled)

	_, err := f.Get(ctx, key("a"))
	require.NoError(t, err, "other operations pass")
	for range 2 {
		_, err = f.Put(ctx, item("a"), dynastore.WriteOptions{})
		require.ErrorIs(t, err, dynastore.ErrThrottled)
		require.Zero(t, m.Len(), "failed before the store: nothing written")
	}
	_, err = f.Put(ctx, item("a"), dynastore.WriteOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, m.Len())
	require.Equal(t, 3, f.Calls(dynastore.OpPutItem))
	require.Equal(t, 2, f.Injected(dynastore.OpPutItem))
	require.Equal(t, 4, f.Calls(faults.Any))
}

func TestFailNextAnyOperation(t *testing.T) {
	ctx := context.Background()
	f, _ := newStore()
	f.FailNext(faults.Any, 3, dynastore.ErrUnavailable)
	err := f.Transact(ctx, []dynastore.TxAction{{Op: dynastore.TxPut, Item: item("a")}})
	require.ErrorIs(t, err, dynastore.ErrUnavailable)
	_, err = f.Query(ctx, dynastore.Query{PK: []byte("a")})
	require.ErrorIs(t, err, dynastore.ErrUnavailable)
	_, err = f.BatchGet(ctx, []dynastore.Key{key("a")})
	require.ErrorIs(t, err, dynastore.ErrUnavailable)
	_, err = f.Scan(ctx, dynastore.Scan{})
	require.NoError(t, err)
	require.Equal(t, 3, f.Injected(faults.Any))
}

func TestFailNextAfter(t *testing.T) {
	ctx := context.Background()
	f, m := newStore()
	f.FailNextAfter(dynastore.OpUpdateItem, 1, dynastore.ErrUnavailable)
	u := dynastore.Update{Add: []dynastore.AttrValue{{Attr: "n", Val: dynastore.N("1")}}}
	got, err := f.Update(ctx, key("c"), u, dynastore.WriteOptions{Return: dynastore.ReturnAllNew})
	require.ErrorIs(t, err, dynastore.ErrUnavailable)
	require.Nil(t, got, "the answer is lost")
	it, err := m.Get(ctx, key("c"))
	require.NoError(t, err)
	require.Equal(t, dynastore.N("1"), it.Get("n"), "but the write happened")
}

func TestFailRateIsSeeded(t *testing.T) {
	ctx := context.Background()
	run := func(seed uint64) []bool {
		f := faults.New(memory.New(memory.Options{}), seed)
		f.FailRate(dynastore.OpGetItem, 0.3, dynastore.ErrThrottled)
		var out []bool
		for range 200 {
			_, err := f.Get(ctx, key("a"))
			out = append(out, err != nil)
		}
		return out
	}
	a, b := run(7), run(7)
	require.Equal(t, a, b, "the same seed fails the same calls")
	n := 0
	for _, failed := range a {
		if failed {
			n++
		}
	}
	require.Greater(t, n, 20)
	require.Less(t, n, 100)
	require.NotEqual(t, a, run(8))
}

func TestFailRateBounds(t *testing.T) {
	ctx := context.Background()
	f, _ := newStore()
	f.FailRate(dynastore.OpDeleteItem, 1, dynastore.ErrThrottled)
	f.FailRate(dynastore.OpGetItem, 0, dynastore.ErrThrottled)
	for range 20 {
		_, err := f.Delete(ctx, key("a"), dynastore.WriteOptions{})
		require.ErrorIs(t, err, dynastore.ErrThrottled)
		_, err = f.Get(ctx, key("a"))
		require.NoError(t, err)
	}
	f.Reset()
	_, err := f.Delete(ctx, key("a"), dynastore.WriteOptions{})
	require.NoError(t, err)
}

func TestFailRateAfter(t *testing.T) {
	ctx := context.Background()
	f, m := newStore()
	f.FailRateAfter(dynastore.OpPutItem, 1, dynastore.ErrUnavailable)
	_, err := f.Put(ctx, item("a"), dynastore.WriteOptions{})
	require.ErrorIs(t, err, dynastore.ErrUnavailable)
	require.Equal(t, 1, m.Len())
}

func TestDelay(t *testing.T) {
	f, m := newStore()
	f.Delay(dynastore.OpPutItem, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := f.Put(ctx, item("a"), dynastore.WriteOptions{})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Zero(t, m.Len(), "a call cut short never reached the store")
	_, err = f.Get(context.Background(), key("a"))
	require.NoError(t, err, "other operations are not delayed")
}

func TestOneFailurePerCall(t *testing.T) {
	ctx := context.Background()
	f, _ := newStore()
	first, second := errors.New("first"), errors.New("second")
	f.FailNext(dynastore.OpGetItem, 1, first)
	f.FailNext(dynastore.OpGetItem, 1, second)
	_, err := f.Get(ctx, key("a"))
	require.ErrorIs(t, err, first)
	require.NotErrorIs(t, err, second)
	_, err = f.Get(ctx, key("a"))
	require.ErrorIs(t, err, second)
	_, err = f.Get(ctx, key("a"))
	require.NoError(t, err)
	f.FailNext(dynastore.OpGetItem, 0, first)
	_, err = f.Get(ctx, key("a"))
	require.NoError(t, err, "zero failures is none")
}

// Under random faults, conditional writes either happen entirely or not at
// all: the counter equals the number of increments reported as done.
func TestNoHalfAppliedWrites(t *testing.T) {
	ctx := context.Background()
	f, m := newStore()
	f.FailRate(dynastore.OpTransactWriteItems, 0.3, dynastore.ErrThrottled)
	var mu sync.Mutex
	done := 0
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				// Move one unit from a per-worker source to the shared total.
				src := key("src" + strconv.Itoa(w))
				err := f.Transact(ctx, []dynastore.TxAction{
					{Op: dynastore.TxUpdate, Key: src, Update: &dynastore.Update{Add: []dynastore.AttrValue{{Attr: "n", Val: dynastore.N("-1")}}}},
					{Op: dynastore.TxUpdate, Key: key("total" + strconv.Itoa(i%3)), Update: &dynastore.Update{Add: []dynastore.AttrValue{{Attr: "n", Val: dynastore.N("1")}}}},
				})
				switch {
				case err == nil:
					mu.Lock()
					done++
					mu.Unlock()
				case errors.Is(err, dynastore.ErrThrottled) || errors.Is(err, dynastore.ErrTxConflict):
				default:
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	require.Positive(t, f.Injected(dynastore.OpTransactWriteItems))
	sum, total := 0, 0
	for w := range 4 {
		it, err := m.Get(ctx, key("src"+strconv.Itoa(w)))
		require.NoError(t, err)
		if it != nil {
			n, _ := strconv.Atoi(string(it.Get("n").(dynastore.N)))
			sum += n
		}
	}
	for i := range 3 {
		it, err := m.Get(ctx, key("total"+strconv.Itoa(i)))
		require.NoError(t, err)
		if it != nil {
			n, _ := strconv.Atoi(string(it.Get("n").(dynastore.N)))
			total += n
		}
	}
	require.Equal(t, done, total)
	require.Equal(t, -done, sum)
}
