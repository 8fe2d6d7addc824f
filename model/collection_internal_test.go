package model

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
)

// TestKeyCacheBounds checks that a key cache keeps at most keyCacheMax
// entries and keyCacheBytes of weight, keeps the entry just put, and
// accounts weight exactly through replacements and drops.
func TestKeyCacheBounds(t *testing.T) {
	var gens keyCache[largeGen]
	for i := 0; i < keyCacheMax+100; i++ {
		gens.put(0, []byte(strconv.Itoa(i)), largeGen{typ: TypeSet, gen: []byte("0123456789abcdef")})
	}
	require.Len(t, gens.m, keyCacheMax)
	_, ok := gens.get(0, []byte(strconv.Itoa(keyCacheMax+99)))
	require.True(t, ok, "the entry just put stays")

	var items ItemCache
	heavy := func(i int) dynastore.Item {
		return dynastore.Item{
			{Name: dynastore.AttrPK, Value: dynastore.B("k" + strconv.Itoa(i))},
			{Name: dynastore.AttrSK, Value: dynastore.B{0}},
			{Name: AttrType, Value: dynastore.S(TypeList)},
			{Name: AttrValue, Value: dynastore.L{dynastore.B(make([]byte, 1<<20))}},
		}
	}
	for i := 0; i < 20; i++ {
		items.Put(0, []byte(strconv.Itoa(i)), heavy(i))
		items.Put(0, []byte(strconv.Itoa(i)), heavy(i)) // a replacement
	}
	require.LessOrEqual(t, items.kc.weight, keyCacheBytes)
	_, ok = items.Get(0, []byte("19"))
	require.True(t, ok)
	items.Drop(0, []byte("19"))
	sum := 0
	for _, e := range items.kc.m {
		sum += e.weight()
	}
	require.Equal(t, sum, items.kc.weight)
}

// TestItemCacheEntries covers what the item cache keeps: collection key
// items, known absence (nil), nothing for other types, and the pause of
// guarded writes after a contended one.
func TestItemCacheEntries(t *testing.T) {
	var ic ItemCache
	set := dynastore.Item{{Name: AttrType, Value: dynastore.S(TypeSet)}, {Name: AttrVer, Value: dynastore.N("1")}}
	cases := []struct {
		name    string
		it      dynastore.Item
		kept    bool
		content dynastore.Item
	}{
		{"set", set, true, set},
		{"absent", nil, true, nil},
		{"string", dynastore.Item{{Name: AttrType, Value: dynastore.S(TypeString)}}, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ic.Put(0, []byte(tc.name), tc.it)
			e, ok := ic.Get(0, []byte(tc.name))
			require.Equal(t, tc.kept, ok)
			require.Equal(t, tc.content, e.Item)
		})
	}
	ic.Put(0, []byte("k"), set)
	ic.Put(0, []byte("k"), nil)
	_, ok := ic.Get(0, []byte("k"))
	require.True(t, ok)
	ic.Put(0, []byte("k"), dynastore.Item{{Name: AttrType, Value: dynastore.S(TypeString)}})
	_, ok = ic.Get(0, []byte("k"))
	require.False(t, ok, "a key now of another type is forgotten")

	ic.contend(0, []byte("c"), set, 1000)
	_, ok = ic.Guardable(0, []byte("c"), 1000)
	require.False(t, ok, "paused right after contention")
	ic.Put(0, []byte("c"), set)
	_, ok = ic.Guardable(0, []byte("c"), 1000+contendedPause.Milliseconds()-1)
	require.False(t, ok, "a later put keeps the pause")
	_, ok = ic.Guardable(0, []byte("c"), 1000+contendedPause.Milliseconds())
	require.True(t, ok)
}

// TestOnKnownItem checks the update a guarded fast path sends: lighter
// where the known item allows, and always leaving that item as the full
// update would.
func TestOnKnownItem(t *testing.T) {
	key := ItemKey(0, []byte("k"))
	set := dynastore.Item{{Name: AttrType, Value: dynastore.S(TypeSet)}, {Name: AttrVer, Value: dynastore.N("1")}, {Name: AttrValue, Value: dynastore.BS{[]byte("a")}}}
	list := dynastore.Item{{Name: AttrType, Value: dynastore.S(TypeList)}, {Name: AttrVer, Value: dynastore.N("1")}, {Name: AttrValue, Value: dynastore.L{dynastore.B("a")}}}
	bare := dynastore.Item{{Name: AttrType, Value: dynastore.S(TypeList)}, {Name: AttrVer, Value: dynastore.N("1")}}
	ver := dynastore.SetAction{Attr: AttrVer, Val: dynastore.N("2")}
	typ := func(t string) dynastore.SetAction {
		return dynastore.SetAction{Attr: AttrType, Val: dynastore.S(t)}
	}
	push := dynastore.SetAction{Attr: AttrValue, Val: dynastore.ListAppend{
		A: dynastore.L{dynastore.B("b")},
		B: dynastore.IfNotExists{Attr: AttrValue, Default: dynastore.L{}},
	}}
	pushKnown := dynastore.SetAction{Attr: AttrValue, Val: dynastore.ListAppend{
		A: dynastore.L{dynastore.B("b")},
		B: dynastore.Ref{Attr: AttrValue},
	}}
	add := []dynastore.AttrValue{{Attr: AttrValue, Val: dynastore.BS{[]byte("b")}}}
	for _, tc := range []struct {
		name string
		it   dynastore.Item
		u    dynastore.Update
		want dynastore.Update
	}{
		{"type it has dropped", set,
			dynastore.Update{Set: []dynastore.SetAction{typ(TypeSet), ver}, Add: add},
			dynastore.Update{Set: []dynastore.SetAction{ver}, Add: add}},
		{"another type kept", set,
			dynastore.Update{Set: []dynastore.SetAction{typ(TypeHash), ver}},
			dynastore.Update{Set: []dynastore.SetAction{typ(TypeHash), ver}}},
		{"if_not_exists of a present attribute reduced", list,
			dynastore.Update{Set: []dynastore.SetAction{typ(TypeList), push, ver}},
			dynastore.Update{Set: []dynastore.SetAction{pushKnown, ver}}},
		{"if_not_exists of a missing attribute kept", bare,
			dynastore.Update{Set: []dynastore.SetAction{push, ver}},
			dynastore.Update{Set: []dynastore.SetAction{push, ver}}},
		{"an update is never left empty", set,
			dynastore.Update{Set: []dynastore.SetAction{typ(TypeSet)}},
			dynastore.Update{Set: []dynastore.SetAction{typ(TypeSet)}}},
		{"only no-op sets beside other actions", set,
			dynastore.Update{Set: []dynastore.SetAction{typ(TypeSet)}, Add: add},
			dynastore.Update{Set: []dynastore.SetAction{}, Add: add}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := onKnownItem(tc.it, tc.u)
			require.Equal(t, tc.want, got)
			full, err := dynastore.ApplyUpdate(key, tc.it, tc.u)
			require.NoError(t, err)
			light, err := dynastore.ApplyUpdate(key, tc.it, got)
			require.NoError(t, err)
			require.Equal(t, full, light)
		})
	}
}

// TestSameVer compares version tokens of either type: strings, and the
// Numbers of items written before tokens became strings.
func TestSameVer(t *testing.T) {
	item := func(ver dynastore.Value) dynastore.Item {
		it := dynastore.Item{{Name: dynastore.AttrPK, Value: dynastore.B("k")}}
		if ver != nil {
			it.Set(AttrVer, ver)
		}
		return it
	}
	s1, s2 := dynastore.S("AAAAAAAAAAA"), dynastore.S("AAAAAAAAAAB")
	for _, c := range []struct {
		name string
		a, b dynastore.Item
		same bool
	}{
		{"same string", item(s1), item(s1), true},
		{"other string", item(s1), item(s2), false},
		{"same number", item(dynastore.N("42")), item(dynastore.N("42")), true},
		{"other number", item(dynastore.N("42")), item(dynastore.N("43")), false},
		{"number then string", item(dynastore.N("42")), item(s1), false},
		{"neither has one", item(nil), item(nil), true},
		{"one has one", item(nil), item(s1), false},
		{"both absent", nil, nil, true},
		{"one absent", nil, item(s1), false},
	} {
		require.Equal(t, c.same, SameVer(c.a, c.b), c.name)
	}
}
