package commands

// Hash commands, on the collection layer (collection.go). HSET, HSETNX,
// HDEL and HINCRBY of small hashes are one UpdateItem on the inline layout
// (field names in v, each value in its own top-level attribute); everything
// else reads, computes, and commits conditioned on the key item's ver.

import (
	"bytes"
	"math"

	"github.com/redamo/redamo/dynastore"
)

func registerHashes(t *Table) {
	t.Register(
		&Command{Name: "hset", Arity: -4, Flags: []string{FlagWrite, FlagDenyOOM, FlagFast}, Categories: []string{"write", "hash", "fast"}, FirstKey: 1, LastKey: 1, Step: 1, Summary: "Set the string value of a hash field", Since: "2.0.0", Group: "hash", Complexity: "O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.", Run: cmdHset},
		&Command{Name: "hsetnx", Arity: 4, Flags: []string{FlagWrite, FlagDenyOOM, FlagFast}, Categories: []string{"write", "hash", "fast"}, FirstKey: 1, LastKey: 1, Step: 1, Summary: "Set the value of a hash field, only if the field does not exist", Since: "2.0.0", Group: "hash", Complexity: "O(1)", Run: cmdHsetnx},
		&Command{Name: "hmset", Arity: -4, Flags: []string{FlagWrite, FlagDenyOOM, FlagFast}, Categories: []string{"write", "hash", "fast"}, FirstKey: 1, LastKey: 1, Step: 1, Summary: "Set multiple hash fields to multiple values", Since: "2.0.0", Group: "hash", Complexity: "O(N) where N is the number of fields being set.", Run: cmdHmset},
		&Command{Name: "hget", Arity: 3, Flags: []string{FlagReadonly, FlagFast}, Categories: []string{"read", "hash", "fast"}, FirstKey: 1, LastKey: 1, Step: 1, Summary: "Get the value of a hash field", Since: "2.0.0", Group: "hash", Complexity: "O(1)", Run: cmdHget},
		&Command{Name: "hmget", Arity: -3, Flags: []string{FlagReadonly, FlagFast}, Categories: []string{"read", "hash", "fast"}, FirstKey: 1, LastKey: 1, Step: 1, Summary: "Get the values of all the given hash fields", Since: "2.0.0", Group: "hash", Complexity: "O(N) where N is the number of fields being requested.", Run: cmdHmget},
		&Command{Name: "hgetall", Arity: 2, Flags: []string{FlagReadonly}, Categories: []string{"read", "hash", "slow"}, FirstKey: 1, LastKey: 1, Step: 1, Summary: "Get all the fields and values in a hash", Since: "2.0.0", Group: "hash", Complexity: "O(N) where N is the size of the hash.", Run: cmdHgetall},
		&Command{Name: "hdel", Arity: -3, Flags: []string{FlagWrite, FlagFast}, Categories: []string{"write", "hash", "fast"}, FirstKey: 1, LastKey: 1, Step: 1, Summary: "Delete one or more hash fields", Since: "2.0.0", Group: "hash", Complexity: "O(N) where N is the number of fields to be removed.", Run: cmdHdel},
		&Command{Name: "hexists", Arity: 3, Flags: []string{FlagReadonly, FlagFast}, Categories: []string{"read", "hash", "fast"}, FirstKey: 1, LastKey: 1, Step: 1, Summary: "Determine if a hash field exists", Since: "2.0.0", Group: "hash", Complexity: "O(1)", Run: cmdHexists},
		&Command{Name: "hlen", Arity: 2, Flags: []string{FlagReadonly, FlagFast}, Categories: []string{"read", "hash", "fast"}, FirstKey: 1, LastKey: 1, Step: 1, Summary: "Get the number of fields in a hash", Since: "2.0.0", Group: "hash", Complexity: "O(1)", Run: cmdHlen},
		&Command{Name: "hstrlen", Arity: 3, Flags: []string{FlagReadonly, FlagFast}, Categories: []string{"read", "hash", "fast"}, FirstKey: 1, LastKey: 1, Step: 1, Summary: "Get the length of the value of a hash field", Since: "3.2.0", Group: "hash", Complexity: "O(1)", Run: cmdHstrlen},
		&Command{Name: "hkeys", Arity: 2, Flags: []string{FlagReadonly}, Categories: []string{"read", "hash", "slow"}, FirstKey: 1, LastKey: 1, Step: 1, Summary: "Get all the fields in a hash", Since: "2.0.0", Group: "hash", Complexity: "O(N) where N is the size of the hash.", Run: cmdHkeys},
		&Command{Name: "hvals", Arity: 2, Flags: []string{FlagReadonly}, Categories: []string{"read", "hash", "slow"}, FirstKey: 1, LastKey: 1, Step: 1, Summary: "Get all the values in a hash", Since: "2.0.0", Group: "hash", Complexity: "O(N) where N is the size of the hash.", Run: cmdHvals},
		&Command{Name: "hincrby", Arity: 4, Flags: []string{FlagWrite, FlagDenyOOM, FlagFast}, Categories: []string{"write", "hash", "fast"}, FirstKey: 1, LastKey: 1, Step: 1, Summary: "Increment the integer value of a hash field by the given number", Since: "2.0.0", Group: "hash", Complexity: "O(1)", Run: cmdHincrby},
		&Command{Name: "hincrbyfloat", Arity: 4, Flags: []string{FlagWrite, FlagDenyOOM, FlagFast}, Categories: []string{"write", "hash", "fast"}, FirstKey: 1, LastKey: 1, Step: 1, Summary: "Increment the float value of a hash field by the given amount", Since: "2.6.0", Group: "hash", Complexity: "O(1)", Run: cmdHincrbyfloat},
		&Command{Name: "hrandfield", Arity: -2, Flags: []string{FlagReadonly}, Categories: []string{"read", "hash", "slow"}, FirstKey: 1, LastKey: 1, Step: 1, Summary: "Get one or multiple random fields from a hash", Since: "6.2.0", Group: "hash", Complexity: "O(N) where N is the number of fields returned", Run: cmdHrandfield},
		&Command{Name: "hscan", Arity: -3, Flags: []string{FlagReadonly}, Categories: []string{"read", "hash", "slow"}, FirstKey: 1, LastKey: 1, Step: 1, Summary: "Incrementally iterate hash fields and associated values", Since: "2.8.0", Group: "hash", Complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..", Run: cmdHscan},
	)
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
	key := c.Args[1]
	fields, vals := hashPairs(c.Args[2:])
	var seed dynastore.Item
	seeded := false
	if allSmall(fields) && allSmall(vals) && len(fields) <= inlineMaxHash {
		u := dynastore.Update{
			Set: []dynastore.SetAction{
				{Attr: attrType, Val: dynastore.Lit{V: dynastore.S(TypeHash)}},
				{Attr: attrVer, Val: dynastore.Lit{V: newVer()}},
			},
			Add: []dynastore.AttrValue{{Attr: attrValue, Val: bsOf(fields)}},
		}
		for i, f := range fields {
			u.Set = append(u.Set, dynastore.SetAction{Attr: fieldAttr(f), Val: dynastore.Lit{V: hashValue(vals[i])}})
		}
		old, applied, cur, err := fastUpdate(c, key, u, inlineFastCond(c.NowMS(), TypeHash, len(fields), false))
		if err != nil {
			c.Fail(err)
			return 0, false
		}
		if applied {
			var added int64
			for _, f := range fields {
				if !bsContains(old[attrValue], f) {
					added++
				}
			}
			return added, true
		}
		seed, seeded = cur, true
	}
	if seeded && len(fields) == 1 {
		if cl := largeFromSeed(c, key, TypeHash, seed); cl != nil {
			added, ok, err := blindAdd(c, cl, fields[0], hashValue(vals[0]))
			if err != nil {
				c.Fail(err)
				return 0, false
			}
			if ok {
				return boolInt(added), true
			}
			seeded = false
		}
	}
	var added int64
	err := collRetry(c, func(try int) error {
		cl, err := openSeeded(c, key, TypeHash, seed, seeded && try == 0)
		if err != nil {
			return err
		}
		if err := cl.check(); err != nil {
			return err
		}
		_, present, err := cl.lookup(fields)
		if err != nil {
			return err
		}
		added = 0
		for i, f := range fields {
			if !present[i] {
				added++
			}
			cl.put(f, hashValue(vals[i]))
		}
		return cl.commit()
	})
	if err != nil {
		collFail(c, err)
		return 0, false
	}
	return added, true
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

func cmdHsetnx(c *Ctx) {
	key, f, v := c.Args[1], c.Args[2], c.Args[3]
	var seed dynastore.Item
	seeded := false
	if len(f) <= inlineMaxBytes && len(v) <= inlineMaxBytes {
		cond := dynastore.And{inlineFastCond(c.NowMS(), TypeHash, 1, false), dynastore.NotExists{Attr: fieldAttr(f)}}
		_, applied, cur, err := fastUpdate(c, key, dynastore.Update{
			Set: []dynastore.SetAction{
				{Attr: attrType, Val: dynastore.Lit{V: dynastore.S(TypeHash)}},
				{Attr: attrVer, Val: dynastore.Lit{V: newVer()}},
				{Attr: fieldAttr(f), Val: dynastore.Lit{V: hashValue(v)}},
			},
			Add: []dynastore.AttrValue{{Attr: attrValue, Val: bsOf([][]byte{f})}},
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
	err := collRetry(c, func(try int) error {
		cl, err := openSeeded(c, key, TypeHash, seed, seeded && try == 0)
		if err != nil {
			return err
		}
		if err := cl.check(); err != nil {
			return err
		}
		_, present, err := cl.lookup([][]byte{f})
		if err != nil {
			return err
		}
		set = !present[0]
		if set {
			cl.put(f, hashValue(v))
		}
		return cl.commit()
	})
	if err != nil {
		collFail(c, err)
		return
	}
	c.W.Int(boolInt(set))
}

// hashLookup reads fields of a hash: one read inline, two when large.
func hashLookup(c *Ctx, key []byte, fields [][]byte) (*collection, []dynastore.Value, []bool, error) {
	cl, err := openCollection(c, key, TypeHash)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := cl.check(); err != nil {
		return nil, nil, nil, err
	}
	vals, present, err := cl.lookup(fields)
	return cl, vals, present, err
}

func cmdHget(c *Ctx) {
	_, vals, present, err := hashLookup(c, c.Args[1], c.Args[2:3])
	if err != nil {
		collFail(c, err)
		return
	}
	if !present[0] {
		c.W.Nil()
		return
	}
	c.W.Bulk(valueBytes(vals[0]))
}

func cmdHmget(c *Ctx) {
	_, vals, present, err := hashLookup(c, c.Args[1], c.Args[2:])
	if err != nil {
		collFail(c, err)
		return
	}
	c.W.Array(len(vals))
	for i, v := range vals {
		if !present[i] {
			c.W.Nil()
			continue
		}
		c.W.Bulk(valueBytes(v))
	}
}

func cmdHexists(c *Ctx) {
	_, _, present, err := hashLookup(c, c.Args[1], c.Args[2:3])
	if err != nil {
		collFail(c, err)
		return
	}
	c.W.Int(boolInt(present[0]))
}

func cmdHstrlen(c *Ctx) {
	_, vals, _, err := hashLookup(c, c.Args[1], c.Args[2:3])
	if err != nil {
		collFail(c, err)
		return
	}
	c.W.Int(int64(valueSize(vals[0])))
}

func cmdHlen(c *Ctx) {
	cl, err := openCollection(c, c.Args[1], TypeHash)
	if err == nil {
		err = cl.check()
	}
	if err != nil {
		collFail(c, err)
		return
	}
	c.W.Int(cl.committedLen())
}

// hashAll reads a whole hash as one consistent state.
func hashAll(c *Ctx, key []byte) (fields [][]byte, vals []dynastore.Value, err error) {
	err = collRetry(c, func(int) error {
		fields, vals = nil, nil
		cl, err := openCollection(c, key, TypeHash)
		if err != nil {
			return err
		}
		if err := cl.check(); err != nil {
			return err
		}
		err = cl.each(func(m []byte, v dynastore.Value) error {
			fields = append(fields, bytes.Clone(m))
			vals = append(vals, v)
			return nil
		})
		if err != nil {
			return err
		}
		return validateRead(c, cl)
	})
	return fields, vals, err
}

func cmdHgetall(c *Ctx) {
	fields, vals, err := hashAll(c, c.Args[1])
	if err != nil {
		collFail(c, err)
		return
	}
	c.W.Map(len(fields))
	for i, f := range fields {
		c.W.Bulk(f)
		c.W.Bulk(valueBytes(vals[i]))
	}
}

func cmdHkeys(c *Ctx) {
	fields, _, err := hashAll(c, c.Args[1])
	if err != nil {
		collFail(c, err)
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
		collFail(c, err)
		return
	}
	c.W.Array(len(vals))
	for _, v := range vals {
		c.W.Bulk(valueBytes(v))
	}
}

func cmdHdel(c *Ctx) {
	key, fields := c.Args[1], dedupe(c.Args[2:])
	var cur dynastore.Item
	seeded := false
	// An inline hash has at most inlineMaxHash fields: more arguments, or
	// longer ones, cannot all be there (and would bloat the expression).
	if len(fields) <= inlineMaxHash && allSmall(fields) {
		u := dynastore.Update{
			Set:    []dynastore.SetAction{{Attr: attrVer, Val: dynastore.Lit{V: newVer()}}},
			Delete: []dynastore.AttrValue{{Attr: attrValue, Val: bsOf(fields)}},
		}
		for _, f := range fields {
			u.Remove = append(u.Remove, fieldAttr(f))
		}
		old, applied, item, err := fastUpdate(c, key, u, inlineShrinkCond(c.NowMS(), TypeHash, len(fields)))
		if err != nil {
			c.Fail(err)
			return
		}
		if applied {
			var removed int64
			for _, f := range fields {
				if bsContains(old[attrValue], f) {
					removed++
				}
			}
			c.W.Int(removed)
			return
		}
		cur, seeded = item, true
	}
	if seeded && len(fields) == 1 {
		if cl := largeFromSeed(c, key, TypeHash, cur); cl != nil {
			removed, ok, err := blindRemove(c, cl, fields[0])
			if err != nil {
				c.Fail(err)
				return
			}
			if ok {
				c.W.Int(boolInt(removed))
				return
			}
			seeded = false
		}
	}
	var removed int64
	err := collRetry(c, func(try int) error {
		cl, err := openSeeded(c, key, TypeHash, cur, seeded && try == 0)
		if err != nil {
			return err
		}
		if err := cl.check(); err != nil {
			return err
		}
		_, present, err := cl.lookup(fields)
		if err != nil {
			return err
		}
		removed = 0
		for i, f := range fields {
			if present[i] {
				cl.del(f)
				removed++
			}
		}
		return cl.commit()
	})
	if err != nil {
		collFail(c, err)
		return
	}
	c.W.Int(removed)
}

func cmdHincrby(c *Ctx) {
	key, f := c.Args[1], c.Args[2]
	incr, ok := string2ll(c.Args[3])
	if !ok {
		c.W.Error(MsgNotInt)
		return
	}
	var seed dynastore.Item
	seeded := false
	if len(f) <= inlineMaxBytes {
		fa := fieldAttr(f)
		var inRange dynastore.Cond = dynastore.IsType{Attr: fa, Type: dynastore.KindN}
		switch {
		case incr > 0:
			inRange = dynastore.Compare{Attr: fa, Op: dynastore.OpLE, Val: nInt(math.MaxInt64 - incr)}
		case incr < 0:
			inRange = dynastore.Compare{Attr: fa, Op: dynastore.OpGE, Val: nInt(math.MinInt64 - incr)}
		}
		now := c.NowMS()
		cond := dynastore.Or{
			dynastore.NotExists{Attr: dynastore.AttrPK},
			dynastore.And{
				condLive(now), condType(TypeHash), dynastore.NotExists{Attr: attrGen},
				dynastore.Or{
					dynastore.And{dynastore.NotExists{Attr: fa}, dynastore.SizeCompare{Attr: attrValue, Op: dynastore.OpLT, Size: inlineMaxHash}},
					inRange,
				},
			},
		}
		u := dynastore.Update{
			Set: []dynastore.SetAction{
				{Attr: attrType, Val: dynastore.Lit{V: dynastore.S(TypeHash)}},
				{Attr: attrVer, Val: dynastore.Lit{V: newVer()}},
			},
			Add: []dynastore.AttrValue{
				{Attr: fa, Val: nInt(incr)},
				{Attr: attrValue, Val: bsOf([][]byte{f})},
			},
		}
		if !keyFits(key) {
			c.Fail(errKeyTooLong)
			return
		}
		nw, err := c.Store.Update(c, itemKey(c.DB(), key), u, dynastore.WriteOptions{Cond: cond, Return: dynastore.ReturnAllNew, OldOnFailure: true})
		if err == nil {
			n, err := numberInt(nw[fa])
			if err != nil {
				c.Fail(err)
				return
			}
			c.W.Int(n)
			return
		}
		cur, failed := isCondFailed(err)
		if !failed {
			c.Fail(err)
			return
		}
		seed, seeded = cur, true
	}
	var result int64
	err := collRetry(c, func(try int) error {
		cl, err := openSeeded(c, key, TypeHash, seed, seeded && try == 0)
		if err != nil {
			return err
		}
		if err := cl.check(); err != nil {
			return err
		}
		vals, present, err := cl.lookup([][]byte{f})
		if err != nil {
			return err
		}
		var cur int64
		if present[0] {
			var ok bool
			if cur, ok = string2ll(valueBytes(vals[0])); !ok {
				return replyErr(MsgHashNotInt)
			}
		}
		if (incr < 0 && cur < 0 && incr < math.MinInt64-cur) || (incr > 0 && cur > 0 && incr > math.MaxInt64-cur) {
			return replyErr(MsgOverflow)
		}
		result = cur + incr
		cl.put(f, nInt(result))
		return cl.commit()
	})
	if err != nil {
		collFail(c, err)
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
	err := collRetry(c, func(int) error {
		cl, err := openCollection(c, key, TypeHash)
		if err != nil {
			return err
		}
		if err := cl.check(); err != nil {
			return err
		}
		vals, present, err := cl.lookup([][]byte{f})
		if err != nil {
			return err
		}
		sum := incr
		if present[0] {
			cur, ok := ldParse(valueBytes(vals[0]))
			if !ok {
				return replyErr(MsgHashNotFloat)
			}
			if sum, ok = ldAdd(cur, incr); !ok {
				return replyErr(MsgIncrFloatNaN)
			}
		}
		text = ldFormatHuman(sum)
		cl.put(f, hashValue([]byte(text)))
		return cl.commit()
	})
	if err != nil {
		collFail(c, err)
		return
	}
	c.W.BulkString(text)
}

func cmdHrandfield(c *Ctx) {
	withCount := len(c.Args) >= 3
	withValues := false
	count := int64(1)
	if withCount {
		n, ok := randomCount(c, c.Args[2])
		if !ok {
			return
		}
		if len(c.Args) > 4 || (len(c.Args) == 4 && !bytes.EqualFold(c.Args[3], []byte("withvalues"))) {
			c.W.Error(MsgSyntax)
			return
		}
		if len(c.Args) == 4 {
			withValues = true
			if n < -math.MaxInt64/2 || n > math.MaxInt64/2 {
				c.W.Error(MsgIntOutOfRange)
				return
			}
		}
		if n < -maxRandomCount {
			c.W.Error(MsgIntOutOfRange)
			return
		}
		count = n
	}
	var fields [][]byte
	var vals []dynastore.Value
	err := collRetry(c, func(int) error {
		cl, err := openCollection(c, c.Args[1], TypeHash)
		if err != nil {
			return err
		}
		if err := cl.check(); err != nil {
			return err
		}
		if fields, vals, err = randomPick(cl, count); err != nil {
			return err
		}
		return validateRead(c, cl)
	})
	if err != nil {
		collFail(c, err)
		return
	}
	if !withCount {
		if len(fields) == 0 {
			c.W.Nil()
			return
		}
		c.W.Bulk(fields[0])
		return
	}
	if !withValues {
		c.W.Array(len(fields))
		for _, f := range fields {
			c.W.Bulk(f)
		}
		return
	}
	if c.W.Proto() >= 3 {
		c.W.Array(len(fields))
		for i, f := range fields {
			c.W.Array(2)
			c.W.Bulk(f)
			c.W.Bulk(valueBytes(vals[i]))
		}
		return
	}
	c.W.Array(2 * len(fields))
	for i, f := range fields {
		c.W.Bulk(f)
		c.W.Bulk(valueBytes(vals[i]))
	}
}

func cmdHscan(c *Ctx) {
	collScanCmd(c, TypeHash, func(m []byte, v dynastore.Value) [][]byte { return [][]byte{m, valueBytes(v)} })
}
