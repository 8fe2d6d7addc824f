package commands

// Hash commands: they parse, call the hash operations of the model
// (model/hash.go, on the collection engine of model/collection.go), and
// reply. HSET, HSETNX, HDEL and HINCRBY of small hashes are one UpdateItem
// on the inline layout (field names in v, each value in its own top-level
// attribute); everything else reads, computes, and commits conditioned on
// the key item's ver.

import (
	"bytes"
	"math"

	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/model"
)

// maxInt64Len is the length of the longest int64 in decimal (scripts'
// HINCRBY fast path needs room for it).
const maxInt64Len = model.MaxInt64Len

func registerHashes(t *Table) {
	t.Register([]Row{
		{Name: "hset", Run: cmdHset},
		{Name: "hsetnx", Run: cmdHsetnx},
		{Name: "hmset", Run: cmdHmset},
		{Name: "hget", Run: cmdHget},
		{Name: "hmget", Run: cmdHmget},
		{Name: "hgetall", Run: cmdHgetall},
		{Name: "hdel", Run: cmdHdel},
		{Name: "hexists", Run: cmdHexists},
		{Name: "hlen", Run: cmdHlen},
		{Name: "hstrlen", Run: cmdHstrlen},
		{Name: "hkeys", Run: cmdHkeys},
		{Name: "hvals", Run: cmdHvals},
		{Name: "hincrby", Run: cmdHincrby},
		{Name: "hincrbyfloat", Run: cmdHincrbyfloat},
		{Name: "hrandfield", Run: cmdHrandfield},
		{Name: "hscan", Run: cmdHscan},
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
		c.Notify(events.Hash, "hset", c.Args[1])
	}
}

func cmdHmset(c *Ctx) {
	if _, ok := hashSet(c); ok {
		c.W.Simple("OK")
		c.Notify(events.Hash, "hset", c.Args[1])
	}
}

func cmdHsetnx(c *Ctx) {
	set, err := model.HashSetNX(c, c.Args[1], c.Args[2], c.Args[3])
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(boolInt(set))
	if set {
		c.Notify(events.Hash, "hset", c.Args[1])
	}
}

func cmdHget(c *Ctx) {
	vals, present, err := model.HashGet(c, c.Args[1], c.Args[2:3])
	if err != nil {
		c.Fail(err)
		return
	}
	if !present[0] {
		c.W.Nil()
		return
	}
	c.W.Bulk(vals[0])
}

func cmdHmget(c *Ctx) {
	vals, present, err := model.HashGet(c, c.Args[1], c.Args[2:])
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
		c.W.Bulk(v)
	}
}

func cmdHexists(c *Ctx) {
	_, present, err := model.HashLens(c, c.Args[1], c.Args[2:3])
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(boolInt(present[0]))
}

func cmdHstrlen(c *Ctx) {
	lens, _, err := model.HashLens(c, c.Args[1], c.Args[2:3])
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(lens[0])
}

func cmdHlen(c *Ctx) { collLenCmd(c, model.TypeHash) }

func cmdHgetall(c *Ctx) {
	fields, vals, err := model.HashAll(c, c.Args[1])
	if err != nil {
		c.Fail(err)
		return
	}
	notifyMissIfEmpty(c, len(fields) == 0)
	c.W.Map(len(fields))
	for i, f := range fields {
		c.W.Bulk(f)
		c.W.Bulk(vals[i])
	}
}

func cmdHkeys(c *Ctx) {
	fields, err := model.HashFields(c, c.Args[1])
	if err != nil {
		c.Fail(err)
		return
	}
	notifyMissIfEmpty(c, len(fields) == 0)
	c.W.Array(len(fields))
	for _, f := range fields {
		c.W.Bulk(f)
	}
}

func cmdHvals(c *Ctx) {
	_, vals, err := model.HashAll(c, c.Args[1])
	if err != nil {
		c.Fail(err)
		return
	}
	notifyMissIfEmpty(c, len(vals) == 0)
	c.W.Array(len(vals))
	for _, v := range vals {
		c.W.Bulk(v)
	}
}

func cmdHdel(c *Ctx) { removeMembersCmd(c, model.TypeHash) }

func cmdHincrby(c *Ctx) {
	incr, ok := model.String2ll(c.Args[3])
	if !ok {
		c.W.Error(MsgNotInt)
		return
	}
	n, err := model.HashIncrBy(c, c.Args[1], c.Args[2], incr)
	if err != nil {
		c.Fail(collErr(err))
		return
	}
	c.W.Int(n)
	c.Notify(events.Hash, "hincrby", c.Args[1])
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
	err := model.HashUpdate(c, key, f, func(v []byte, present bool) ([]byte, bool, error) {
		sum := incr
		if present {
			cur, ok := ldParse(v)
			if !ok {
				return nil, false, redisError(MsgHashNotFloat)
			}
			if sum, ok = ldAdd(cur, incr); !ok {
				return nil, false, redisError(MsgIncrFloatNaN)
			}
		}
		text = ldFormatHuman(sum)
		return []byte(text), true, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.BulkString(text)
	c.Notify(events.Hash, "hincrbyfloat", c.Args[1])
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
	es, err := model.RandomPick(c, c.Args[1], model.TypeHash, count)
	if err != nil {
		c.Fail(err)
		return
	}
	if !withValues {
		writePicked(c, es, withCount)
		return
	}
	if c.W.Proto() >= 3 {
		c.W.Array(len(es))
		for _, e := range es {
			c.W.Array(2)
			c.W.Bulk(e.Member)
			c.W.Bulk(e.Value)
		}
		return
	}
	c.W.Array(2 * len(es))
	for _, e := range es {
		c.W.Bulk(e.Member)
		c.W.Bulk(e.Value)
	}
}

func cmdHscan(c *Ctx) {
	collScanCmd(c, model.TypeHash, func(e model.Entry) [][]byte { return [][]byte{e.Member, e.Value} })
}
