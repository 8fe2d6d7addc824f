// Package storetest is the conformance suite every dynastore backend must
// pass: the same scenarios, run against the memory backend in every `go
// test` and against DynamoDB Local in `make test`, so both backends answer
// exactly as DynamoDB does (conditions, return values, transactions with
// per-action reasons, limits, query and scan paging, binary keys, request
// accounting).
//
// A backend's test is a few lines:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) dynastore.Store {
//			return memory.New(memory.Options{Observer: storetest.Observer(t)})
//		})
//	}
//
// Every scenario runs in its own t.Run with a fresh, empty store from
// newStore, built with that scenario's t. Pass storetest.Observer(t) as the
// store's observer: the accounting scenario reads it.
package storetest

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
)

// scenario is one independent check against a fresh store.
type scenario struct {
	name string
	run  func(t *testing.T, s dynastore.Store)
}

// scenarios lists every check, grouped by file.
func scenarios() []scenario {
	var all []scenario
	for _, group := range [][]scenario{
		basicScenarios,
		condScenarios,
		updateScenarios,
		numberScenarios,
		txScenarios,
		limitScenarios,
		queryScenarios,
		scanScenarios,
		accountingScenarios,
	} {
		all = append(all, group...)
	}
	return all
}

// Run runs the conformance suite; newStore must return an empty store.
func Run(t *testing.T, newStore func(t *testing.T) dynastore.Store) {
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			s := newStore(t)
			Observer(t).Reset() // drop whatever setting up the store cost
			sc.run(t, s)
		})
	}
}

// ---- request recording -------------------------------------------------------

// Recorder is a dynastore.Observer that keeps every request it sees.
type Recorder struct {
	mu   sync.Mutex
	reqs []dynastore.Request
}

// Observe implements dynastore.Observer.
func (r *Recorder) Observe(_ context.Context, req dynastore.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, req)
}

// Requests returns a copy of the requests seen so far.
func (r *Recorder) Requests() []dynastore.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]dynastore.Request(nil), r.reqs...)
}

// Reset forgets every request.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = nil
}

var recorders sync.Map // *testing.T -> *Recorder

// Observer returns the recorder of scenario t: newStore passes it to the
// store it builds, and the scenario reads it.
func Observer(t *testing.T) *Recorder {
	r, loaded := recorders.LoadOrStore(t, &Recorder{})
	if !loaded {
		t.Cleanup(func() { recorders.Delete(t) })
	}
	return r.(*Recorder)
}

// ---- helpers -----------------------------------------------------------------

const label = "storetest"

func ctxOf(t *testing.T) context.Context {
	return dynastore.WithLabel(t.Context(), label)
}

// key builds a key; the sort key defaults to the single byte 0x00, which is
// what redamo's key items use.
func key(pk string, sk ...byte) dynastore.Key {
	if len(sk) == 0 {
		sk = []byte{0}
	}
	return dynastore.Key{PK: []byte(pk), SK: sk}
}

// item builds an item at k from name/value pairs.
func item(k dynastore.Key, kv ...any) dynastore.Item {
	it := make(dynastore.Item, 0, 2+len(kv)/2) // room for every attribute
	it = append(it, dynastore.Attr{Name: dynastore.AttrPK, Value: dynastore.B(k.PK)}, dynastore.Attr{Name: dynastore.AttrSK, Value: dynastore.B(k.SK)})
	for i := 0; i < len(kv); i += 2 {
		it.Set(kv[i].(string), kv[i+1].(dynastore.Value))
	}
	return it
}

func put(t *testing.T, s dynastore.Store, it dynastore.Item) {
	t.Helper()
	_, err := s.Put(ctxOf(t), it, dynastore.WriteOptions{})
	require.NoError(t, err)
}

// putAll writes items with a few concurrent writers (DynamoDB Local is
// slow one request at a time).
func putAll(t *testing.T, s dynastore.Store, items []dynastore.Item) {
	t.Helper()
	const workers = 8
	ch := make(chan dynastore.Item)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range ch {
				if _, err := s.Put(ctxOf(t), it, dynastore.WriteOptions{}); err != nil {
					errs <- err
					for range ch {
					}
					return
				}
			}
		}()
	}
	for _, it := range items {
		ch <- it
	}
	close(ch)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func get(t *testing.T, s dynastore.Store, k dynastore.Key) dynastore.Item {
	t.Helper()
	it, err := s.Get(ctxOf(t), k)
	require.NoError(t, err)
	return it
}

// requireItem demands equal items by DynamoDB's equality (numbers by value,
// sets in any order, nil and empty binaries alike).
func requireItem(t *testing.T, want, got dynastore.Item, msgAndArgs ...any) {
	t.Helper()
	if want == nil {
		require.Nil(t, got, msgAndArgs...)
		return
	}
	require.NotNil(t, got, msgAndArgs...)
	if !dynastore.ItemsEqual(want, got) {
		msg := fmt.Sprintf("items differ\nwant %s\ngot  %s", fmtItem(want), fmtItem(got))
		require.Fail(t, msg, msgAndArgs...)
	}
}

// requireSameItem is requireItem plus identical number text: the canonical
// form is part of the contract.
func requireSameItem(t *testing.T, want, got dynastore.Item, msgAndArgs ...any) {
	t.Helper()
	requireItem(t, want, got, msgAndArgs...)
	require.Equal(t, fmtItem(want), fmtItem(got), msgAndArgs...)
}

func fmtItem(it dynastore.Item) string {
	if it == nil {
		return "<nil>"
	}
	var b strings.Builder
	b.WriteString("{")
	for i, a := range it.Sorted() {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %s", a.Name, fmtValue(a.Value))
	}
	b.WriteString("}")
	return b.String()
}

// fmtMap formats a map value as fmtItem formats an item.
func fmtMap(m dynastore.M) string {
	if m == nil {
		return "<nil>"
	}
	it := make(dynastore.Item, 0, len(m))
	for n, v := range m {
		it = append(it, dynastore.Attr{Name: n, Value: v})
	}
	return fmtItem(it)
}

func fmtValue(v dynastore.Value) string {
	switch x := v.(type) {
	case dynastore.B:
		return fmt.Sprintf("B(%q)", []byte(x))
	case dynastore.N:
		return "N(" + string(x) + ")"
	case dynastore.S:
		return fmt.Sprintf("S(%q)", string(x))
	case dynastore.BS:
		ms := make([]string, len(x))
		for i, m := range x {
			ms[i] = fmt.Sprintf("%q", m)
		}
		sort.Strings(ms)
		return "BS[" + strings.Join(ms, " ") + "]"
	case dynastore.L:
		es := make([]string, len(x))
		for i, e := range x {
			es[i] = fmtValue(e)
		}
		return "L[" + strings.Join(es, " ") + "]"
	case dynastore.M:
		return "M" + fmtMap(x)
	case dynastore.BOOL:
		return fmt.Sprintf("BOOL(%v)", bool(x))
	case dynastore.NULL:
		return "NULL"
	}
	return fmt.Sprintf("%T(%v)", v, v)
}

// requireCondFailed demands a *ConditionFailedError and returns it.
func requireCondFailed(t *testing.T, err error) *dynastore.ConditionFailedError {
	t.Helper()
	require.ErrorIs(t, err, dynastore.ErrConditionFailed)
	var cf *dynastore.ConditionFailedError
	require.ErrorAs(t, err, &cf)
	return cf
}

// requireTxCanceled demands a *TxCanceledError with the given reason codes.
func requireTxCanceled(t *testing.T, err error, codes ...string) *dynastore.TxCanceledError {
	t.Helper()
	require.ErrorIs(t, err, dynastore.ErrTxCanceled)
	var tc *dynastore.TxCanceledError
	require.ErrorAs(t, err, &tc)
	got := make([]string, len(tc.Reasons))
	for i, r := range tc.Reasons {
		got[i] = r.Code
	}
	require.Equal(t, codes, got)
	return tc
}

func itoa(i int) string { return strconv.Itoa(i) }
