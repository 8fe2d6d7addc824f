package memory

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
)

// inPlaceKey is the key the in-place tests write.
var inPlaceKey = dynastore.Key{PK: []byte("k"), SK: []byte{0}}

// storedItem returns the item stored at k, as the store holds it.
func storedItem(s *Store, k dynastore.Key) dynastore.Item {
	id := appendID(nil, k.PK, k.SK)
	sh := s.shard(s.shardOf(k.PK))
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return itemOf(sh.get(id, idHash(id)))
}

func sameMemory(a, b dynastore.Item) bool { return unsafe.SliceData(a) == unsafe.SliceData(b) }

// inPlaceItem is an item at inPlaceKey with the name/value pairs kv.
func inPlaceItem(kv ...any) dynastore.Item {
	it := dynastore.Item{{Name: dynastore.AttrPK, Value: dynastore.B(inPlaceKey.PK)}, {Name: dynastore.AttrSK, Value: dynastore.B(inPlaceKey.SK)}}
	for i := 0; i < len(kv); i += 2 {
		it = append(it, dynastore.Attr{Name: kv[i].(string), Value: kv[i+1].(dynastore.Value)})
	}
	return it
}

// putInPlace stores inPlaceItem(kv...) in s and returns the item s keeps.
func putInPlace(t *testing.T, s *Store, kv ...any) dynastore.Item {
	t.Helper()
	_, err := s.Put(context.Background(), inPlaceItem(kv...), dynastore.WriteOptions{})
	require.NoError(t, err)
	return storedItem(s, inPlaceKey)
}

// addOne is an update like INCR's: it replaces t, adds to v and w, and
// removes e.
func addOne() dynastore.Update {
	return dynastore.Update{
		Set:    []dynastore.SetAction{{Attr: "t", Val: dynastore.S("string")}},
		Add:    []dynastore.AttrValue{{Attr: "v", Val: dynastore.N("1")}, {Attr: "w", Val: dynastore.N("1")}},
		Remove: []string{"e"},
	}
}

// An update changes an item nobody was handed in place; once any request
// hands the item out, the next update stores a new item and the one handed
// out never changes. The update after that is in place again.
func TestUpdateInPlaceUntilLent(t *testing.T) {
	ctx := context.Background()
	failing := dynastore.Exists{Attr: "missing"}
	lenders := []struct {
		name string
		lend func(t *testing.T, s *Store) dynastore.Item
	}{
		{"get", func(t *testing.T, s *Store) dynastore.Item {
			it, err := s.Get(ctx, inPlaceKey)
			require.NoError(t, err)
			return it
		}},
		{"batch get", func(t *testing.T, s *Store) dynastore.Item {
			its, err := s.BatchGet(ctx, []dynastore.Key{inPlaceKey})
			require.NoError(t, err)
			return its[0]
		}},
		{"query", func(t *testing.T, s *Store) dynastore.Item {
			page, err := s.Query(ctx, dynastore.Query{PK: inPlaceKey.PK})
			require.NoError(t, err)
			return page.Items[0]
		}},
		{"scan", func(t *testing.T, s *Store) dynastore.Item {
			page, err := s.Scan(ctx, dynastore.Scan{})
			require.NoError(t, err)
			return page.Items[0]
		}},
		{"update returning all new", func(t *testing.T, s *Store) dynastore.Item {
			it, err := s.Update(ctx, inPlaceKey, addOne(), dynastore.WriteOptions{Return: dynastore.ReturnAllNew})
			require.NoError(t, err)
			return it
		}},
		{"failed put", func(t *testing.T, s *Store) dynastore.Item {
			_, err := s.Put(ctx, inPlaceItem(), dynastore.WriteOptions{Cond: failing, OldOnFailure: true})
			return oldOf(t, err)
		}},
		{"failed update", func(t *testing.T, s *Store) dynastore.Item {
			_, err := s.Update(ctx, inPlaceKey, addOne(), dynastore.WriteOptions{Cond: failing, OldOnFailure: true})
			return oldOf(t, err)
		}},
		{"failed delete", func(t *testing.T, s *Store) dynastore.Item {
			_, err := s.Delete(ctx, inPlaceKey, dynastore.WriteOptions{Cond: failing, OldOnFailure: true})
			return oldOf(t, err)
		}},
		{"failed transaction", func(t *testing.T, s *Store) dynastore.Item {
			err := s.Transact(ctx, []dynastore.TxAction{{Op: dynastore.TxCheck, Key: inPlaceKey, Cond: failing, OldOnFailure: true}})
			var tx *dynastore.TxCanceledError
			require.ErrorAs(t, err, &tx)
			return tx.Reasons[0].Old
		}},
	}
	for _, l := range lenders {
		t.Run(l.name, func(t *testing.T) {
			s := New(Options{})
			put := putInPlace(t, s, "v", dynastore.N("1"), "w", dynastore.N("1"), "e", dynastore.S("x"))

			_, err := s.Update(ctx, inPlaceKey, addOne(), dynastore.WriteOptions{})
			require.NoError(t, err)
			first := storedItem(s, inPlaceKey)
			require.True(t, sameMemory(put, first), "an item nobody was handed changes in place")

			lent := l.lend(t, s)
			require.NotNil(t, lent)
			was := dynastore.CloneItem(lent)
			_, err = s.Update(ctx, inPlaceKey, addOne(), dynastore.WriteOptions{})
			require.NoError(t, err)
			second := storedItem(s, inPlaceKey)
			require.False(t, sameMemory(lent, second), "a lent item is replaced")
			require.True(t, dynastore.ItemsEqual(was, lent), "a lent item never changes: %v, was %v", lent, was)

			_, err = s.Update(ctx, inPlaceKey, addOne(), dynastore.WriteOptions{})
			require.NoError(t, err)
			require.True(t, sameMemory(second, storedItem(s, inPlaceKey)), "the new item is not lent")
			require.True(t, dynastore.ItemsEqual(was, lent))
		})
	}
}

func oldOf(t *testing.T, err error) dynastore.Item {
	var cf *dynastore.ConditionFailedError
	require.ErrorAs(t, err, &cf)
	return cf.Old
}

// An update in place still reads every operand from the item as it was, a
// failing one leaves the item as it was, and one returning into the
// caller's memory leaves the item unlent.
func TestUpdateInPlaceSemantics(t *testing.T) {
	ctx := context.Background()
	s := New(Options{})
	mem := putInPlace(t, s, "a", dynastore.S("x"), "b", dynastore.S("y"), "n", dynastore.N("5"))
	stored := func(kv ...any) {
		t.Helper()
		want := inPlaceItem(kv...)
		got := storedItem(s, inPlaceKey)
		require.True(t, dynastore.ItemsEqual(want, got), "stored %v, want %v", got, want)
	}

	// A swap: each SET reads the other attribute as it was.
	old, err := s.Update(ctx, inPlaceKey, dynastore.Update{Set: []dynastore.SetAction{
		{Attr: "a", Val: dynastore.Ref{Attr: "b"}}, {Attr: "b", Val: dynastore.Ref{Attr: "a"}},
	}}, dynastore.WriteOptions{Return: dynastore.ReturnUpdatedOld})
	require.NoError(t, err)
	require.True(t, dynastore.ItemsEqual(dynastore.Item{{Name: "a", Value: dynastore.S("x")}, {Name: "b", Value: dynastore.S("y")}}, old), "%v", old)
	stored("a", dynastore.S("y"), "b", dynastore.S("x"), "n", dynastore.N("5"))

	// Failures: the update's own error, and an item grown too large.
	_, err = s.Update(ctx, inPlaceKey, dynastore.Update{
		Set: []dynastore.SetAction{{Attr: "a", Val: dynastore.S("z")}},
		Add: []dynastore.AttrValue{{Attr: "b", Val: dynastore.N("1")}},
	}, dynastore.WriteOptions{})
	require.ErrorIs(t, err, dynastore.ErrInvalid)
	_, err = s.Update(ctx, inPlaceKey, dynastore.Update{Set: []dynastore.SetAction{
		{Attr: "a", Val: dynastore.S("z")}, {Attr: "big", Val: dynastore.S(strings.Repeat("x", dynastore.MaxItemSize))},
	}}, dynastore.WriteOptions{})
	require.ErrorIs(t, err, dynastore.ErrItemTooLarge)
	stored("a", dynastore.S("y"), "b", dynastore.S("x"), "n", dynastore.N("5"))

	// Removing and adding attributes, all new into the caller's memory.
	into := make(dynastore.Item, 0, 8)
	got, err := s.Update(ctx, inPlaceKey, dynastore.Update{
		Remove: []string{"a", "b"},
		Add:    []dynastore.AttrValue{{Attr: "n", Val: dynastore.N("2")}, {Attr: "m", Val: dynastore.N("1")}},
	}, dynastore.WriteOptions{Return: dynastore.ReturnAllNew, ReturnInto: into})
	require.NoError(t, err)
	stored("n", dynastore.N("7"), "m", dynastore.N("1"))
	require.True(t, dynastore.ItemsEqual(storedItem(s, inPlaceKey), got))
	require.True(t, sameMemory(into, got), "built in ReturnInto")
	require.True(t, sameMemory(mem, storedItem(s, inPlaceKey)), "every update so far was in place")

	// All old into the caller's memory is taken before the item changes.
	got, err = s.Update(ctx, inPlaceKey, dynastore.Update{Remove: []string{"m"}},
		dynastore.WriteOptions{Return: dynastore.ReturnAllOld, ReturnInto: into})
	require.NoError(t, err)
	require.True(t, dynastore.ItemsEqual(inPlaceItem("n", dynastore.N("7"), "m", dynastore.N("1")), got), "%v", got)
	stored("n", dynastore.N("7"))
	require.True(t, sameMemory(mem, storedItem(s, inPlaceKey)))

	// An item that outgrows its memory moves, and is in place again after.
	many := dynastore.Update{}
	for i := range 10 {
		many.Set = append(many.Set, dynastore.SetAction{Attr: "a" + strconv.Itoa(i), Val: dynastore.N("1")})
	}
	_, err = s.Update(ctx, inPlaceKey, many, dynastore.WriteOptions{})
	require.NoError(t, err)
	grown := storedItem(s, inPlaceKey)
	require.Len(t, grown, 13)
	require.False(t, sameMemory(mem, grown))
	_, err = s.Update(ctx, inPlaceKey, dynastore.Update{Add: []dynastore.AttrValue{{Attr: "a0", Val: dynastore.N("1")}}}, dynastore.WriteOptions{})
	require.NoError(t, err)
	require.True(t, sameMemory(grown, storedItem(s, inPlaceKey)))
}

// Readers of every kind, on other goroutines, only ever see whole updates,
// and an item once handed out never changes, while writers update the same
// items in place whenever they can (run with -race: make test does).
func TestUpdateInPlaceConcurrentReaders(t *testing.T) {
	ctx := context.Background()
	s := New(Options{})
	keys := make([]dynastore.Key, 8)
	for i := range keys {
		keys[i] = dynastore.Key{PK: []byte{'k', byte(i)}, SK: []byte{0}}
	}
	// check asserts that v and w, which every update adds to together, are
	// equal, and that it stays so.
	check := func(it dynastore.Item) {
		if it == nil {
			return
		}
		was := dynastore.CloneItem(it)
		if !dynastore.ValuesEqual(it.Get("v"), it.Get("w")) {
			t.Errorf("torn item %v", it)
		}
		if !dynastore.ItemsEqual(was, it) {
			t.Errorf("a handed-out item changed: %v, was %v", it, was)
		}
	}
	var wg sync.WaitGroup
	const rounds = 2000
	for w := range 2 {
		wg.Go(func() {
			into := make(dynastore.Item, 0, 8)
			for i := range rounds {
				o := dynastore.WriteOptions{}
				if i%2 == w {
					o = dynastore.WriteOptions{Return: dynastore.ReturnAllNew, ReturnInto: into}
				}
				got, err := s.Update(ctx, keys[i%len(keys)], addOne(), o)
				if err != nil {
					t.Error(err)
					return
				}
				if got != nil && !dynastore.ValuesEqual(got.Get("v"), got.Get("w")) {
					t.Errorf("torn result %v", got)
				}
			}
		})
	}
	// Readers run on other goroutines, where require may not stop the test.
	readers := []func(i int){
		func(i int) {
			it, err := s.Get(ctx, keys[i%len(keys)])
			if err != nil {
				t.Error(err)
			}
			check(it)
		},
		func(int) {
			its, err := s.BatchGet(ctx, keys)
			if err != nil {
				t.Error(err)
			}
			for _, it := range its {
				check(it)
			}
		},
		func(int) {
			page, err := s.Scan(ctx, dynastore.Scan{})
			if err != nil {
				t.Error(err)
				return
			}
			for _, it := range page.Items {
				check(it)
			}
		},
		func(int) { s.Prefetch(keys, nil) },
	}
	for _, read := range readers {
		wg.Go(func() {
			for i := range rounds / 4 {
				read(i)
			}
		})
	}
	wg.Wait()
	for _, k := range keys {
		it := storedItem(s, k)
		require.Equal(t, dynastore.N(strconv.Itoa(2*rounds/len(keys))), it.Get("v"))
		check(it)
	}
}
