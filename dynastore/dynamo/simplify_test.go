package dynamo

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/dynastore"
)

// TestSimplifyKeepsMeaning checks simplify against dynastore's evaluator on
// random conditions over a few attributes and random items: a rewrite that
// changed the meaning of any condition on any item would fail here.
func TestSimplifyKeepsMeaning(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	attrs := []string{"a", "b", "v"}
	vals := []dynastore.Value{dynastore.N("1"), dynastore.N("5"), dynastore.B("x"), dynastore.S("s"), dynastore.BS{[]byte("m")}}
	var gen func(depth int) dynastore.Cond
	gen = func(depth int) dynastore.Cond {
		attr := attrs[rng.IntN(len(attrs))]
		k := rng.IntN(8)
		if depth > 2 && k >= 6 {
			k = rng.IntN(6)
		}
		switch k {
		case 0:
			return dynastore.Exists{Attr: attr}
		case 1:
			return dynastore.NotExists{Attr: attr}
		case 2:
			ops := []dynastore.CmpOp{dynastore.OpEQ, dynastore.OpNE, dynastore.OpLT, dynastore.OpLE, dynastore.OpGT, dynastore.OpGE}
			op := ops[rng.IntN(len(ops))]
			val := vals[rng.IntN(3)] // N or B: valid with every operator
			return dynastore.Compare{Attr: attr, Op: op, Val: val}
		case 3:
			kinds := []dynastore.Kind{dynastore.KindN, dynastore.KindB, dynastore.KindBS}
			return dynastore.IsType{Attr: attr, Type: kinds[rng.IntN(len(kinds))]}
		case 4:
			ops := []dynastore.CmpOp{dynastore.OpNE, dynastore.OpLE, dynastore.OpGT}
			return dynastore.SizeCompare{Attr: attr, Op: ops[rng.IntN(len(ops))], Size: int64(rng.IntN(3))}
		case 5:
			if rng.IntN(2) == 0 {
				c, err := dynastore.Check(gen(depth + 1))
				require.NoError(t, err)
				return c
			}
			return dynastore.Not{C: gen(depth + 1)}
		}
		n := rng.IntN(4)
		subs := make([]dynastore.Cond, n)
		for i := range subs {
			subs[i] = gen(depth + 1)
		}
		if k == 6 {
			return dynastore.And(subs)
		}
		return dynastore.Or(subs)
	}
	items := make([]dynastore.Item, 0, 200)
	for range 200 {
		it := dynastore.Item{}
		for _, a := range attrs {
			if rng.IntN(3) > 0 {
				it.Set(a, vals[rng.IntN(len(vals))])
			}
		}
		items = append(items, it)
	}
	for range 3000 {
		c := gen(0)
		s, tr := simplify(c)
		for _, it := range items {
			want := dynastore.EvalValidCond(it, c)
			var got bool
			switch tr {
			case alwaysTrue:
				got = true
			case alwaysFalse:
				got = false
			default:
				got = dynastore.EvalValidCond(it, s)
			}
			require.Equal(t, want, got, "condition %#v simplified to %#v (%d), item %v", c, s, tr, it)
		}
	}
}
