package commands

// Set commands: they parse, call the set operations of the model
// (model/set.go, on the collection engine of model/collection.go), and
// reply. SADD and SREM of small sets are one UpdateItem (ADD/DELETE on the
// inline binary set, with ALL_OLD to compute the reply); everything else
// reads, computes, and commits conditioned on the key item's ver.

import (
	"bytes"
	"math"
	"strconv"

	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/model"
)

func registerSets(t *Table) {
	t.Register([]Row{
		{Name: "sadd", Run: cmdSadd},
		{Name: "srem", Run: cmdSrem},
		{Name: "sismember", Run: cmdSismember},
		{Name: "smismember", Run: cmdSmismember},
		{Name: "smembers", Run: cmdSmembers},
		{Name: "scard", Run: cmdScard},
		{Name: "spop", Run: cmdSpop},
		{Name: "srandmember", Run: cmdSrandmember},
		{Name: "smove", Run: cmdSmove},
		{Name: "sinter", Run: cmdSinter},
		{Name: "sintercard", Run: cmdSintercard},
		{Name: "sunion", Run: cmdSunion},
		{Name: "sdiff", Run: cmdSdiff},
		{Name: "sinterstore", Run: cmdSinterstore},
		{Name: "sunionstore", Run: cmdSunionstore},
		{Name: "sdiffstore", Run: cmdSdiffstore},
		{Name: "sscan", Run: cmdSscan},
	})
}

// maxRandomCount bounds the reply of a negative-count SRANDMEMBER or
// HRANDFIELD (members repeat, so the reply does not depend on the set's
// size): Redis would build any size; redamo refuses to exhaust its memory.
const maxRandomCount = 10_000_000

func cmdSadd(c *Ctx) {
	n, err := model.AddMembers(c, c.Args[1], model.TypeSet, model.Dedupe(c.Args[2:]), nil)
	if err == nil && n > 0 {
		c.Notify(events.Set, "sadd", c.Args[1])
	}
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(n)
}

func cmdSrem(c *Ctx) { removeMembersCmd(c, model.TypeSet) }

func cmdSismember(c *Ctx) {
	present, err := model.SetIsMember(c, c.Args[1], c.Args[2:3])
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(boolInt(present[0]))
}

func cmdSmismember(c *Ctx) {
	present, err := model.SetIsMember(c, c.Args[1], c.Args[2:])
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Array(len(present))
	for _, p := range present {
		c.W.Int(boolInt(p))
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func cmdSmembers(c *Ctx) {
	members, err := model.SetMembers(c, c.Args[1])
	if err != nil {
		c.Fail(err)
		return
	}
	notifyMissIfEmpty(c, len(members) == 0)
	writeSet(c, members)
}

// writeSet replies with members as a set (an array in RESP2).
func writeSet(c *Ctx, members [][]byte) {
	c.W.Set(len(members))
	for _, m := range members {
		c.W.Bulk(m)
	}
}

func cmdScard(c *Ctx) { collLenCmd(c, model.TypeSet) }

func cmdSpop(c *Ctx) {
	withCount := len(c.Args) == 3
	if len(c.Args) > 3 {
		c.W.Error(MsgSyntax)
		return
	}
	count := int64(1)
	if withCount {
		n, ok := model.String2ll(c.Args[2])
		if !ok || n < 0 {
			c.W.Error(MsgCountPositive)
			return
		}
		count = n
	}
	popped, err := model.SetPop(c, c.Args[1], count)
	if err != nil {
		c.Fail(err)
		return
	}
	// Redis reports the pop, replies, then deletes a set it emptied.
	if len(popped) > 0 {
		c.notifyHoldingDel(events.Set, "spop", c.Args[1])
	}
	if !withCount {
		writeFirst(c, popped)
	} else {
		writeSet(c, popped)
	}
	c.notifyEmptied(c.Args[1])
}

// writeFirst is the reply of SPOP, SRANDMEMBER and HRANDFIELD without a
// count: the one member, nil for none.
func writeFirst(c *Ctx, ms [][]byte) {
	if len(ms) == 0 {
		c.W.Nil()
		return
	}
	c.W.Bulk(ms[0])
}

// randomCount parses SRANDMEMBER's and HRANDFIELD's count.
func randomCount(c *Ctx, arg []byte) (int64, bool) {
	n, ok := model.String2ll(arg)
	if !ok {
		c.W.Error(MsgNotInt)
		return 0, false
	}
	if n == math.MinInt64 {
		c.W.Error(MsgRandCountRange)
		return 0, false
	}
	return n, true
}

func cmdSrandmember(c *Ctx) {
	if len(c.Args) > 3 {
		c.W.Error(MsgSyntax)
		return
	}
	withCount := len(c.Args) == 3
	count := int64(1)
	if withCount {
		n, ok := randomCount(c, c.Args[2])
		if !ok {
			return
		}
		if n < -maxRandomCount {
			c.W.Error(MsgIntOutOfRange)
			return
		}
		count = n
	}
	picked, err := model.RandomPick(c, c.Args[1], model.TypeSet, count)
	if err != nil {
		c.Fail(err)
		return
	}
	writePicked(c, picked, withCount)
}

// writePicked replies with random members: without a count the one member
// (nil for none), with one an array.
func writePicked(c *Ctx, picked []model.Entry, withCount bool) {
	if !withCount {
		if len(picked) == 0 {
			c.W.Nil()
			return
		}
		c.W.Bulk(picked[0].Member)
		return
	}
	c.W.Array(len(picked))
	for _, e := range picked {
		c.W.Bulk(e.Member)
	}
}

func cmdSmove(c *Ctx) {
	src, dst, m := c.Args[1], c.Args[2], c.Args[3]
	// Redis creates the destination after it reported the source's change.
	c.notes.holdNew = true
	moved, added, err := model.SetMove(c, src, dst, m)
	c.notes.holdNew = false
	if err != nil {
		c.Fail(err)
		return
	}
	if moved && !sameKey(src, dst) {
		c.Notify(events.Set, "srem", src)
		if added {
			c.Notify(events.Set, "sadd", dst)
		}
	}
	c.W.Int(boolInt(moved))
}

func setReadCmd(c *Ctx, op model.SetOp) {
	res, err := model.SetRead(c, op, c.Args[1:], 0)
	if err != nil {
		c.Fail(err)
		return
	}
	writeSet(c, res)
}

func cmdSinter(c *Ctx) { setReadCmd(c, model.SetInter) }
func cmdSunion(c *Ctx) { setReadCmd(c, model.SetUnion) }
func cmdSdiff(c *Ctx)  { setReadCmd(c, model.SetDiff) }

func cmdSintercard(c *Ctx) {
	numkeys, ok := model.String2ll(c.Args[1])
	if !ok || numkeys <= 0 {
		c.W.Error(MsgNumkeys)
		return
	}
	if numkeys > int64(len(c.Args)-2) {
		c.W.Error(MsgNumkeysArgs)
		return
	}
	keys := c.Args[2 : 2+numkeys]
	rest := c.Args[2+numkeys:]
	limit := int64(0)
	for len(rest) > 0 {
		if len(rest) >= 2 && bytes.EqualFold(rest[0], []byte("limit")) {
			n, ok := model.String2ll(rest[1])
			if !ok || n < 0 {
				c.W.Error(MsgLimitNegative)
				return
			}
			limit = n
			rest = rest[2:]
			continue
		}
		c.W.Error(MsgSyntax)
		return
	}
	res, err := model.SetRead(c, model.SetInter, keys, int(min(limit, math.MaxInt32)))
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(int64(len(res)))
}

func setStore(c *Ctx, op model.SetOp) {
	dst := c.Args[1]
	n, err := model.SetStore(c, op, dst, c.Args[2:])
	if err != nil {
		c.Fail(err)
		return
	}
	if n == 0 && op == model.SetInter {
		// Redis deletes the destination before it replies when a source
		// is missing (the usual reason for an empty intersection).
		c.notifyEmptied(dst)
	}
	c.W.Int(n)
	if n > 0 {
		c.Notify(events.Set, setStoreEvents[op], dst)
	} else {
		c.notifyEmptied(dst)
	}
}

// setStoreEvents name the STORE commands' events.
var setStoreEvents = map[model.SetOp]string{
	model.SetInter: "sinterstore", model.SetUnion: "sunionstore", model.SetDiff: "sdiffstore",
}

func cmdSinterstore(c *Ctx) { setStore(c, model.SetInter) }
func cmdSunionstore(c *Ctx) { setStore(c, model.SetUnion) }
func cmdSdiffstore(c *Ctx)  { setStore(c, model.SetDiff) }

func cmdSscan(c *Ctx) {
	collScanCmd(c, model.TypeSet, func(e model.Entry) [][]byte { return [][]byte{e.Member} })
}

// ---- SSCAN / HSCAN ---------------------------------------------------------------

// collScanCmd runs SSCAN/HSCAN/ZSCAN: key cursor [MATCH pattern] [COUNT
// count]. emit turns an entry into the reply elements it contributes.
func collScanCmd(c *Ctx, typ string, emit func(e model.Entry) [][]byte) {
	cursor, ok := parseCursor(c.Args[2])
	if !ok {
		c.W.Error(MsgInvalidCursor)
		return
	}
	var pattern []byte
	count := int64(10)
	for rest := c.Args[3:]; len(rest) > 0; rest = rest[2:] {
		if len(rest) < 2 {
			c.W.Error(MsgSyntax)
			return
		}
		switch {
		case bytes.EqualFold(rest[0], []byte("match")):
			pattern = rest[1]
		case bytes.EqualFold(rest[0], []byte("count")):
			n, ok := model.String2ll(rest[1])
			if !ok {
				c.W.Error(MsgNotInt)
				return
			}
			if n < 1 {
				c.W.Error(MsgSyntax)
				return
			}
			count = n
		default:
			c.W.Error(MsgSyntax)
			return
		}
	}
	es, next, err := model.Scan(c, c.Args[1], typ, cursor, int(min(count, 10_000)))
	if err != nil {
		c.Fail(err)
		return
	}
	var out [][]byte
	for _, e := range es {
		if pattern != nil && !globMatch(pattern, e.Member) {
			continue
		}
		out = append(out, emit(e)...)
	}
	c.W.Array(2)
	c.W.BulkString(strconv.FormatUint(next, 10))
	c.W.Array(len(out))
	for _, b := range out {
		c.W.Bulk(b)
	}
}
