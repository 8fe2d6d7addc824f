package model

// The hash operations (commands/hashes.go holds the hash commands): the
// single-request fast paths of HSETNX and HINCRBY on an inline hash, and
// the read-modify-write of one field they fall back to.

import (
	"errors"
	"slices"

	"github.com/redamo/redamo/dynastore"
)

// MaxInt64Len is the length of the longest int64 in decimal.
const MaxInt64Len = len("-9223372036854775808")

// Errors of HINCRBY a handler replies with as Redis does.
var (
	// ErrHashNotInt: the field's value is not an integer.
	ErrHashNotInt = errors.New("model: hash value is not an integer")
	// ErrIncrOverflow: the increment would overflow an int64.
	ErrIncrOverflow = errors.New("model: increment or decrement would overflow")
)

// HashUpdate is a read-modify-write of field f of key's hash, committed
// conditioned on what it read: next gets the field's current value
// (present false when absent) and returns the value to write (set false:
// none).
func HashUpdate(c Scope, key, f []byte, next func(cur []byte, present bool) (v []byte, set bool, err error)) error {
	return hashFieldRetry(c, key, f, nil, false, func(cur dynastore.Value, present bool) (dynastore.Value, error) {
		v, set, err := next(ValueBytes(cur), present)
		if err != nil || !set {
			return nil, err
		}
		return HashValue(v), nil
	})
}

// hashFieldRetry is a read-modify-write of field f, committed conditioned
// on the key item (from seed on the first try when seeded): next gets the
// field's current value (present false when absent) and returns the value
// to write, nil for none.
func hashFieldRetry(c Scope, key, f []byte, seed dynastore.Item, seeded bool, next func(cur dynastore.Value, present bool) (dynastore.Value, error)) error {
	return SeededRetry(c, key, TypeHash, [][]byte{f}, seed, seeded, func(cl *Collection, vals []dynastore.Value, present []bool) error {
		v, err := next(vals[0], present[0])
		if err != nil {
			return err
		}
		if v != nil {
			cl.Put(f, v)
		}
		return nil
	})
}

// HashSetNX is HSETNX: it sets field f to v unless f exists, and reports
// whether it did. On an inline hash with room it is one UpdateItem.
func HashSetNX(c Scope, key, f, v []byte) (bool, error) {
	if bigField(f, len(v)) {
		return hashSetNXBig(c, key, f, v)
	}
	var seed dynastore.Item
	seeded := false
	if lim := c.Process().inline(TypeHash); lim.Entries >= 1 && len(f) <= lim.Bytes && len(v) <= lim.Bytes {
		cond := dynastore.And{InlineFastCond(c.NowMS(), TypeHash, lim.Entries, 1, false), dynastore.NotExists{Attr: FieldAttr(f)}}
		_, _, applied, cur, err := FastUpdate(c, key, dynastore.Update{
			Set: []dynastore.SetAction{
				{Attr: AttrType, Val: dynastore.S(TypeHash)},
				{Attr: AttrVer, Val: NewVer()},
				{Attr: FieldAttr(f), Val: HashValue(v)},
			},
			Add: []dynastore.AttrValue{{Attr: AttrValue, Val: BSOf([][]byte{f})}},
		}, cond)
		if err != nil {
			return false, err
		}
		if applied {
			return true, nil
		}
		seed, seeded = cur, true
	}
	var set bool
	err := hashFieldRetry(c, key, f, seed, seeded, func(_ dynastore.Value, present bool) (dynastore.Value, error) {
		if set = !present; set {
			return HashValue(v), nil
		}
		return nil, nil
	})
	return set, err
}

// HashIncrBy is HINCRBY: field f's value after adding incr. On an inline
// hash with room it is one UpdateItem (an ADD, the value kept as an N).
// Concurrent HINCRBYs of one field share their request (hashIncrOps).
func HashIncrBy(c Scope, key, f []byte, incr int64) (int64, error) {
	if !Coalescable(c) {
		res, errs := hashIncrOps(c, key, f, []int64{incr}, func(int) {})
		return res[0], errs[0]
	}
	return c.Process().hotStrings.hincr.Do(c, hotField(c, key, f), incrOp{memberOf(c), incr}, func(ops []incrOp) ([]int64, []error) {
		if len(ops) == 1 {
			return hashIncrOps(ops[0].s, key, f, []int64{ops[0].d}, func(int) {})
		}
		bs := newBatchScope(ops)
		ds := make([]int64, len(ops))
		for i, op := range ops {
			ds[i] = op.d
		}
		return hashIncrOps(bs, key, f, ds, func(i int) { bs.creator = ops[i].s })
	})
}

// hashIncrOps adds the increments ds to field f in one request, each
// answered the field's value after its own increment in order: one ADD
// of their sum with room for every partial sum on an inline hash, else
// one read-modify-write of the field that applies each as it would apply
// alone (an overflow answers only its own). creator tells which of them
// a write that creates the key creates it for.
func hashIncrOps(c Scope, key, f []byte, ds []int64, creator func(i int)) ([]int64, []error) {
	res, errs := answers[int64](len(ds))
	var seed dynastore.Item
	seeded := false
	// The value an in-place ADD leaves is an int64's text, at most
	// MaxInt64Len bytes: the fast path needs inline room for that much.
	fa := FieldAttr(f)
	sums, sum, inRange, fits := partialSums(fa, ds)
	if lim := c.Process().inline(TypeHash); fits && lim.Entries >= 1 && len(f) <= lim.Bytes && lim.Bytes >= MaxInt64Len {
		if inRange == nil {
			inRange = dynastore.IsType{Attr: fa, Type: dynastore.KindN}
		}
		// As InlineFastCond: each disjunct of the inner Or holds only on an
		// inline hash (v exists, or the field's own attribute does), which
		// therefore exists.
		cond := dynastore.Or{
			dynastore.NotExists{Attr: dynastore.AttrPK},
			dynastore.And{
				CondUnexpired(c.NowMS()), CondType(TypeHash),
				dynastore.Or{
					dynastore.And{dynastore.NotExists{Attr: fa}, dynastore.SizeCompare{Attr: AttrValue, Op: dynastore.OpLT, Size: int64(lim.Entries)}},
					inRange,
				},
			},
		}
		u := dynastore.Update{
			Set: []dynastore.SetAction{
				{Attr: AttrType, Val: dynastore.S(TypeHash)},
				{Attr: AttrVer, Val: NewVer()},
			},
			Add: []dynastore.AttrValue{
				{Attr: fa, Val: NInt(sum)},
				{Attr: AttrValue, Val: BSOf([][]byte{f})},
			},
		}
		if !KeyFits(key) {
			failAll(errs, ErrKeyTooLong)
			return res, errs
		}
		creator(0)
		_, nw, applied, cur, err := FastUpdate(c, key, u, cond)
		if err == nil && applied {
			var n int64
			if n, err = NumberInt(nw.Get(fa)); err == nil {
				for i := range ds {
					res[i] = n - sum + sums[i]
				}
				return res, errs
			}
		}
		if err != nil {
			failAll(errs, err)
			return res, errs
		}
		seed, seeded = cur, true
	}
	err := hashFieldRetry(c, key, f, seed, seeded, func(v dynastore.Value, present bool) (dynastore.Value, error) {
		var cur int64
		if present {
			var ok bool
			if cur, ok = String2ll(ValueBytes(v)); !ok {
				return nil, ErrHashNotInt
			}
		}
		cur, first := addInOrder(cur, ds, res, errs, ErrIncrOverflow)
		if first < 0 {
			return nil, nil
		}
		creator(first)
		return NInt(cur), nil
	})
	if err != nil {
		failAll(errs, err)
	}
	return res, errs
}

// HashGet is HGET and HMGET: the values of fields (nil for a field that
// is absent, present false).
func HashGet(c Scope, key []byte, fields [][]byte) (vals [][]byte, present []bool, err error) {
	vs, present, err := hashLookup(c, key, fields)
	if err != nil {
		return nil, nil, err
	}
	if err := loadValues(c, vs); err != nil {
		return nil, nil, err
	}
	vals = make([][]byte, len(vs))
	for i, v := range vs {
		vals[i] = ValueBytes(v)
	}
	return vals, present, nil
}

// HashLens is HEXISTS and HSTRLEN: the lengths of fields' values (0 for
// a field that is absent, present false), read without a big value's
// chunks.
func HashLens(c Scope, key []byte, fields [][]byte) (lens []int64, present []bool, err error) {
	vs, present, err := hashLookup(c, key, fields)
	if err != nil {
		return nil, nil, err
	}
	lens = make([]int64, len(vs))
	for i, v := range vs {
		lens[i] = int64(ValueSize(v))
	}
	return lens, present, nil
}

// hashLookup is the stored values of fields, a fresh slice of them.
// Concurrent lookups of one field share their read (hashGetBatch).
func hashLookup(c Scope, key []byte, fields [][]byte) (vals []dynastore.Value, present []bool, err error) {
	if len(fields) == 1 && Coalescable(c) {
		r, err := c.Process().hotStrings.hget.DoAlone(c, hotField(c, key, fields[0]), memberOf(c), func(m member) (hashGot, error) {
			vals, present, err := hashGet(m.s, key, fields)
			return hashGot{vals, present}, err
		}, func(ops []member) ([]hashGot, []error) { return hashGetBatch(key, fields, ops) })
		return slices.Clone(r.vals), r.present, err
	}
	return hashGet(c, key, fields)
}

// hashGet is hashLookup on its own.
func hashGet(c Scope, key []byte, fields [][]byte) (vals []dynastore.Value, present []bool, err error) {
	return Lookup(c, key, TypeHash, fields)
}

// HashFields is HKEYS: a whole hash's fields as one consistent state,
// read without big values' chunks.
func HashFields(c Scope, key []byte) (fields [][]byte, err error) {
	err = ReadAll(c, key, TypeHash, func(cl *Collection) error {
		fields, _, err = EntriesOf(cl)
		return err
	})
	return fields, err
}

// HashAll reads a whole hash as one consistent state (HGETALL, HVALS).
func HashAll(c Scope, key []byte) (fields, vals [][]byte, err error) {
	err = ReadAll(c, key, TypeHash, func(cl *Collection) error {
		ms, vs, err := EntriesOf(cl)
		if err == nil {
			err = loadValues(c, vs)
		}
		fields, vals = ms, make([][]byte, len(vs))
		for i, v := range vs {
			vals[i] = ValueBytes(v)
		}
		return err
	})
	return fields, vals, err
}

// hashSetNXBig is HashSetNX of a big value: staged first, published if
// the field is absent.
func hashSetNXBig(c Scope, key, f, v []byte) (set bool, err error) {
	sv, err := stageFieldValues(c, key, [][]byte{f}, [][]byte{v})
	if err != nil {
		return false, err
	}
	err = SeededRetry(c, key, TypeHash, [][]byte{f}, nil, false, func(cl *Collection, _ []dynastore.Value, present []bool) error {
		if set = !present[0]; set {
			cl.Put(f, sv.value(f, v))
			sv.publish(cl)
		}
		return nil
	})
	sv.settle(c, set, err)
	return set, err
}

// addBigFields is HSET and HMSET of values some of which are big.
func addBigFields(c Scope, key []byte, fields, vals [][]byte, sv *stagedValues) (added int64, err error) {
	err = SeededRetry(c, key, TypeHash, fields, nil, false, func(cl *Collection, _ []dynastore.Value, present []bool) error {
		added = 0
		for i, f := range fields {
			if !present[i] {
				added++
			}
			cl.Put(f, sv.value(f, vals[i]))
		}
		sv.publish(cl)
		return nil
	})
	sv.settle(c, true, err)
	return added, err
}
