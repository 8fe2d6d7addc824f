package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
)

var condScenarios = []scenario{
	{"Conditions", testConditions},
	{"ConditionsOnAbsentItem", testConditionsAbsent},
	{"ConditionsOnEveryWrite", testConditionsEveryWrite},
	{"InvalidConditions", testInvalidConditions},
	{"ConditionFailedError", testConditionFailedError},
	{"ConditionBeforeUpdateErrors", testConditionBeforeUpdateErrors},
}

type condCase struct {
	name string
	cond dynastore.Cond
	want bool
}

func condItem(k dynastore.Key) Item {
	return item(k,
		"n", N("5"),
		"s", S("abc"),
		"b", B{0x00, 0xff, 'a', 'b'},
		"eb", B{},
		"bs", BS{[]byte("x"), []byte("y")},
		"l", L{S("x"), N("1")},
		"m", M{"a": N("1")},
		"t", BOOL(true),
		"nul", NULL{},
		"n5", N("5.0"),
		"n7", N("7"),
		"s2", S("abd"),
		"l2", L{S("x"), N("1.0")},
		"t2", BOOL(true),
	)
}

// condCases hold on condItem; each was checked against DynamoDB Local.
var condCases = []condCase{
	{"exists", dynastore.Exists{Attr: "n"}, true},
	{"exists pk", dynastore.Exists{Attr: dynastore.AttrPK}, true},
	{"exists missing", dynastore.Exists{Attr: "zz"}, false},
	{"exists NULL attribute", dynastore.Exists{Attr: "nul"}, true},
	{"exists empty binary", dynastore.Exists{Attr: "eb"}, true},
	{"not exists", dynastore.NotExists{Attr: "zz"}, true},
	{"not exists present", dynastore.NotExists{Attr: dynastore.AttrPK}, false},

	{"N = true", cmp("n", dynastore.OpEQ, N("5")), true},
	{"N = other spelling", cmp("n", dynastore.OpEQ, N("5.0")), true},
	{"N = false", cmp("n", dynastore.OpEQ, N("6")), false},
	{"N <> false", cmp("n", dynastore.OpNE, N("5")), false},
	{"N <> true", cmp("n", dynastore.OpNE, N("6")), true},
	{"N < numeric, not lexical", cmp("n", dynastore.OpLT, N("10")), true},
	{"N < false", cmp("n", dynastore.OpLT, N("5")), false},
	{"N <= true", cmp("n", dynastore.OpLE, N("5")), true},
	{"N <= false", cmp("n", dynastore.OpLE, N("4.99")), false},
	{"N > negative", cmp("n", dynastore.OpGT, N("-7")), true},
	{"N > false", cmp("n", dynastore.OpGT, N("5")), false},
	{"N >= true", cmp("n", dynastore.OpGE, N("5")), true},
	{"N >= false", cmp("n", dynastore.OpGE, N("5.0001")), false},
	{"S < true", cmp("s", dynastore.OpLT, S("abd")), true},
	{"S < prefix false", cmp("s", dynastore.OpLT, S("ab")), false},
	{"S >= true", cmp("s", dynastore.OpGE, S("abc")), true},
	{"B = true", cmp("b", dynastore.OpEQ, B{0x00, 0xff, 'a', 'b'}), true},
	{"B < unsigned", cmp("b", dynastore.OpLT, B{0x01}), true},
	{"B > unsigned", cmp("b", dynastore.OpGT, B{0x00, 0xfe}), true},
	{"B > false", cmp("b", dynastore.OpGT, B{0x00, 0xff, 'a', 'c'}), false},
	{"empty B = empty", cmp("eb", dynastore.OpEQ, B{}), true},
	{"BOOL = true", cmp("t", dynastore.OpEQ, BOOL(true)), true},
	{"BOOL = false", cmp("t", dynastore.OpEQ, BOOL(false)), false},
	{"NULL = NULL", cmp("nul", dynastore.OpEQ, NULL{}), true},
	{"L = elementwise numeric", cmp("l", dynastore.OpEQ, L{S("x"), N("1.0")}), true},
	{"L = order matters", cmp("l", dynastore.OpEQ, L{N("1"), S("x")}), false},
	{"BS = any order", cmp("bs", dynastore.OpEQ, BS{[]byte("y"), []byte("x")}), true},
	{"BS = subset false", cmp("bs", dynastore.OpEQ, BS{[]byte("x")}), false},
	{"M = true", cmp("m", dynastore.OpEQ, M{"a": N("1")}), true},

	{"type mismatch =", cmp("n", dynastore.OpEQ, S("5")), false},
	{"type mismatch <>", cmp("n", dynastore.OpNE, S("5")), true},
	{"type mismatch <", cmp("n", dynastore.OpLT, S("9")), false},
	{"type mismatch >=", cmp("s", dynastore.OpGE, N("1")), false},
	{"type mismatch B vs S", cmp("b", dynastore.OpGT, S("")), false},
	{"NOT type mismatch <", dynastore.Not{C: cmp("n", dynastore.OpLT, S("9"))}, true},
	{"BOOL attribute < N", cmp("t", dynastore.OpLT, N("1")), false},
	{"missing =", cmp("zz", dynastore.OpEQ, N("1")), false},
	{"missing <>", cmp("zz", dynastore.OpNE, N("1")), true},
	{"missing <", cmp("zz", dynastore.OpLT, N("1")), false},
	{"missing >=", cmp("zz", dynastore.OpGE, S("")), false},
	{"NOT missing <", dynastore.Not{C: cmp("zz", dynastore.OpLT, N("1"))}, true},

	{"attrs N = numeric", cmpAttrs("n", dynastore.OpEQ, "n5"), true},
	{"attrs N = false", cmpAttrs("n", dynastore.OpEQ, "n7"), false},
	{"attrs N <>", cmpAttrs("n", dynastore.OpNE, "n7"), true},
	{"attrs N <", cmpAttrs("n", dynastore.OpLT, "n7"), true},
	{"attrs N >= false", cmpAttrs("n", dynastore.OpGE, "n7"), false},
	{"attrs S <", cmpAttrs("s", dynastore.OpLT, "s2"), true},
	{"attrs S > false", cmpAttrs("s", dynastore.OpGT, "s2"), false},
	{"attrs L = elementwise numeric", cmpAttrs("l", dynastore.OpEQ, "l2"), true},
	{"attrs L <= unordered", cmpAttrs("l", dynastore.OpLE, "l2"), false},
	{"attrs BOOL =", cmpAttrs("t", dynastore.OpEQ, "t2"), true},
	{"attrs BOOL >= unordered", cmpAttrs("t", dynastore.OpGE, "t2"), false},
	{"attrs type mismatch =", cmpAttrs("n", dynastore.OpEQ, "s"), false},
	{"attrs type mismatch <>", cmpAttrs("n", dynastore.OpNE, "s"), true},
	{"attrs type mismatch <", cmpAttrs("n", dynastore.OpLT, "s"), false},
	{"attrs missing =", cmpAttrs("zz", dynastore.OpEQ, "n"), false},
	{"attrs missing on the right =", cmpAttrs("n", dynastore.OpEQ, "zz"), false},
	{"attrs both missing =", cmpAttrs("zz", dynastore.OpEQ, "yy"), false},
	{"attrs missing <>", cmpAttrs("n", dynastore.OpNE, "zz"), true},
	{"attrs missing <=", cmpAttrs("zz", dynastore.OpLE, "n"), false},

	{"type N", dynastore.IsType{Attr: "n", Type: dynastore.KindN}, true},
	{"type S", dynastore.IsType{Attr: "s", Type: dynastore.KindS}, true},
	{"type B", dynastore.IsType{Attr: "b", Type: dynastore.KindB}, true},
	{"type BS", dynastore.IsType{Attr: "bs", Type: dynastore.KindBS}, true},
	{"type L", dynastore.IsType{Attr: "l", Type: dynastore.KindL}, true},
	{"type M", dynastore.IsType{Attr: "m", Type: dynastore.KindM}, true},
	{"type BOOL", dynastore.IsType{Attr: "t", Type: dynastore.KindBOOL}, true},
	{"type NULL", dynastore.IsType{Attr: "nul", Type: dynastore.KindNULL}, true},
	{"type other", dynastore.IsType{Attr: "n", Type: dynastore.KindS}, false},
	{"type missing", dynastore.IsType{Attr: "zz", Type: dynastore.KindN}, false},

	{"size B", dynastore.SizeCompare{Attr: "b", Op: dynastore.OpEQ, Size: 4}, true},
	{"size empty B", dynastore.SizeCompare{Attr: "eb", Op: dynastore.OpEQ, Size: 0}, true},
	{"size S", dynastore.SizeCompare{Attr: "s", Op: dynastore.OpGT, Size: 2}, true},
	{"size S false", dynastore.SizeCompare{Attr: "s", Op: dynastore.OpGT, Size: 3}, false},
	{"size BS", dynastore.SizeCompare{Attr: "bs", Op: dynastore.OpEQ, Size: 2}, true},
	{"size L", dynastore.SizeCompare{Attr: "l", Op: dynastore.OpLE, Size: 2}, true},
	{"size M", dynastore.SizeCompare{Attr: "m", Op: dynastore.OpLT, Size: 1}, false},
	{"size M <>", dynastore.SizeCompare{Attr: "m", Op: dynastore.OpNE, Size: 2}, true},
	{"size of N has none", dynastore.SizeCompare{Attr: "n", Op: dynastore.OpEQ, Size: 1}, false},
	{"size of N <>", dynastore.SizeCompare{Attr: "n", Op: dynastore.OpNE, Size: 1}, true},
	{"size of BOOL has none", dynastore.SizeCompare{Attr: "t", Op: dynastore.OpGE, Size: 0}, false},
	{"size missing", dynastore.SizeCompare{Attr: "zz", Op: dynastore.OpLT, Size: 10}, false},
	{"size missing <>", dynastore.SizeCompare{Attr: "zz", Op: dynastore.OpNE, Size: 10}, true},

	{"begins_with", dynastore.BeginsWith{Attr: "b", Prefix: []byte{0x00, 0xff}}, true},
	{"begins_with whole", dynastore.BeginsWith{Attr: "b", Prefix: []byte{0x00, 0xff, 'a', 'b'}}, true},
	{"begins_with longer", dynastore.BeginsWith{Attr: "b", Prefix: []byte{0x00, 0xff, 'a', 'b', 'c'}}, false},
	{"begins_with false", dynastore.BeginsWith{Attr: "b", Prefix: []byte{0xff}}, false},
	{"begins_with on S", dynastore.BeginsWith{Attr: "s", Prefix: []byte("ab")}, false},
	{"begins_with missing", dynastore.BeginsWith{Attr: "zz", Prefix: []byte("a")}, false},
	{"NOT begins_with missing", dynastore.Not{C: dynastore.BeginsWith{Attr: "zz", Prefix: []byte("a")}}, true},

	{"contains S", dynastore.Contains{Attr: "s", Val: S("bc")}, true},
	{"contains S false", dynastore.Contains{Attr: "s", Val: S("cb")}, false},
	{"contains S with B", dynastore.Contains{Attr: "s", Val: B("bc")}, false},
	{"contains B", dynastore.Contains{Attr: "b", Val: B{0xff, 'a'}}, true},
	{"contains BS member", dynastore.Contains{Attr: "bs", Val: B("x")}, true},
	{"contains BS non-member", dynastore.Contains{Attr: "bs", Val: B("z")}, false},
	{"contains BS with S", dynastore.Contains{Attr: "bs", Val: S("x")}, false},
	{"contains L element", dynastore.Contains{Attr: "l", Val: N("1.0")}, true},
	{"contains L non-element", dynastore.Contains{Attr: "l", Val: S("y")}, false},
	{"contains N", dynastore.Contains{Attr: "n", Val: N("5")}, false},
	{"contains missing", dynastore.Contains{Attr: "zz", Val: S("a")}, false},
	{"NOT contains missing", dynastore.Not{C: dynastore.Contains{Attr: "zz", Val: S("a")}}, true},

	{"AND between", dynastore.And{cmp("n", dynastore.OpGE, N("1")), cmp("n", dynastore.OpLE, N("9"))}, true},
	{"AND outside", dynastore.And{cmp("n", dynastore.OpGE, N("6")), cmp("n", dynastore.OpLE, N("9"))}, false},
	{"AND of one", dynastore.And{dynastore.Exists{Attr: "n"}}, true},
	{"AND empty", dynastore.And{}, true},
	{"OR one true", dynastore.Or{dynastore.Exists{Attr: "zz"}, dynastore.Exists{Attr: "n"}}, true},
	{"OR none true", dynastore.Or{dynastore.Exists{Attr: "zz"}, dynastore.NotExists{Attr: "n"}}, false},
	{"OR empty", dynastore.Or{}, false},
	{"NOT", dynastore.Not{C: dynastore.Exists{Attr: "zz"}}, true},
	{"NOT NOT", dynastore.Not{C: dynastore.Not{C: dynastore.Exists{Attr: "zz"}}}, false},
	{"nested", dynastore.Or{
		dynastore.And{dynastore.Exists{Attr: "zz"}, cmp("n", dynastore.OpEQ, N("5"))},
		dynastore.And{dynastore.Not{C: dynastore.Exists{Attr: "zz"}}, dynastore.Or{cmp("s", dynastore.OpEQ, S("nope")), cmp("t", dynastore.OpEQ, BOOL(true))}},
	}, true},
	{"expiry takeover shape", dynastore.Or{dynastore.NotExists{Attr: dynastore.AttrPK}, cmp("n", dynastore.OpLE, N("4"))}, false},
}

func cmp(attr string, op dynastore.CmpOp, v dynastore.Value) dynastore.Compare {
	return dynastore.Compare{Attr: attr, Op: op, Val: v}
}

func cmpAttrs(a string, op dynastore.CmpOp, b string) dynastore.CompareAttrs {
	return dynastore.CompareAttrs{A: a, Op: op, B: b}
}

func testConditions(t *testing.T, s dynastore.Store) {
	k := key("cond")
	it := condItem(k)
	put(t, s, it)
	for _, c := range condCases {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.Put(ctxOf(t), it, dynastore.WriteOptions{Cond: c.cond})
			if c.want {
				require.NoError(t, err)
				return
			}
			requireCondFailed(t, err)
		})
	}
	requireItem(t, it, get(t, s, k))
}

func testConditionsAbsent(t *testing.T, s dynastore.Store) {
	for i, c := range []condCase{
		{"exists pk", dynastore.Exists{Attr: dynastore.AttrPK}, false},
		{"not exists pk", dynastore.NotExists{Attr: dynastore.AttrPK}, true},
		{"=", cmp("v", dynastore.OpEQ, N("1")), false},
		{"<>", cmp("v", dynastore.OpNE, N("1")), true},
		{"<=", cmp("v", dynastore.OpLE, N("1")), false},
		{"attrs =", cmpAttrs("v", dynastore.OpEQ, "w"), false},
		{"attrs <>", cmpAttrs("v", dynastore.OpNE, "w"), true},
		{"size", dynastore.SizeCompare{Attr: "v", Op: dynastore.OpGE, Size: 0}, false},
		{"type", dynastore.IsType{Attr: "v", Type: dynastore.KindNULL}, false},
		{"NOT exists", dynastore.Not{C: dynastore.Exists{Attr: dynastore.AttrSK}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := key("absent" + itoa(i))
			_, err := s.Put(ctxOf(t), item(k), dynastore.WriteOptions{Cond: c.cond})
			if c.want {
				require.NoError(t, err)
				require.NotNil(t, get(t, s, k))
				return
			}
			requireCondFailed(t, err)
			require.Nil(t, get(t, s, k), "a failed condition writes nothing")
		})
	}
}

// testConditionsEveryWrite runs a passing and a failing condition through
// each kind of write.
func testConditionsEveryWrite(t *testing.T, s dynastore.Store) {
	ctx := ctxOf(t)
	k := key("every")
	base := item(k, "v", N("1"))
	pass := cmp("v", dynastore.OpEQ, N("1"))
	fail := cmp("v", dynastore.OpEQ, N("2"))
	touch := dynastore.Update{Set: []dynastore.SetAction{{Attr: "w", Val: S("x")}}}

	put(t, s, base)
	_, err := s.Put(ctx, item(k, "v", N("1"), "p", S("put")), dynastore.WriteOptions{Cond: fail})
	requireCondFailed(t, err)
	_, err = s.Update(ctx, k, touch, dynastore.WriteOptions{Cond: fail})
	requireCondFailed(t, err)
	_, err = s.Delete(ctx, k, dynastore.WriteOptions{Cond: fail})
	requireCondFailed(t, err)
	requireItem(t, base, get(t, s, k), "failed conditions change nothing")

	_, err = s.Update(ctx, k, touch, dynastore.WriteOptions{Cond: pass})
	require.NoError(t, err)
	requireItem(t, item(k, "v", N("1"), "w", S("x")), get(t, s, k))
	_, err = s.Put(ctx, base, dynastore.WriteOptions{Cond: pass})
	require.NoError(t, err)
	requireItem(t, base, get(t, s, k))
	_, err = s.Delete(ctx, k, dynastore.WriteOptions{Cond: pass})
	require.NoError(t, err)
	require.Nil(t, get(t, s, k))

	// An update with a condition on a missing item creates nothing.
	_, err = s.Update(ctx, k, touch, dynastore.WriteOptions{Cond: dynastore.Exists{Attr: dynastore.AttrPK}})
	requireCondFailed(t, err)
	require.Nil(t, get(t, s, k))
	_, err = s.Delete(ctx, k, dynastore.WriteOptions{Cond: dynastore.NotExists{Attr: dynastore.AttrPK}})
	require.NoError(t, err)
}

func testInvalidConditions(t *testing.T, s dynastore.Store) {
	k := key("invalid")
	for _, c := range []struct {
		name string
		cond dynastore.Cond
	}{
		{"< on BOOL", cmp("t", dynastore.OpLT, BOOL(true))},
		{"> on list", cmp("l", dynastore.OpGT, L{N("1")})},
		{"malformed number", cmp("n", dynastore.OpEQ, N("1x"))},
		{"number out of range", cmp("n", dynastore.OpEQ, N("1e200"))},
		{"empty attribute name", dynastore.Exists{Attr: ""}},
		{"empty attribute name compared", cmpAttrs("n", dynastore.OpEQ, "")},
		{"attribute compared with itself", cmpAttrs("n", dynastore.OpEQ, "n")},
		{"empty set", cmp("bs", dynastore.OpEQ, BS{})},
		{"invalid under a true OR", dynastore.Or{dynastore.NotExists{Attr: "zz"}, cmp("t", dynastore.OpGE, NULL{})}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.Put(ctxOf(t), item(k), dynastore.WriteOptions{Cond: c.cond})
			require.ErrorIs(t, err, dynastore.ErrInvalid)
			require.NotErrorIs(t, err, dynastore.ErrConditionFailed)
			require.Nil(t, get(t, s, k))
		})
	}
}

func testConditionFailedError(t *testing.T, s dynastore.Store) {
	ctx := ctxOf(t)
	k := key("cfe")
	it := item(k, "v", S("old"), "n", N("12.50"))
	put(t, s, it)
	notExists := dynastore.NotExists{Attr: dynastore.AttrPK}
	exists := dynastore.Exists{Attr: dynastore.AttrPK}

	_, err := s.Put(ctx, item(k, "v", S("new")), dynastore.WriteOptions{Cond: notExists, OldOnFailure: true})
	requireSameItem(t, item(k, "v", S("old"), "n", N("12.5")), requireCondFailed(t, err).Old, "Put: the current item")

	_, err = s.Put(ctx, item(k, "v", S("new")), dynastore.WriteOptions{Cond: notExists})
	require.Nil(t, requireCondFailed(t, err).Old, "not asked for")

	_, err = s.Update(ctx, k, dynastore.Update{Remove: []string{"v"}}, dynastore.WriteOptions{Cond: notExists, OldOnFailure: true, Return: dynastore.ReturnAllNew})
	requireItem(t, it, requireCondFailed(t, err).Old, "Update: the current item")

	_, err = s.Delete(ctx, k, dynastore.WriteOptions{Cond: notExists, OldOnFailure: true, Return: dynastore.ReturnAllOld})
	requireItem(t, it, requireCondFailed(t, err).Old, "Delete: the current item")

	missing := key("cfe-missing")
	_, err = s.Put(ctx, item(missing), dynastore.WriteOptions{Cond: exists, OldOnFailure: true})
	require.Nil(t, requireCondFailed(t, err).Old, "no current item")
	_, err = s.Update(ctx, missing, dynastore.Update{}, dynastore.WriteOptions{Cond: exists, OldOnFailure: true})
	require.Nil(t, requireCondFailed(t, err).Old)
	_, err = s.Delete(ctx, missing, dynastore.WriteOptions{Cond: exists, OldOnFailure: true})
	require.Nil(t, requireCondFailed(t, err).Old)

	require.NotErrorIs(t, err, dynastore.ErrTxCanceled)
	require.NotErrorIs(t, err, dynastore.ErrInvalid)
	requireItem(t, it, get(t, s, k))
}

// testConditionBeforeUpdateErrors: DynamoDB evaluates the condition before
// the update's item-dependent errors (a Ref to a missing attribute, ADD to a
// string), so a failing condition wins; static errors come first.
func testConditionBeforeUpdateErrors(t *testing.T, s dynastore.Store) {
	ctx := ctxOf(t)
	k := key("order")
	put(t, s, item(k, "s", S("str")))
	fail := dynastore.NotExists{Attr: dynastore.AttrPK}

	_, err := s.Update(ctx, k, dynastore.Update{Add: []dynastore.AttrValue{{Attr: "s", Val: N("1")}}}, dynastore.WriteOptions{Cond: fail})
	requireCondFailed(t, err)
	_, err = s.Update(ctx, k, dynastore.Update{Set: []dynastore.SetAction{{Attr: "a", Val: dynastore.Ref{Attr: "zz"}}}}, dynastore.WriteOptions{Cond: fail})
	requireCondFailed(t, err)

	_, err = s.Update(ctx, k, dynastore.Update{Add: []dynastore.AttrValue{{Attr: "s", Val: N("1")}}}, dynastore.WriteOptions{})
	require.ErrorIs(t, err, dynastore.ErrInvalid)
	_, err = s.Update(ctx, k, dynastore.Update{Set: []dynastore.SetAction{{Attr: "s", Val: N("1")}}, Remove: []string{"s"}}, dynastore.WriteOptions{Cond: fail})
	require.ErrorIs(t, err, dynastore.ErrInvalid, "an attribute in two actions is rejected before the condition")
	requireItem(t, item(k, "s", S("str")), get(t, s, k))
}
