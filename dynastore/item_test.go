package dynastore

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestItemAttributes(t *testing.T) {
	base := func() Item {
		return Item{{Name: AttrPK, Value: B("p")}, {Name: AttrSK, Value: B{0}}, {Name: "a", Value: N("1")}, {Name: "b", Value: S("x")}}
	}
	cases := []struct {
		name string
		edit func(it *Item)
		want Item // in name order
	}{
		{"set replaces in place", func(it *Item) { it.Set("a", N("2")) },
			Item{{Name: "a", Value: N("2")}, {Name: "b", Value: S("x")}, {Name: AttrPK, Value: B("p")}, {Name: AttrSK, Value: B{0}}}},
		{"set appends a new name", func(it *Item) { it.Set("c", BOOL(true)) },
			Item{{Name: "a", Value: N("1")}, {Name: "b", Value: S("x")}, {Name: "c", Value: BOOL(true)}, {Name: AttrPK, Value: B("p")}, {Name: AttrSK, Value: B{0}}}},
		{"delete removes", func(it *Item) { it.Delete("a") },
			Item{{Name: "b", Value: S("x")}, {Name: AttrPK, Value: B("p")}, {Name: AttrSK, Value: B{0}}}},
		{"delete of a missing name does nothing", func(it *Item) { it.Delete("zz") },
			Item{{Name: "a", Value: N("1")}, {Name: "b", Value: S("x")}, {Name: AttrPK, Value: B("p")}, {Name: AttrSK, Value: B{0}}}},
		{"delete of the last attribute", func(it *Item) { it.Delete("b") },
			Item{{Name: "a", Value: N("1")}, {Name: AttrPK, Value: B("p")}, {Name: AttrSK, Value: B{0}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			it := base()
			c.edit(&it)
			require.Equal(t, c.want, it.Sorted())
			require.Equal(t, Key{PK: []byte("p"), SK: []byte{0}}, it.Key())
		})
	}
}

func TestItemGetAndClone(t *testing.T) {
	it := Item{{Name: AttrPK, Value: B("p")}, {Name: "a", Value: N("1")}}
	require.Equal(t, N("1"), it.Get("a"))
	require.Nil(t, it.Get("b"))
	require.True(t, it.Has(AttrPK))
	require.False(t, it.Has(AttrSK))
	require.Equal(t, Key{PK: []byte("p")}, it.Key(), "no sk: a nil SK")

	cp := it.Clone(3)
	require.Equal(t, it, cp)
	require.Equal(t, 5, cap(cp))
	cp.Set("a", N("9"))
	cp.Set("c", S("new"))
	require.Equal(t, N("1"), it.Get("a"), "a clone's changes stay in the clone")
	require.False(t, it.Has("c"))

	require.Nil(t, Item(nil).Clone(2))
	require.Nil(t, Item(nil).Sorted())
	require.Nil(t, Item(nil).Get("a"))
}
