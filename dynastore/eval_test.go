package dynastore

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func evalItem() Item {
	return Item{
		{Name: AttrPK, Value: B("p")}, {Name: AttrSK, Value: B{0}},
		{Name: "n", Value: N("5")},
		{Name: "s", Value: S("abc")},
		{Name: "b", Value: B{0x00, 0xff, 'a', 'b'}},
		{Name: "eb", Value: B{}},
		{Name: "bs", Value: BS{[]byte("x"), []byte("y")}},
		{Name: "l", Value: L{S("x"), N("1")}},
		{Name: "m", Value: M{"a": N("1")}},
		{Name: "t", Value: BOOL(true)},
		{Name: "nul", Value: NULL{}},
	}
}

func TestEvalCond(t *testing.T) {
	it := evalItem()
	for _, c := range []struct {
		name    string
		cond    Cond
		want    bool
		invalid bool
	}{
		{"nil", nil, true, false},
		{"exists", Exists{"n"}, true, false},
		{"exists missing", Exists{"zz"}, false, false},
		{"exists NULL attribute", Exists{"nul"}, true, false},
		{"not exists", NotExists{"zz"}, true, false},
		{"not exists present", NotExists{"pk"}, false, false},
		{"N eq", Compare{"n", OpEQ, N("5")}, true, false},
		{"N eq other form", Compare{"n", OpEQ, N("5.0")}, true, false},
		{"N ne", Compare{"n", OpNE, N("5")}, false, false},
		{"N lt numeric not lexical", Compare{"n", OpLT, N("10")}, true, false},
		{"N le", Compare{"n", OpLE, N("5")}, true, false},
		{"N gt", Compare{"n", OpGT, N("-7")}, true, false},
		{"N ge", Compare{"n", OpGE, N("5.0001")}, false, false},
		{"S lt", Compare{"s", OpLT, S("abd")}, true, false},
		{"S lt prefix", Compare{"s", OpLT, S("ab")}, false, false},
		{"B unsigned", Compare{"b", OpLT, B{0x01}}, true, false},
		{"B gt", Compare{"b", OpGT, B{0x00, 0xfe}}, true, false},
		{"type mismatch eq", Compare{"n", OpEQ, S("5")}, false, false},
		{"type mismatch ne", Compare{"n", OpNE, S("5")}, true, false},
		{"type mismatch lt", Compare{"n", OpLT, S("9")}, false, false},
		{"type mismatch not lt", Not{Compare{"n", OpLT, S("9")}}, true, false},
		{"BOOL vs N lt", Compare{"t", OpLT, N("1")}, false, false},
		{"missing eq", Compare{"zz", OpEQ, N("1")}, false, false},
		{"missing ne", Compare{"zz", OpNE, N("1")}, true, false},
		{"missing lt", Compare{"zz", OpLT, N("1")}, false, false},
		{"missing ge", Compare{"zz", OpGE, N("1")}, false, false},
		{"BOOL eq", Compare{"t", OpEQ, BOOL(true)}, true, false},
		{"NULL eq", Compare{"nul", OpEQ, NULL{}}, true, false},
		{"list eq numeric", Compare{"l", OpEQ, L{S("x"), N("1.0")}}, true, false},
		{"list eq order", Compare{"l", OpEQ, L{N("1"), S("x")}}, false, false},
		{"set eq any order", Compare{"bs", OpEQ, BS{[]byte("y"), []byte("x")}}, true, false},
		{"map eq", Compare{"m", OpEQ, M{"a": N("1")}}, true, false},
		{"empty B eq", Compare{"eb", OpEQ, B{}}, true, false},
		{"lt on BOOL literal invalid", Compare{"t", OpLT, BOOL(true)}, false, true},
		{"lt on list literal invalid", Compare{"l", OpLT, L{}}, false, true},
		{"bad number literal", Compare{"n", OpEQ, N("x")}, false, true},
		{"nil literal", Compare{"n", OpEQ, nil}, false, true},
		{"bad op", Compare{"n", 0, N("1")}, false, true},
		{"empty name", Exists{""}, false, true},
		{"is type", IsType{"n", KindN}, true, false},
		{"is type other", IsType{"n", KindS}, false, false},
		{"is type missing", IsType{"zz", KindN}, false, false},
		{"is type NULL", IsType{"nul", KindNULL}, true, false},
		{"is type bad", IsType{"n", 0}, false, true},
		{"size B", SizeCompare{"b", OpEQ, 4}, true, false},
		{"size S", SizeCompare{"s", OpGT, 2}, true, false},
		{"size set", SizeCompare{"bs", OpEQ, 2}, true, false},
		{"size list", SizeCompare{"l", OpLE, 2}, true, false},
		{"size map", SizeCompare{"m", OpLT, 1}, false, false},
		{"size empty B", SizeCompare{"eb", OpEQ, 0}, true, false},
		{"size N none", SizeCompare{"n", OpEQ, 1}, false, false},
		{"size N none ne", SizeCompare{"n", OpNE, 1}, true, false},
		{"size BOOL none", SizeCompare{"t", OpGE, 0}, false, false},
		{"size missing", SizeCompare{"zz", OpLT, 10}, false, false},
		{"size missing ne", SizeCompare{"zz", OpNE, 10}, true, false},
		{"begins with", BeginsWith{"b", []byte{0x00, 0xff}}, true, false},
		{"begins with empty prefix", BeginsWith{"b", nil}, true, false},
		{"begins with no", BeginsWith{"b", []byte{0xff}}, false, false},
		{"begins with on S", BeginsWith{"s", []byte("ab")}, false, false},
		{"begins with missing", BeginsWith{"zz", []byte("a")}, false, false},
		{"contains S", Contains{"s", S("bc")}, true, false},
		{"contains S with B", Contains{"s", B("bc")}, false, false},
		{"contains B", Contains{"b", B{0xff, 'a'}}, true, false},
		{"contains set", Contains{"bs", B("x")}, true, false},
		{"contains set no", Contains{"bs", B("z")}, false, false},
		{"contains set with S", Contains{"bs", S("x")}, false, false},
		{"contains list", Contains{"l", N("1.0")}, true, false},
		{"contains N", Contains{"n", N("5")}, false, false},
		{"contains map", Contains{"m", S("a")}, false, false},
		{"contains missing", Contains{"zz", S("a")}, false, false},
		{"not contains missing", Not{Contains{"zz", S("a")}}, true, false},
		{"and", And{Exists{"n"}, Compare{"n", OpGE, N("1")}, Compare{"n", OpLE, N("9")}}, true, false},
		{"and false", And{Exists{"n"}, Compare{"n", OpGE, N("6")}}, false, false},
		{"and empty", And{}, true, false},
		{"or", Or{Exists{"zz"}, Exists{"n"}}, true, false},
		{"or false", Or{Exists{"zz"}, NotExists{"n"}}, false, false},
		{"or empty", Or{}, false, false},
		{"not", Not{Exists{"zz"}}, true, false},
		{"not nil", Not{}, false, true},
		{"and nil", And{nil}, false, true},
		{"invalid behind short circuit", Or{Exists{"n"}, Compare{"n", OpLT, BOOL(true)}}, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := EvalCond(it, c.cond)
			checked, checkErr := Check(c.cond)
			if c.invalid {
				require.ErrorIs(t, err, ErrInvalid)
				require.ErrorIs(t, checkErr, ErrInvalid)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
			// Checked once, the condition means the same, alone and
			// inside another.
			require.NoError(t, checkErr)
			got, err = EvalCond(it, checked)
			require.NoError(t, err)
			require.Equal(t, c.want, got)
			if c.cond != nil {
				got, err = EvalCond(it, Not{checked})
				require.NoError(t, err)
				require.Equal(t, !c.want, got)
			}
			again, err := Check(checked)
			require.NoError(t, err)
			require.Equal(t, checked, again, "checking a Checked returns it")
		})
	}
	require.ErrorIs(t, ValidateCond((*Checked)(nil)), ErrInvalid)
	require.Panics(t, func() { MustCheck(Not{}) })
}

func TestEvalCondAbsentItem(t *testing.T) {
	for _, c := range []struct {
		cond Cond
		want bool
	}{
		{Exists{AttrPK}, false},
		{NotExists{AttrPK}, true},
		{Compare{"v", OpEQ, N("1")}, false},
		{Compare{"v", OpNE, N("1")}, true},
		{SizeCompare{"v", OpGT, -1}, false},
		{Not{Exists{AttrPK}}, true},
	} {
		got, err := EvalCond(nil, c.cond)
		require.NoError(t, err)
		require.Equal(t, c.want, got, "%#v", c.cond)
	}
}

func TestApplyUpdate(t *testing.T) {
	k := Key{PK: []byte("p"), SK: []byte{0}}
	base := func() Item {
		return Item{{Name: AttrPK, Value: B("p")}, {Name: AttrSK, Value: B{0}}, {Name: "n", Value: N("5")}, {Name: "s", Value: S("abc")}, {Name: "bs", Value: BS{[]byte("x"), []byte("y")}}, {Name: "l", Value: L{S("x")}}}
	}
	with := func(kv ...any) Item {
		it := base()
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				it.Delete(kv[i].(string))
				continue
			}
			it.Set(kv[i].(string), kv[i+1].(Value))
		}
		return it
	}
	for _, c := range []struct {
		name    string
		old     Item
		u       Update
		want    Item
		invalid string // substring of the ErrInvalid message
	}{
		{name: "create from key", old: nil, u: Update{}, want: Item{{Name: AttrPK, Value: B("p")}, {Name: AttrSK, Value: B{0}}}},
		{name: "set literal", old: base(), u: Update{Set: []SetAction{{"a", S("v")}}}, want: with("a", S("v"))},
		{name: "set canonical number", old: base(), u: Update{Set: []SetAction{{"a", N("007.50")}}}, want: with("a", N("7.5"))},
		{name: "set ref", old: base(), u: Update{Set: []SetAction{{"a", Ref{"n"}}}}, want: with("a", N("5"))},
		{name: "operands read the old item", old: base(), u: Update{Set: []SetAction{{"a", Ref{"n"}}, {"n", N("1")}}}, want: with("a", N("5"), "n", N("1"))},
		{name: "swap", old: base(), u: Update{Set: []SetAction{{"n", Ref{"s"}}, {"s", Ref{"n"}}}}, want: with("n", S("abc"), "s", N("5"))},
		{name: "if_not_exists missing", old: base(), u: Update{Set: []SetAction{{"a", IfNotExists{"zz", N("1")}}}}, want: with("a", N("1"))},
		{name: "if_not_exists present", old: base(), u: Update{Set: []SetAction{{"a", IfNotExists{"n", N("1")}}}}, want: with("a", N("5"))},
		{name: "counter from nothing", old: nil, u: Update{Set: []SetAction{{"n", Plus{IfNotExists{"n", N("0")}, N("1")}}}}, want: Item{{Name: AttrPK, Value: B("p")}, {Name: AttrSK, Value: B{0}}, {Name: "n", Value: N("1")}}},
		{name: "plus", old: base(), u: Update{Set: []SetAction{{"n", Plus{Ref{"n"}, N("0.5")}}}}, want: with("n", N("5.5"))},
		{name: "minus", old: base(), u: Update{Set: []SetAction{{"a", Minus{Ref{"n"}, N("10.25")}}}}, want: with("a", N("-5.25"))},
		{name: "list_append", old: base(), u: Update{Set: []SetAction{{"l", ListAppend{Ref{"l"}, L{N("1")}}}}}, want: with("l", L{S("x"), N("1")})},
		{name: "list_append prepend", old: base(), u: Update{Set: []SetAction{{"l", ListAppend{L{N("1")}, Ref{"l"}}}}}, want: with("l", L{N("1"), S("x")})},
		{name: "remove", old: base(), u: Update{Remove: []string{"n", "zz"}}, want: with("n", nil)},
		{name: "add number", old: base(), u: Update{Add: []AttrValue{{"n", N("-7")}}}, want: with("n", N("-2"))},
		{name: "add number missing starts at 0", old: base(), u: Update{Add: []AttrValue{{"c", N("-3.50")}}}, want: with("c", N("-3.5"))},
		{name: "add set", old: base(), u: Update{Add: []AttrValue{{"bs", BS{[]byte("y"), []byte("z")}}}}, want: with("bs", BS{[]byte("x"), []byte("y"), []byte("z")})},
		{name: "add set missing", old: base(), u: Update{Add: []AttrValue{{"c", BS{[]byte("q")}}}}, want: with("c", BS{[]byte("q")})},
		{name: "delete from set", old: base(), u: Update{Delete: []AttrValue{{"bs", BS{[]byte("x"), []byte("q")}}}}, want: with("bs", BS{[]byte("y")})},
		{name: "delete empties set", old: base(), u: Update{Delete: []AttrValue{{"bs", BS{[]byte("x"), []byte("y")}}}}, want: with("bs", nil)},
		{name: "delete from missing", old: base(), u: Update{Delete: []AttrValue{{"zz", BS{[]byte("x")}}}}, want: base()},
		{name: "empty binary value", old: base(), u: Update{Set: []SetAction{{"e", B{}}}}, want: with("e", B{})},

		{name: "same attribute twice", old: base(), u: Update{Set: []SetAction{{"n", N("1")}, {"n", N("2")}}}, invalid: "overlap"},
		{name: "set and remove", old: base(), u: Update{Set: []SetAction{{"n", N("1")}}, Remove: []string{"n"}}, invalid: "overlap"},
		{name: "remove and add", old: base(), u: Update{Remove: []string{"x", "n"}, Add: []AttrValue{{"n", N("1")}}}, invalid: "overlap"},
		{name: "set and delete", old: base(), u: Update{Set: []SetAction{{"bs", N("1")}}, Remove: []string{"x"}, Add: []AttrValue{{"n", N("1")}}, Delete: []AttrValue{{"bs", BS{[]byte("b")}}}}, invalid: "overlap"},
		{name: "add and delete", old: base(), u: Update{Add: []AttrValue{{"bs", BS{[]byte("a")}}}, Delete: []AttrValue{{"bs", BS{[]byte("b")}}}}, invalid: "overlap"},
		{name: "set pk", old: base(), u: Update{Set: []SetAction{{AttrPK, B("z")}}}, invalid: "part of the key"},
		{name: "remove sk", old: base(), u: Update{Remove: []string{AttrSK}}, invalid: "part of the key"},
		{name: "add to string", old: base(), u: Update{Add: []AttrValue{{"s", N("1")}}}, invalid: "incorrect data type"},
		{name: "add set to number", old: base(), u: Update{Add: []AttrValue{{"n", BS{[]byte("1")}}}}, invalid: "incorrect data type"},
		{name: "add number to set", old: base(), u: Update{Add: []AttrValue{{"bs", N("1")}}}, invalid: "incorrect data type"},
		{name: "add a string", old: base(), u: Update{Add: []AttrValue{{"s", S("x")}}}, invalid: "ADD"},
		{name: "add a list", old: base(), u: Update{Add: []AttrValue{{"l", L{N("1")}}}}, invalid: "ADD"},
		{name: "delete a number", old: base(), u: Update{Delete: []AttrValue{{"n", N("1")}}}, invalid: "DELETE"},
		{name: "delete from a number", old: base(), u: Update{Delete: []AttrValue{{"n", BS{[]byte("1")}}}}, invalid: "incorrect data type"},
		{name: "ref missing", old: base(), u: Update{Set: []SetAction{{"a", Ref{"zz"}}}}, invalid: "does not exist"},
		{name: "ref on absent item", old: nil, u: Update{Set: []SetAction{{"a", Ref{"zz"}}}}, invalid: "does not exist"},
		{name: "plus missing", old: base(), u: Update{Set: []SetAction{{"a", Plus{Ref{"zz"}, N("1")}}}}, invalid: "does not exist"},
		{name: "plus on string attribute", old: base(), u: Update{Set: []SetAction{{"a", Plus{Ref{"s"}, N("1")}}}}, invalid: "incorrect data type"},
		{name: "plus string literal", old: base(), u: Update{Set: []SetAction{{"a", Plus{Ref{"n"}, S("1")}}}}, invalid: "operand type: S"},
		{name: "minus overflow", old: base(), u: Update{Set: []SetAction{{"a", Minus{N("-9e125"), N("9e125")}}}}, invalid: "Number overflow"},
		{name: "plus precision", old: base(), u: Update{Set: []SetAction{{"a", Plus{N("1"), N("1e-100")}}}}, invalid: "38 digits"},
		{name: "list_append on string", old: base(), u: Update{Set: []SetAction{{"a", ListAppend{Ref{"s"}, L{}}}}}, invalid: "incorrect data type"},
		{name: "list_append missing", old: base(), u: Update{Set: []SetAction{{"a", ListAppend{Ref{"zz"}, L{}}}}}, invalid: "does not exist"},
		{name: "list_append number literal", old: base(), u: Update{Set: []SetAction{{"a", ListAppend{Ref{"l"}, N("1")}}}}, invalid: "list_append"},
		{name: "empty set value", old: base(), u: Update{Set: []SetAction{{"a", BS{}}}}, invalid: "should not be empty"},
		{name: "empty set add", old: base(), u: Update{Add: []AttrValue{{"bs", BS{}}}}, invalid: "should not be empty"},
		{name: "duplicate set members", old: base(), u: Update{Add: []AttrValue{{"bs", BS{[]byte("a"), []byte("a")}}}}, invalid: "duplicates"},
		{name: "bad number", old: base(), u: Update{Set: []SetAction{{"a", N("1x")}}}, invalid: "converted"},
		{name: "nil operand", old: base(), u: Update{Set: []SetAction{{"a", nil}}}, invalid: "nil operand"},
		{name: "empty name", old: base(), u: Update{Remove: []string{""}}, invalid: "Empty attribute name"},
		{name: "many names", old: base(), u: Update{Remove: names(40)}, want: base()},
		{name: "many names, the last twice", old: base(), u: Update{Remove: append(names(40), "r39")}, invalid: "overlap"},
		{name: "many names, an early one twice", old: base(), u: Update{Remove: append(names(40), "r3")}, invalid: "overlap"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var snapshot Item
			if c.old != nil {
				snapshot = CloneItem(c.old)
			}
			got, err := ApplyUpdate(k, c.old, c.u)
			require.Equal(t, snapshot, c.old, "old item must not change")
			if c.invalid != "" {
				require.ErrorIs(t, err, ErrInvalid)
				require.Contains(t, err.Error(), c.invalid)
				return
			}
			require.NoError(t, err)
			require.True(t, ItemsEqual(c.want, got), "want %v\n got %v", c.want, got)
			// The sharing variant makes the same item, sized alike from its key.
			shared, err := ApplyValidUpdate(k, c.old, c.u)
			require.NoError(t, err)
			require.Equal(t, got.Sorted(), shared.Sorted())
			require.Equal(t, ItemSize(got), ItemSizeAt(k, shared))
		})
	}
}

// names returns n distinct attribute names.
func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("r%d", i)
	}
	return out
}

func TestApplyUpdateBadKey(t *testing.T) {
	_, err := ApplyUpdate(Key{PK: nil, SK: []byte{0}}, nil, Update{})
	require.ErrorIs(t, err, ErrKeyTooLarge)
}

func TestItemSize(t *testing.T) {
	// Value sizes measured on DynamoDB Local by bisecting its 400 KB limit;
	// each item here is the key (pk "a", sk 0x00: 6 bytes) plus attribute "s".
	for _, c := range []struct {
		name string
		v    Value
		size int
	}{
		{"set of 1", BS{[]byte("a")}, 1},
		{"set of 4", BS{[]byte("a"), []byte("b"), []byte("c"), []byte("d")}, 4},
		{"set of 2x10", BS{[]byte(strings.Repeat("a", 10)), []byte(strings.Repeat("b", 10))}, 20},
		{"38-digit number", N(strings.Repeat("1", 38)), 20},
		{"number 0", N("0"), 1},
		{"bool", BOOL(true), 1},
		{"null", NULL{}, 1},
		{"empty list", L{}, 3},
		{"empty map", M{}, 3},
		{"map of one", M{"ab": B("xyz")}, 9},
		{"list of two", L{B("xyz"), S("q")}, 9},
		{"nested list", L{L{B("xyz")}}, 11},
		{"utf-8 string", S("é"), 2},
		{"empty binary", B{}, 0},
	} {
		it := Item{{Name: AttrPK, Value: B("a")}, {Name: AttrSK, Value: B{0}}, {Name: "s", Value: c.v}}
		require.Equal(t, 6+1+c.size, ItemSize(it), c.name)
	}
}

func TestNormalizeItem(t *testing.T) {
	big := strings.Repeat("x", MaxItemSize-7)
	for _, c := range []struct {
		name string
		it   Item
		err  error
		want Item
		msg  string // substring of the error, if set
	}{
		{"canonical", Item{{Name: AttrPK, Value: B("a")}, {Name: AttrSK, Value: B{0}}, {Name: "n", Value: N("1.50")}, {Name: "l", Value: L{N("007")}}, {Name: "m", Value: M{"x": N("-0")}}},
			nil, Item{{Name: AttrPK, Value: B("a")}, {Name: AttrSK, Value: B{0}}, {Name: "n", Value: N("1.5")}, {Name: "l", Value: L{N("7")}}, {Name: "m", Value: M{"x": N("0")}}}, ""},
		{"at the limit", Item{{Name: AttrPK, Value: B("a")}, {Name: AttrSK, Value: B{0}}, {Name: "v", Value: B(big)}}, nil, nil, ""},
		{"over the limit", Item{{Name: AttrPK, Value: B("a")}, {Name: AttrSK, Value: B{0}}, {Name: "v", Value: B(big + "x")}}, ErrItemTooLarge, nil, ""},
		{"no sk", Item{{Name: AttrPK, Value: B("a")}}, ErrInvalid, nil, ""},
		{"string pk", Item{{Name: AttrPK, Value: S("a")}, {Name: AttrSK, Value: B{0}}}, ErrInvalid, nil, ""},
		{"empty pk", Item{{Name: AttrPK, Value: B{}}, {Name: AttrSK, Value: B{0}}}, ErrKeyTooLarge, nil, ""},
		{"long pk", Item{{Name: AttrPK, Value: B(strings.Repeat("k", MaxPKSize+1))}, {Name: AttrSK, Value: B{0}}}, ErrKeyTooLarge, nil, ""},
		{"long sk", Item{{Name: AttrPK, Value: B("a")}, {Name: AttrSK, Value: B(strings.Repeat("k", MaxSKSize+1))}}, ErrKeyTooLarge, nil, ""},
		{"empty set", Item{{Name: AttrPK, Value: B("a")}, {Name: AttrSK, Value: B{0}}, {Name: "s", Value: BS{}}}, ErrInvalid, nil, ""},
		{"nested empty set", Item{{Name: AttrPK, Value: B("a")}, {Name: AttrSK, Value: B{0}}, {Name: "l", Value: L{BS{}}}}, ErrInvalid, nil, ""},
		{"empty map key", Item{{Name: AttrPK, Value: B("a")}, {Name: AttrSK, Value: B{0}}, {Name: "m", Value: M{"": NULL{}}}}, ErrInvalid, nil, ""},
		{"empty attr name", Item{{Name: AttrPK, Value: B("a")}, {Name: AttrSK, Value: B{0}}, {Name: "", Value: NULL{}}}, ErrInvalid, nil, ""},
		{"nil value", Item{{Name: AttrPK, Value: B("a")}, {Name: AttrSK, Value: B{0}}, {Name: "x", Value: nil}}, ErrInvalid, nil, ""},
		{"empty member is fine", Item{{Name: AttrPK, Value: B("a")}, {Name: AttrSK, Value: B{0}}, {Name: "s", Value: BS{{}, []byte("x")}}}, nil, nil, ""},
		{"attr name twice", Item{{Name: AttrPK, Value: B("a")}, {Name: AttrSK, Value: B{0}}, {Name: "x", Value: N("1")}, {Name: "x", Value: N("1")}}, ErrInvalid, nil, "appears twice"},
		{"key name twice", Item{{Name: AttrPK, Value: B("a")}, {Name: AttrSK, Value: B{0}}, {Name: AttrPK, Value: B("a")}}, ErrInvalid, nil, "appears twice"},
		{"attr name twice among many", append(manyAttrs(40), Attr{Name: "r3", Value: N("1")}), ErrInvalid, nil, "appears twice"},
		{"many attrs", manyAttrs(40), nil, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := CloneItem(c.it)
			got, size, err := NormalizeItemSize(c.it)
			// AdoptItem answers the same, in place.
			adopted, adoptedSize, adoptErr := AdoptItem(in)
			if c.err != nil {
				require.ErrorIs(t, err, c.err)
				require.ErrorContains(t, err, c.msg)
				require.EqualError(t, adoptErr, err.Error())
				return
			}
			require.NoError(t, err)
			require.NoError(t, adoptErr)
			require.Equal(t, ItemSize(got), size)
			require.Equal(t, size, adoptedSize)
			require.Equal(t, got.Sorted(), adopted.Sorted())
			require.Equal(t, got.Sorted(), in.Sorted(), "adopted in place")
			if c.want != nil {
				require.Equal(t, c.want.Sorted(), got.Sorted())
			}
		})
	}
}

// manyAttrs returns a valid item of the key and n more attributes, more
// than checkNames compares pairwise when n is over 30.
func manyAttrs(n int) Item {
	it := Item{{Name: AttrPK, Value: B("a")}, {Name: AttrSK, Value: B{0}}}
	for _, name := range names(n) {
		it = append(it, Attr{Name: name, Value: N("1")})
	}
	return it
}

func TestNormalizeItemCopies(t *testing.T) {
	in := Item{{Name: AttrPK, Value: B("a")}, {Name: AttrSK, Value: B{0}}, {Name: "b", Value: B("xy")}, {Name: "bs", Value: BS{[]byte("m")}}, {Name: "l", Value: L{B("q")}}}
	out, err := NormalizeItem(in)
	require.NoError(t, err)
	in.Get("b").(B)[0] = 'Z'
	in.Get("bs").(BS)[0][0] = 'Z'
	in.Get("l").(L)[0].(B)[0] = 'Z'
	require.Equal(t, B("xy"), out.Get("b"))
	require.Equal(t, BS{[]byte("m")}, out.Get("bs"))
	require.Equal(t, L{B("q")}, out.Get("l"))
}

func TestValidateKey(t *testing.T) {
	require.NoError(t, ValidateKey(Key{PK: make([]byte, MaxPKSize), SK: make([]byte, MaxSKSize)}))
	require.ErrorIs(t, ValidateKey(Key{PK: make([]byte, MaxPKSize+1), SK: []byte{0}}), ErrKeyTooLarge)
	require.ErrorIs(t, ValidateKey(Key{PK: []byte{0}, SK: make([]byte, MaxSKSize+1)}), ErrKeyTooLarge)
	require.ErrorIs(t, ValidateKey(Key{PK: nil, SK: []byte{0}}), ErrKeyTooLarge)
	require.ErrorIs(t, ValidateKey(Key{PK: []byte{0}, SK: []byte{}}), ErrKeyTooLarge)
}

func TestCapacityUnits(t *testing.T) {
	for _, c := range []struct {
		size     int
		rcu, wcu float64
	}{
		{0, 1, 1}, {1, 1, 1}, {1024, 1, 1}, {1025, 1, 2}, {4096, 1, 4}, {4097, 2, 5},
		{307213, 76, 301}, // a 300 KB item, as DynamoDB Local reports it
	} {
		require.Equal(t, c.rcu, ReadUnits(c.size), "read %d", c.size)
		require.Equal(t, c.wcu, WriteUnits(c.size), "write %d", c.size)
	}
}

func TestProjection(t *testing.T) {
	old := Item{{Name: AttrPK, Value: B("p")}, {Name: AttrSK, Value: B{0}}, {Name: "n", Value: N("5")}, {Name: "gone", Value: S("x")}, {Name: "same", Value: S("y")}}
	u := &Update{Set: []SetAction{{"n", N("6")}, {"same", S("y")}, {"new", S("z")}}, Remove: []string{"gone", "never"}}
	nw, err := ApplyUpdate(old.Key(), old, *u)
	require.NoError(t, err)
	for _, c := range []struct {
		rv   ReturnValues
		want Item
	}{
		{ReturnNone, nil},
		{ReturnAllOld, old},
		{ReturnAllNew, nw},
		{ReturnUpdatedOld, Item{{Name: "n", Value: N("5")}, {Name: "gone", Value: S("x")}, {Name: "same", Value: S("y")}}},
		{ReturnUpdatedNew, Item{{Name: "n", Value: N("6")}, {Name: "same", Value: S("y")}, {Name: "new", Value: S("z")}}},
	} {
		require.Equal(t, c.want.Sorted(), Projection(c.rv, old, nw, u).Sorted(), "rv %d", c.rv)
	}
	require.Nil(t, Projection(ReturnUpdatedOld, nil, nw, &Update{Remove: []string{"x"}}))
	require.Nil(t, Projection(ReturnAllOld, nil, nw, u))
}

func TestValidateReturn(t *testing.T) {
	for rv := ReturnNone; rv <= ReturnUpdatedNew; rv++ {
		require.NoError(t, ValidateReturn(rv, true))
		if rv == ReturnNone || rv == ReturnAllOld {
			require.NoError(t, ValidateReturn(rv, false))
		} else {
			require.ErrorIs(t, ValidateReturn(rv, false), ErrInvalid)
		}
	}
	require.ErrorIs(t, ValidateReturn(ReturnUpdatedNew+1, true), ErrInvalid)
}

func TestValuesEqual(t *testing.T) {
	require.True(t, ValuesEqual(B(nil), B{}))
	require.True(t, ValuesEqual(N("1.0"), N("1")))
	require.False(t, ValuesEqual(N("1"), S("1")))
	require.False(t, ValuesEqual(BS{[]byte("a")}, BS{[]byte("b")}))
	require.False(t, ValuesEqual(M{"a": N("1")}, M{"b": N("1")}))
	require.False(t, ValuesEqual(nil, nil))
	require.True(t, ItemsEqual(nil, Item{}))
	require.False(t, ItemsEqual(Item{{Name: "a", Value: N("1")}}, Item{{Name: "a", Value: N("2")}}))
	require.True(t, ItemsEqual(Item{{Name: "a", Value: N("1")}, {Name: "b", Value: S("x")}}, Item{{Name: "b", Value: S("x")}, {Name: "a", Value: N("1.0")}}), "in any order")
	require.False(t, ItemsEqual(Item{{Name: "a", Value: N("1")}}, Item{{Name: "b", Value: N("1")}}))
}

// checkValue must reject exactly what NormalizeValue rejects, with its error.
func TestCheckValueMatchesNormalize(t *testing.T) {
	for _, v := range []Value{
		nil, B(nil), B("x"), S(""), S("x"), N("7"), N("007"), N("1e3"), N("x"), N("1e200"),
		N(strings.Repeat("1", 39)), BS{}, BS{[]byte("a")}, BS{[]byte("a"), []byte("a")},
		BS{[]byte("a"), []byte("b")}, L{}, L{N("1"), N("bad")}, M{"": S("x")}, M{"a": N("bad")},
		M{"a": L{BS{}}}, BOOL(true), NULL{},
	} {
		_, nerr := NormalizeValue(v)
		cerr := checkValue(v)
		if nerr == nil {
			require.NoError(t, cerr, "%#v", v)
			continue
		}
		require.EqualError(t, cerr, nerr.Error(), "%#v", v)
	}
}
