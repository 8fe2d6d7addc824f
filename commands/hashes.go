package commands

// Hash commands, on the collection engine (model/collection.go). HSET, HSETNX,
// HDEL and HINCRBY of small hashes are one UpdateItem on the inline layout
// (field names in v, each value in its own top-level attribute); everything
// else reads, computes, and commits conditioned on the key item's ver.

import (
	"bytes"
	"math"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

// maxInt64Len is the length of the longest int64 in decimal.
const maxInt64Len = len("-9223372036854775808")

func registerHashes(t *Table) {
	t.Register([]Row{
		{"hset", cmdHset},
		{"hsetnx", cmdHsetnx},
		{"hmset", cmdHmset},
		{"hget", cmdHget},
		{"hmget", cmdHmget},
		{"hgetall", cmdHgetall},
		{"hdel", cmdHdel},
		{"hexists", cmdHexists},
		{"hlen", cmdHlen},
		{"hstrlen", cmdHstrlen},
		{"hkeys", cmdHkeys},
		{"hvals", cmdHvals},
		{"hincrby", cmdHincrby},
		{"hincrbyfloat", cmdHincrbyfloat},
		{"hrandfield", cmdHrandfield},
		{"hscan", cmdHscan},
	})
}

// hashPairs returns the field/value pairs of args, the last value winning
// for a repeated field (as applying them in order would), fields in first
// occurrence order.
func hashPairs(args [][]byte) (fields [][]byte, vals [][]byte) {
	idx := map[string]int{}
	for i := 0; i+1 < len(args); i += 2 {
		f, v := args[i], args[i+1]
		if j, ok := idx[string(f)]; ok {
			vals[j] = v
			continue
		}
		idx[string(f)] = len(fields)
		fields = append(fields, f)
		vals = append(vals, v)
	}
	return fields, vals
}

// hashSet is HSET/HMSET: it returns the number of new fields.
func hashSet(c *Ctx) (int64, bool) {
	if len(c.Args)%2 != 0 {
		c.W.Error(ErrWrongArgs(string(c.Args[0])))
		return 0, false
	}
	fields, vals := hashPairs(c.Args[2:])
	n, err := model.AddMembers(c, c.Args[1], model.TypeHash, fields, vals)
	if err != nil {
		c.Fail(err)
		return 0, false
	}
	return n, true
}

func cmdHset(c *Ctx) {
	if n, ok := hashSet(c); ok {
		c.W.Int(n)
	}
}

func cmdHmset(c *Ctx) {
	if _, ok := hashSet(c); ok {
		c.W.Simple("OK")
	}
}

// hashFieldRetry is a read-modify-write of field f, committed conditioned
// on the key item (from seed on the first try when seeded): next gets the
// field's current value (present false when absent) and returns the value
// to write, nil for none.
func hashFieldRetry(c *Ctx, key, f []byte, seed dynastore.Item, seeded bool, next func(cur dynastore.Value, present bool) (dynastore.Value, error)) error {
	return model.SeededRetry(c, key, model.TypeHash, [][]byte{f}, seed, seeded, func(cl *model.Collection, vals []dynastore.Value, present []bool) error {
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

func cmdHsetnx(c *Ctx) {
	key, f, v := c.Args[1], c.Args[2], c.Args[3]
	var seed dynastore.Item
	seeded := false
	if lim := c.Srv.inline(model.TypeHash); lim.Entries >= 1 && len(f) <= lim.Bytes && len(v) <= lim.Bytes {
		cond := dynastore.And{model.InlineFastCond(c.NowMS(), model.TypeHash, lim.Entries, 1, false), dynastore.NotExists{Attr: model.FieldAttr(f)}}
		_, _, applied, cur, err := model.FastUpdate(c, key, dynastore.Update{
			Set: []dynastore.SetAction{
				{Attr: model.AttrType, Val: dynastore.S(model.TypeHash)},
				{Attr: model.AttrVer, Val: model.NewVer()},
				{Attr: model.FieldAttr(f), Val: model.HashValue(v)},
			},
			Add: []dynastore.AttrValue{{Attr: model.AttrValue, Val: model.BSOf([][]byte{f})}},
		}, cond)
		if err != nil {
			c.Fail(err)
			return
		}
		if applied {
			c.W.Int(1)
			return
		}
		seed, seeded = cur, true
	}
	var set bool
	err := hashFieldRetry(c, key, f, seed, seeded, func(_ dynastore.Value, present bool) (dynastore.Value, error) {
		if set = !present; set {
			return model.HashValue(v), nil
		}
		return nil, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(boolInt(set))
}

func cmdHget(c *Ctx) {
	vals, present, err := model.Lookup(c, c.Args[1], model.TypeHash, c.Args[2:3])
	if err != nil {
		c.Fail(err)
		return
	}
	if !present[0] {
		c.W.Nil()
		return
	}
	c.W.Bulk(model.ValueBytes(vals[0]))
}

func cmdHmget(c *Ctx) {
	vals, present, err := model.Lookup(c, c.Args[1], model.TypeHash, c.Args[2:])
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Array(len(vals))
	for i, v := range vals {
		if !present[i] {
			c.W.Nil()
			continue
		}
		c.W.Bulk(model.ValueBytes(v))
	}
}

func cmdHexists(c *Ctx) {
	_, present, err := model.Lookup(c, c.Args[1], model.TypeHash, c.Args[2:3])
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(boolInt(present[0]))
}

func cmdHstrlen(c *Ctx) {
	vals, _, err := model.Lookup(c, c.Args[1], model.TypeHash, c.Args[2:3])
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(int64(model.ValueSize(vals[0])))
}

func cmdHlen(c *Ctx) { collLenCmd(c, model.TypeHash) }

// hashAll reads a whole hash as one consistent state.
func hashAll(c *Ctx, key []byte) (fields [][]byte, vals []dynastore.Value, err error) {
	err = model.ReadAll(c, key, model.TypeHash, func(cl *model.Collection) (err error) {
		fields, vals, err = model.EntriesOf(cl)
		return err
	})
	return fields, vals, err
}

func cmdHgetall(c *Ctx) {
	fields, vals, err := hashAll(c, c.Args[1])
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Map(len(fields))
	for i, f := range fields {
		c.W.Bulk(f)
		c.W.Bulk(model.ValueBytes(vals[i]))
	}
}

func cmdHkeys(c *Ctx) {
	fields, _, err := hashAll(c, c.Args[1])
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Array(len(fields))
	for _, f := range fields {
		c.W.Bulk(f)
	}
}

func cmdHvals(c *Ctx) {
	_, vals, err := hashAll(c, c.Args[1])
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Array(len(vals))
	for _, v := range vals {
		c.W.Bulk(model.ValueBytes(v))
	}
}

func cmdHdel(c *Ctx) { removeMembersCmd(c, model.TypeHash) }

func cmdHincrby(c *Ctx) {
	key, f := c.Args[1], c.Args[2]
	incr, ok := model.String2ll(c.Args[3])
	if !ok {
		c.W.Error(MsgNotInt)
		return
	}
	var seed dynastore.Item
	seeded := false
	// The value an in-place ADD leaves is an int64's text, at most
	// maxInt64Len bytes: the fast path needs inline room for that much.
	if lim := c.Srv.inline(model.TypeHash); lim.Entries >= 1 && len(f) <= lim.Bytes && lim.Bytes >= maxInt64Len {
		fa := model.FieldAttr(f)
		inRange := incrRoom(fa, incr)
		if inRange == nil {
			inRange = dynastore.IsType{Attr: fa, Type: dynastore.KindN}
		}
		// As model.InlineFastCond: each disjunct of the inner Or holds only on an
		// inline hash (v exists, or the field's own attribute does), which
		// therefore exists.
		cond := dynastore.Or{
			dynastore.NotExists{Attr: dynastore.AttrPK},
			dynastore.And{
				model.CondUnexpired(c.NowMS()), model.CondType(model.TypeHash),
				dynastore.Or{
					dynastore.And{dynastore.NotExists{Attr: fa}, dynastore.SizeCompare{Attr: model.AttrValue, Op: dynastore.OpLT, Size: int64(lim.Entries)}},
					inRange,
				},
			},
		}
		u := dynastore.Update{
			Set: []dynastore.SetAction{
				{Attr: model.AttrType, Val: dynastore.S(model.TypeHash)},
				{Attr: model.AttrVer, Val: model.NewVer()},
			},
			Add: []dynastore.AttrValue{
				{Attr: fa, Val: model.NInt(incr)},
				{Attr: model.AttrValue, Val: model.BSOf([][]byte{f})},
			},
		}
		if !model.KeyFits(key) {
			c.Fail(model.ErrKeyTooLong)
			return
		}
		_, nw, applied, cur, err := model.FastUpdate(c, key, u, cond)
		if err == nil && applied {
			var n int64
			if n, err = model.NumberInt(nw.Get(fa)); err == nil {
				c.W.Int(n)
				return
			}
		}
		if err != nil {
			c.Fail(err)
			return
		}
		seed, seeded = cur, true
	}
	var result int64
	err := hashFieldRetry(c, key, f, seed, seeded, func(v dynastore.Value, present bool) (dynastore.Value, error) {
		var cur int64
		if present {
			var ok bool
			if cur, ok = model.String2ll(model.ValueBytes(v)); !ok {
				return nil, redisError(MsgHashNotInt)
			}
		}
		if addOverflows(cur, incr) {
			return nil, redisError(MsgOverflow)
		}
		result = cur + incr
		return model.NInt(result), nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(result)
}

func cmdHincrbyfloat(c *Ctx) {
	key, f := c.Args[1], c.Args[2]
	incr, ok := ldParse(c.Args[3])
	if !ok {
		c.W.Error(MsgNotFloat)
		return
	}
	if incr.IsInf() {
		c.W.Error(MsgNaNOrInf)
		return
	}
	var text string
	err := hashFieldRetry(c, key, f, nil, false, func(v dynastore.Value, present bool) (dynastore.Value, error) {
		sum := incr
		if present {
			cur, ok := ldParse(model.ValueBytes(v))
			if !ok {
				return nil, redisError(MsgHashNotFloat)
			}
			if sum, ok = ldAdd(cur, incr); !ok {
				return nil, redisError(MsgIncrFloatNaN)
			}
		}
		text = ldFormatHuman(sum)
		return model.HashValue([]byte(text)), nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.BulkString(text)
}

// parseRandomArgs parses HRANDFIELD's and ZRANDMEMBER's key [count
// [with]] (with: "withvalues", "withscores"), replying the error when ok is
// false.
func parseRandomArgs(c *Ctx, with string) (count int64, withCount, withValues, ok bool) {
	withCount = len(c.Args) >= 3
	if !withCount {
		return 1, false, false, true
	}
	n, ok := randomCount(c, c.Args[2])
	if !ok {
		return 0, false, false, false
	}
	if len(c.Args) > 4 || (len(c.Args) == 4 && !bytes.EqualFold(c.Args[3], []byte(with))) {
		c.W.Error(MsgSyntax)
		return 0, false, false, false
	}
	if len(c.Args) == 4 {
		withValues = true
		if n < -math.MaxInt64/2 || n > math.MaxInt64/2 {
			c.W.Error(MsgIntOutOfRange)
			return 0, false, false, false
		}
	}
	if n < -maxRandomCount {
		c.W.Error(MsgIntOutOfRange)
		return 0, false, false, false
	}
	return n, true, withValues, true
}

func cmdHrandfield(c *Ctx) {
	count, withCount, withValues, ok := parseRandomArgs(c, "withvalues")
	if !ok {
		return
	}
	fields, vals, err := randomPick(c, model.TypeHash, count)
	if err != nil {
		c.Fail(err)
		return
	}
	if !withValues {
		writePicked(c, fields, withCount)
		return
	}
	if c.W.Proto() >= 3 {
		c.W.Array(len(fields))
		for i, f := range fields {
			c.W.Array(2)
			c.W.Bulk(f)
			c.W.Bulk(model.ValueBytes(vals[i]))
		}
		return
	}
	c.W.Array(2 * len(fields))
	for i, f := range fields {
		c.W.Bulk(f)
		c.W.Bulk(model.ValueBytes(vals[i]))
	}
}

func cmdHscan(c *Ctx) {
	collScanCmd(c, model.TypeHash, func(m []byte, v dynastore.Value) [][]byte { return [][]byte{m, model.ValueBytes(v)} })
}
