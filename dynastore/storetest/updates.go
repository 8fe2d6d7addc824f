package storetest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
)

var updateScenarios = []scenario{
	{"UpdateActions", testUpdateActions},
	{"UpdateOperandsReadOldItem", testUpdateOldOperands},
	{"InvalidUpdates", testInvalidUpdates},
}

type (
	set = dynastore.SetAction
	av  = dynastore.AttrValue
	ref = dynastore.Ref
)

func updBase(k dynastore.Key) Item {
	return item(k, "n", N("5"), "s", S("abc"), "bs", BS{[]byte("x"), []byte("y")}, "l", L{S("x")})
}

// with returns updBase(k) changed by name/value pairs (a nil value removes).
func with(k dynastore.Key, kv ...any) Item {
	it := updBase(k)
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			it.Delete(kv[i].(string))
			continue
		}
		it.Set(kv[i].(string), kv[i+1].(dynastore.Value))
	}
	return it
}

func testUpdateActions(t *testing.T, s dynastore.Store) {
	for i, c := range []struct {
		name   string
		absent bool // start without the item
		u      dynastore.Update
		want   func(k dynastore.Key) Item
	}{
		{"SET literal", false, dynastore.Update{Set: []set{{Attr: "a", Val: S("v")}}}, func(k dynastore.Key) Item { return with(k, "a", S("v")) }},
		{"SET overwrites another type", false, dynastore.Update{Set: []set{{Attr: "n", Val: L{BOOL(true)}}}}, func(k dynastore.Key) Item { return with(k, "n", L{BOOL(true)}) }},
		{"SET Ref", false, dynastore.Update{Set: []set{{Attr: "a", Val: ref{Attr: "bs"}}}}, func(k dynastore.Key) Item { return with(k, "a", BS{[]byte("x"), []byte("y")}) }},
		{"SET if_not_exists absent", false, dynastore.Update{Set: []set{{Attr: "a", Val: dynastore.IfNotExists{Attr: "zz", Default: N("1")}}}}, func(k dynastore.Key) Item { return with(k, "a", N("1")) }},
		{"SET if_not_exists present", false, dynastore.Update{Set: []set{{Attr: "a", Val: dynastore.IfNotExists{Attr: "s", Default: S("d")}}}}, func(k dynastore.Key) Item { return with(k, "a", S("abc")) }},
		{"SET self if_not_exists", false, dynastore.Update{Set: []set{{Attr: "s", Val: dynastore.IfNotExists{Attr: "s", Default: S("d")}}}}, func(k dynastore.Key) Item { return updBase(k) }},
		{"SET plus", false, dynastore.Update{Set: []set{{Attr: "n", Val: dynastore.Plus{A: ref{Attr: "n"}, B: N("0.5")}}}}, func(k dynastore.Key) Item { return with(k, "n", N("5.5")) }},
		{"SET minus", false, dynastore.Update{Set: []set{{Attr: "a", Val: dynastore.Minus{A: ref{Attr: "n"}, B: N("10.25")}}}}, func(k dynastore.Key) Item { return with(k, "a", N("-5.25")) }},
		{"SET minus literals", false, dynastore.Update{Set: []set{{Attr: "a", Val: dynastore.Minus{A: N("1"), B: N("1")}}}}, func(k dynastore.Key) Item { return with(k, "a", N("0")) }},
		{"SET counter on absent item", true, dynastore.Update{Set: []set{{Attr: "n", Val: dynastore.Plus{A: dynastore.IfNotExists{Attr: "n", Default: N("0")}, B: N("3")}}}}, func(k dynastore.Key) Item { return item(k, "n", N("3")) }},
		{"SET list_append", false, dynastore.Update{Set: []set{{Attr: "l", Val: dynastore.ListAppend{A: ref{Attr: "l"}, B: L{N("1"), B("b")}}}}}, func(k dynastore.Key) Item { return with(k, "l", L{S("x"), N("1"), B("b")}) }},
		{"SET list_append prepend", false, dynastore.Update{Set: []set{{Attr: "l", Val: dynastore.ListAppend{A: L{N("1")}, B: ref{Attr: "l"}}}}}, func(k dynastore.Key) Item { return with(k, "l", L{N("1"), S("x")}) }},
		{"SET list_append if_not_exists", false, dynastore.Update{Set: []set{{Attr: "q", Val: dynastore.ListAppend{A: dynastore.IfNotExists{Attr: "q", Default: L{}}, B: L{N("1")}}}}}, func(k dynastore.Key) Item { return with(k, "q", L{N("1")}) }},
		{"SET several", false, dynastore.Update{Set: []set{{Attr: "a", Val: N("1")}, {Attr: "b", Val: M{"k": NULL{}}}}}, func(k dynastore.Key) Item { return with(k, "a", N("1"), "b", M{"k": NULL{}}) }},
		{"REMOVE", false, dynastore.Update{Remove: []string{"n", "s"}}, func(k dynastore.Key) Item { return with(k, "n", nil, "s", nil) }},
		{"REMOVE missing", false, dynastore.Update{Remove: []string{"zz"}}, func(k dynastore.Key) Item { return updBase(k) }},
		{"ADD number", false, dynastore.Update{Add: []av{{Attr: "n", Val: N("-7")}}}, func(k dynastore.Key) Item { return with(k, "n", N("-2")) }},
		{"ADD number to missing starts at 0", false, dynastore.Update{Add: []av{{Attr: "c", Val: N("-3.50")}}}, func(k dynastore.Key) Item { return with(k, "c", N("-3.5")) }},
		{"ADD number on absent item", true, dynastore.Update{Add: []av{{Attr: "c", Val: N("1")}}}, func(k dynastore.Key) Item { return item(k, "c", N("1")) }},
		{"ADD set members", false, dynastore.Update{Add: []av{{Attr: "bs", Val: BS{[]byte("y"), []byte("z")}}}}, func(k dynastore.Key) Item { return with(k, "bs", BS{[]byte("x"), []byte("y"), []byte("z")}) }},
		{"ADD set to missing", false, dynastore.Update{Add: []av{{Attr: "c", Val: BS{[]byte{0x00}, []byte{0xff}}}}}, func(k dynastore.Key) Item { return with(k, "c", BS{[]byte{0x00}, []byte{0xff}}) }},
		{"DELETE set members", false, dynastore.Update{Delete: []av{{Attr: "bs", Val: BS{[]byte("x"), []byte("q")}}}}, func(k dynastore.Key) Item { return with(k, "bs", BS{[]byte("y")}) }},
		{"DELETE emptying a set removes it", false, dynastore.Update{Delete: []av{{Attr: "bs", Val: BS{[]byte("x"), []byte("y")}}}}, func(k dynastore.Key) Item { return with(k, "bs", nil) }},
		{"DELETE from missing", false, dynastore.Update{Delete: []av{{Attr: "zz", Val: BS{[]byte("x")}}}}, func(k dynastore.Key) Item { return updBase(k) }},
		{"all four actions", false, dynastore.Update{
			Set:    []set{{Attr: "a", Val: S("set")}},
			Remove: []string{"l"},
			Add:    []av{{Attr: "n", Val: N("1")}},
			Delete: []av{{Attr: "bs", Val: BS{[]byte("x")}}},
		}, func(k dynastore.Key) Item {
			return with(k, "a", S("set"), "l", nil, "n", N("6"), "bs", BS{[]byte("y")})
		}},
		{"no actions", false, dynastore.Update{}, func(k dynastore.Key) Item { return updBase(k) }},
		{"no actions on absent item", true, dynastore.Update{}, func(k dynastore.Key) Item { return item(k) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := key("upd" + itoa(i))
			if !c.absent {
				put(t, s, updBase(k))
			}
			got, err := s.Update(ctxOf(t), k, c.u, dynastore.WriteOptions{Return: dynastore.ReturnAllNew})
			require.NoError(t, err)
			want := c.want(k)
			requireSameItem(t, want, got, "ALL_NEW")
			requireSameItem(t, want, get(t, s, k), "stored")
		})
	}
}

func testUpdateOldOperands(t *testing.T, s dynastore.Store) {
	k := key("swap")
	put(t, s, item(k, "a", S("A"), "b", S("B"), "n", N("1")))
	got, err := s.Update(ctxOf(t), k, dynastore.Update{Set: []set{
		{Attr: "a", Val: ref{Attr: "b"}},
		{Attr: "b", Val: ref{Attr: "a"}},
		{Attr: "c", Val: ref{Attr: "n"}},
		{Attr: "n", Val: dynastore.Plus{A: ref{Attr: "n"}, B: N("1")}},
	}}, dynastore.WriteOptions{Return: dynastore.ReturnAllNew})
	require.NoError(t, err)
	requireSameItem(t, item(k, "a", S("B"), "b", S("A"), "c", N("1"), "n", N("2")), got)
}

func testInvalidUpdates(t *testing.T, s dynastore.Store) {
	for i, c := range []struct {
		name string
		u    dynastore.Update
	}{
		{"SET twice", dynastore.Update{Set: []set{{Attr: "n", Val: N("1")}, {Attr: "n", Val: N("2")}}}},
		{"SET and REMOVE", dynastore.Update{Set: []set{{Attr: "n", Val: N("1")}}, Remove: []string{"n"}}},
		{"ADD and DELETE", dynastore.Update{Add: []av{{Attr: "bs", Val: BS{[]byte("a")}}}, Delete: []av{{Attr: "bs", Val: BS{[]byte("b")}}}}},
		{"SET and ADD", dynastore.Update{Set: []set{{Attr: "n", Val: N("1")}}, Add: []av{{Attr: "n", Val: N("1")}}}},
		{"SET pk", dynastore.Update{Set: []set{{Attr: dynastore.AttrPK, Val: B("z")}}}},
		{"REMOVE sk", dynastore.Update{Remove: []string{dynastore.AttrSK}}},
		{"ADD to pk", dynastore.Update{Add: []av{{Attr: dynastore.AttrPK, Val: BS{[]byte("z")}}}}},
		{"ADD number to string", dynastore.Update{Add: []av{{Attr: "s", Val: N("1")}}}},
		{"ADD set to number", dynastore.Update{Add: []av{{Attr: "n", Val: BS{[]byte("1")}}}}},
		{"ADD number to set", dynastore.Update{Add: []av{{Attr: "bs", Val: N("1")}}}},
		{"ADD a string", dynastore.Update{Add: []av{{Attr: "s", Val: S("x")}}}},
		{"ADD a list", dynastore.Update{Add: []av{{Attr: "l", Val: L{N("1")}}}}},
		{"ADD an empty set", dynastore.Update{Add: []av{{Attr: "bs", Val: BS{}}}}},
		{"ADD duplicate members", dynastore.Update{Add: []av{{Attr: "bs", Val: BS{[]byte("d"), []byte("d")}}}}},
		{"DELETE a number", dynastore.Update{Delete: []av{{Attr: "n", Val: N("1")}}}},
		{"DELETE from a number", dynastore.Update{Delete: []av{{Attr: "n", Val: BS{[]byte("1")}}}}},
		{"Ref missing", dynastore.Update{Set: []set{{Attr: "a", Val: ref{Attr: "zz"}}}}},
		{"plus missing", dynastore.Update{Set: []set{{Attr: "a", Val: dynastore.Plus{A: ref{Attr: "zz"}, B: N("1")}}}}},
		{"plus on a string attribute", dynastore.Update{Set: []set{{Attr: "a", Val: dynastore.Plus{A: ref{Attr: "s"}, B: N("1")}}}}},
		{"plus a string literal", dynastore.Update{Set: []set{{Attr: "a", Val: dynastore.Plus{A: ref{Attr: "n"}, B: S("1")}}}}},
		{"minus on a set", dynastore.Update{Set: []set{{Attr: "a", Val: dynastore.Minus{A: ref{Attr: "bs"}, B: N("1")}}}}},
		{"list_append on a string", dynastore.Update{Set: []set{{Attr: "a", Val: dynastore.ListAppend{A: ref{Attr: "s"}, B: L{}}}}}},
		{"list_append missing", dynastore.Update{Set: []set{{Attr: "a", Val: dynastore.ListAppend{A: ref{Attr: "zz"}, B: L{N("1")}}}}}},
		{"list_append a number", dynastore.Update{Set: []set{{Attr: "a", Val: dynastore.ListAppend{A: ref{Attr: "l"}, B: N("1")}}}}},
		{"SET an empty set", dynastore.Update{Set: []set{{Attr: "a", Val: BS{}}}}},
		{"SET a malformed number", dynastore.Update{Set: []set{{Attr: "a", Val: N("one")}}}},
		{"SET an empty name", dynastore.Update{Set: []set{{Attr: "", Val: N("1")}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := key("bad" + itoa(i))
			put(t, s, updBase(k))
			_, err := s.Update(ctxOf(t), k, c.u, dynastore.WriteOptions{})
			require.ErrorIs(t, err, dynastore.ErrInvalid)
			require.NotErrorIs(t, err, dynastore.ErrConditionFailed)
			requireSameItem(t, updBase(k), get(t, s, k), "nothing written")
		})
	}
}

var numberScenarios = []scenario{
	{"NumberCanonicalForms", testNumberForms},
	{"NumberArithmetic", testNumberArithmetic},
	{"NumberLimits", testNumberLimits},
	{"NumberComparisons", testNumberComparisons},
}

func testNumberForms(t *testing.T, s dynastore.Store) {
	for i, c := range []struct{ in, want string }{
		{"007", "7"}, {"1.50", "1.5"}, {"-0", "0"}, {"0.0", "0"}, {"1e2", "100"}, {"1E+2", "100"},
		{"-1.20e-3", "-0.0012"}, {"00.100", "0.1"}, {"+5", "5"}, {".5", "0.5"}, {"5.", "5"},
		{"9223372036854775807", "9223372036854775807"}, {"-9223372036854775808", "-9223372036854775808"},
		{"12345678901234567890123456789012345678", "12345678901234567890123456789012345678"},
		{"1234567890123456789012345678901234567800000", "1234567890123456789012345678901234567800000"},
		{"1e-130", "0." + strings.Repeat("0", 129) + "1"},
		{"9.9999999999999999999999999999999999999e125", strings.Repeat("9", 38) + strings.Repeat("0", 88)},
	} {
		k := key("num" + itoa(i))
		put(t, s, item(k, "n", N(c.in), "l", L{N(c.in)}))
		requireSameItem(t, item(k, "n", N(c.want), "l", L{N(c.want)}), get(t, s, k), "%s", c.in)
	}
}

func testNumberArithmetic(t *testing.T, s dynastore.Store) {
	ctx := ctxOf(t)
	for i, c := range []struct{ start, add, want string }{
		{"1.50", "0", "1.5"},
		{"1.5", "1.5", "3"},
		{"0.1", "0.2", "0.3"},
		{"-5", "3", "-2"},
		{"1", "-1", "0"},
		{"99999999999999999999999999999999999999", "1", "100000000000000000000000000000000000000"},
		{"9223372036854775807", "1", "9223372036854775808"},
		{"-9223372036854775808", "-1", "-9223372036854775809"},
		{"2e-130", "-1e-130", "0." + strings.Repeat("0", 129) + "1"},
	} {
		k := key("arith" + itoa(i))
		put(t, s, item(k, "a", N(c.start), "b", N(c.start)))
		got, err := s.Update(ctx, k, dynastore.Update{
			Add: []av{{Attr: "a", Val: N(c.add)}},
			Set: []set{{Attr: "b", Val: dynastore.Plus{A: ref{Attr: "b"}, B: N(c.add)}}},
		}, dynastore.WriteOptions{Return: dynastore.ReturnUpdatedNew})
		require.NoError(t, err, "%s + %s", c.start, c.add)
		requireSameItem(t, Item{{Name: "a", Value: N(c.want)}, {Name: "b", Value: N(c.want)}}, got, "%s + %s", c.start, c.add)
		requireSameItem(t, item(k, "a", N(c.want), "b", N(c.want)), get(t, s, k))
	}
}

func testNumberLimits(t *testing.T, s dynastore.Store) {
	ctx := ctxOf(t)
	for i, n := range []string{
		"123456789012345678901234567890123456789", // 39 significant digits
		"1e126", "-1e126", "1e-131",
		"abc", "1e", "0x10", " 5", "", "NaN", "1.2.3",
	} {
		k := key("lim" + itoa(i))
		_, err := s.Put(ctx, item(k, "n", N(n)), dynastore.WriteOptions{})
		require.ErrorIs(t, err, dynastore.ErrInvalid, "%q", n)
		require.Nil(t, get(t, s, k))
	}
	k := key("lim")
	put(t, s, item(k, "n", N("100000000000000000000000000000000000000"), "m", N("9e125")))
	for _, u := range []dynastore.Update{
		{Add: []av{{Attr: "n", Val: N("1")}}},      // 39 digits
		{Add: []av{{Attr: "n", Val: N("1e-100")}}}, // far too many digits
		{Add: []av{{Attr: "m", Val: N("1e125")}}},  // overflow
		{Set: []set{{Attr: "m", Val: dynastore.Minus{A: N("-9e125"), B: ref{Attr: "m"}}}}},
	} {
		_, err := s.Update(ctx, k, u, dynastore.WriteOptions{})
		require.ErrorIs(t, err, dynastore.ErrInvalid, "%+v", u)
	}
	requireSameItem(t, item(k, "n", N("100000000000000000000000000000000000000"), "m", N("9"+strings.Repeat("0", 125))), get(t, s, k))
}

func testNumberComparisons(t *testing.T, s dynastore.Store) {
	k := key("numcmp")
	put(t, s, item(k, "n", N("10"), "neg", N("-0.5"), "big", N("1e100")))
	for _, c := range []condCase{
		{"10 > 9", cmp("n", dynastore.OpGT, N("9")), true},
		{"10 < 9.99e1", cmp("n", dynastore.OpLT, N("9.99e1")), true},
		{"10 = 1e1", cmp("n", dynastore.OpEQ, N("1e1")), true},
		{"10 = 10.000", cmp("n", dynastore.OpEQ, N("10.000")), true},
		{"-0.5 < 0", cmp("neg", dynastore.OpLT, N("0")), true},
		{"-0.5 > -0.51", cmp("neg", dynastore.OpGT, N("-0.51")), true},
		{"-0.5 < -0.49", cmp("neg", dynastore.OpLT, N("-0.49")), true},
		{"1e100 > 99...9 (38 digits)", cmp("big", dynastore.OpGT, N(strings.Repeat("9", 38))), true},
		{"1e100 <= 1e99 false", cmp("big", dynastore.OpLE, N("1e99")), false},
	} {
		_, err := s.Put(ctxOf(t), item(k, "n", N("10"), "neg", N("-0.5"), "big", N("1e100")), dynastore.WriteOptions{Cond: c.cond})
		if c.want {
			require.NoError(t, err, c.name)
		} else {
			requireCondFailed(t, err)
		}
	}
}
