package commands

// List commands: they parse, call the list operations of the model
// (model/list.go, where the list layout and its costs are described), and
// reply. What stays here is what a command does around the model: the key
// locks that order local writers of a list and the wake-up of clients
// blocked on it.

import (
	"math/big"

	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/model"
)

// Error replies of the list family (checked against redis-server 7.0.15).
const (
	msgRankZero      = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"
	msgCountNegative = "ERR COUNT can't be negative"
	msgMaxlenNeg     = "ERR MAXLEN can't be negative"
	msgCountGTZero   = "ERR count should be greater than 0"
)

func registerLists(t *Table) {
	t.Register([]Row{
		{Name: "lpush", Run: func(c *Ctx) { listPush(c, true, false) }},
		{Name: "rpush", Run: func(c *Ctx) { listPush(c, false, false) }},
		{Name: "lpushx", Run: func(c *Ctx) { listPush(c, true, true) }},
		{Name: "rpushx", Run: func(c *Ctx) { listPush(c, false, true) }},
		{Name: "lpop", Run: func(c *Ctx) { cmdPop(c, true) }},
		{Name: "rpop", Run: func(c *Ctx) { cmdPop(c, false) }},
		{Name: "llen", Run: cmdLlen},
		{Name: "lrange", Run: cmdLrange},
		{Name: "lindex", Run: cmdLindex},
		{Name: "lset", Run: cmdLset},
		{Name: "linsert", Run: cmdLinsert},
		{Name: "lrem", Run: cmdLrem},
		{Name: "ltrim", Run: cmdLtrim},
		{Name: "lpos", Run: cmdLpos},
		{Name: "lmove", Run: cmdLmove},
		{Name: "rpoplpush", Run: cmdRpoplpush},
		{Name: "lmpop", Run: cmdLmpop},
		{Name: "blpop", Run: func(c *Ctx) { cmdBpop(c, true) }},
		{Name: "brpop", Run: func(c *Ctx) { cmdBpop(c, false) }},
		{Name: "blmove", Run: cmdBlmove},
		{Name: "brpoplpush", Run: cmdBrpoplpush},
		{Name: "blmpop", Run: cmdBlmpop},
	})
}

// ---- the list view ------------------------------------------------------------------

// ---- push and pop -------------------------------------------------------------------

func listPush(c *Ctx, left, mustExist bool) {
	key, vals := c.Args[1], c.Args[2:]
	n, err := pushElements(c, key, vals, left, mustExist)
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(n)
	if n > 0 {
		c.Notify(events.List, pushEvent(left), key)
		c.wake(key)
	}
}

// wake tells the clients blocked on key that it may hold something now:
// after the command reported its events, which Redis sends before it
// serves them (a blocked pop's "lpop" follows the "rpush" that fed it).
func (c *Ctx) wake(key []byte) { c.Srv.listRT().notify(c.DB(), key) }

// pushEvent and popEvent name a push or pop at one end of a list.
func pushEvent(left bool) string {
	if left {
		return "lpush"
	}
	return "rpush"
}

func popEvent(left bool) string {
	if left {
		return "lpop"
	}
	return "rpop"
}

// pushElements pushes vals onto key and returns the new length (0 when
// mustExist and the key does not exist). Pushes and pops take their key's
// lock in the model, only while their batch runs (model.KeyLocker): held
// for the whole command, it would keep them from sharing a batch.
func pushElements(c *Ctx, key []byte, vals [][]byte, left, mustExist bool) (int64, error) {
	return model.ListPush(c, key, vals, left, mustExist)
}

// parsePopCount parses LPOP/RPOP's count.
func parsePopCount(arg []byte) (int64, bool) {
	n, ok := model.String2ll(arg)
	return n, ok && n >= 0
}

func cmdPop(c *Ctx, left bool) {
	if len(c.Args) > 3 {
		c.W.Error(ErrWrongArgs(string(c.Args[0])))
		return
	}
	hasCount := len(c.Args) == 3
	count := int64(1)
	if hasCount {
		n, ok := parsePopCount(c.Args[2])
		if !ok {
			c.W.Error(MsgCountPositive)
			return
		}
		count = n
	}
	popped, exists, err := model.ListPop(c, c.Args[1], left, count)
	if err != nil {
		c.Fail(err)
		return
	}
	switch {
	case !exists && hasCount:
		c.W.NilArray()
	case !exists:
		c.W.Nil()
	case !hasCount:
		c.W.Bulk(popped[0])
	default:
		writeBulks(c, popped)
	}
	if len(popped) > 0 {
		c.Notify(events.List, popEvent(left), c.Args[1])
	}
}

func writeBulks(c *Ctx, vals [][]byte) {
	c.W.Array(len(vals))
	for _, v := range vals {
		c.W.Bulk(v)
	}
}

// ---- reads ----------------------------------------------------------------------------

func cmdLlen(c *Ctx) {
	n, err := model.ListLen(c, c.Args[1])
	if err != nil {
		c.Fail(err)
		return
	}
	notifyMissIfEmpty(c, n == 0)
	c.W.Int(n)
}

func cmdLrange(c *Ctx) {
	start, ok1 := model.String2ll(c.Args[2])
	stop, ok2 := model.String2ll(c.Args[3])
	if !ok1 || !ok2 {
		c.W.Error(MsgNotInt)
		return
	}
	out, err := model.ListRange(c, c.Args[1], start, stop)
	if err != nil {
		c.Fail(err)
		return
	}
	writeBulks(c, out)
}

func cmdLindex(c *Ctx) {
	// Redis looks the key up before it parses the index.
	idx, idxOK := model.String2ll(c.Args[2])
	v, err := model.ListIndex(c, c.Args[1], idx, idxOK)
	if err != nil {
		c.Fail(collErr(err))
		return
	}
	if v == nil {
		c.W.Nil()
		return
	}
	c.W.Bulk(v)
}

func parseLpos(args [][]byte) (model.ListPosQuery, string) {
	o := model.ListPosQuery{Rank: 1}
	for j := 0; j < len(args); j++ {
		more := j+1 < len(args)
		switch {
		case argIs(args[j], "rank") && more:
			n, ok := model.String2ll(args[j+1])
			if !ok {
				return o, MsgNotInt
			}
			// Like Redis, -9223372036854775808 is not refused: negated
			// it stays negative, so the first match from the tail counts.
			if n == 0 {
				return o, msgRankZero
			}
			o.Rank = n
			j++
		case argIs(args[j], "count") && more:
			n, ok := model.String2ll(args[j+1])
			if !ok || n < 0 {
				return o, msgCountNegative
			}
			o.Count, o.HasCount = n, true
			j++
		case argIs(args[j], "maxlen") && more:
			n, ok := model.String2ll(args[j+1])
			if !ok || n < 0 {
				return o, msgMaxlenNeg
			}
			o.MaxLen = n
			j++
		default:
			return o, MsgSyntax
		}
	}
	return o, ""
}

func cmdLpos(c *Ctx) {
	o, msg := parseLpos(c.Args[3:])
	if msg != "" {
		c.W.Error(msg)
		return
	}
	o.Elem = c.Args[2]
	found, _, err := model.ListPos(c, c.Args[1], o)
	if err != nil {
		c.Fail(err)
		return
	}
	if !o.HasCount {
		if len(found) == 0 {
			c.W.Nil()
			return
		}
		c.W.Int(found[0])
		return
	}
	c.W.Array(len(found))
	for _, i := range found {
		c.W.Int(i)
	}
}

// ---- middle operations ----------------------------------------------------------------------

func cmdLset(c *Ctx) {
	idx, idxOK := model.String2ll(c.Args[2])
	defer c.lockKeys(c.Args[1])()
	if err := model.ListSet(c, c.Args[1], idx, idxOK, c.Args[3]); err != nil {
		c.Fail(collErr(err))
		return
	}
	c.W.Simple("OK")
	c.Notify(events.List, "lset", c.Args[1])
}

func cmdLinsert(c *Ctx) {
	var after bool
	switch {
	case argIs(c.Args[2], "before"):
	case argIs(c.Args[2], "after"):
		after = true
	default:
		c.W.Error(MsgSyntax)
		return
	}
	defer c.lockKeys(c.Args[1])()
	reply, err := model.ListInsert(c, c.Args[1], after, c.Args[3], c.Args[4])
	if err != nil {
		c.Fail(err)
		return
	}
	if reply > 0 {
		c.Notify(events.List, "linsert", c.Args[1])
		c.wake(c.Args[1])
	}
	c.W.Int(reply)
}

func cmdLrem(c *Ctx) {
	count, ok := model.String2ll(c.Args[2])
	if !ok {
		c.W.Error(MsgNotInt)
		return
	}
	defer c.lockKeys(c.Args[1])()
	removed, err := model.ListRem(c, c.Args[1], count, c.Args[3])
	if err != nil {
		c.Fail(err)
		return
	}
	if removed > 0 {
		c.Notify(events.List, "lrem", c.Args[1])
	}
	c.W.Int(removed)
}

func cmdLtrim(c *Ctx) {
	start, ok1 := model.String2ll(c.Args[2])
	stop, ok2 := model.String2ll(c.Args[3])
	if !ok1 || !ok2 {
		c.W.Error(MsgNotInt)
		return
	}
	defer c.lockKeys(c.Args[1])()
	existed, err := model.ListTrim(c, c.Args[1], start, stop)
	if err != nil {
		c.Fail(err)
		return
	}
	if existed {
		c.Notify(events.List, "ltrim", c.Args[1])
	}
	c.W.Simple("OK")
}

// ---- moves and multi-key pops ------------------------------------------------------------------------

// parseWhere parses LEFT or RIGHT.
func parseWhere(arg []byte) (left, ok bool) {
	switch {
	case argIs(arg, "left"):
		return true, true
	case argIs(arg, "right"):
		return false, true
	}
	return false, false
}

func cmdLmove(c *Ctx) {
	from, ok1 := parseWhere(c.Args[3])
	to, ok2 := parseWhere(c.Args[4])
	if !ok1 || !ok2 {
		c.W.Error(MsgSyntax)
		return
	}
	lmoveReply(c, from, to)
}

func cmdRpoplpush(c *Ctx) { lmoveReply(c, false, true) }

func lmoveReply(c *Ctx, from, to bool) {
	v, err := listMove(c, c.Args[1], c.Args[2], from, to, false)
	if err != nil {
		c.Fail(err)
		return
	}
	if v == nil {
		c.W.Nil()
		return
	}
	replyMoved(c, v, from, to)
}

// replyMoved replies with the element an LMOVE moved, between its events
// as Redis sends them: the push onto the destination, the reply, the pop
// from the source (then its "del" if that emptied it).
func replyMoved(c *Ctx, v []byte, from, to bool) {
	c.Notify(events.List, pushEvent(to), c.Args[2])
	c.W.Bulk(v)
	c.Notify(events.List, popEvent(from), c.Args[1])
	c.wake(c.Args[2])
}

// listMove is model.ListMove under the keys' locks (replyMoved wakes the
// clients blocked on dst).
func listMove(c *Ctx, src, dst []byte, fromLeft, toLeft, quiet bool) ([]byte, error) {
	defer c.lockKeys(src, dst)()
	return model.ListMove(c, src, dst, fromLeft, toLeft, quiet)
}

// listMultiPop is model.ListMultiPop under the keys' locks.
func listMultiPop(c *Ctx, keys [][]byte, left bool, count int64, quiet bool) ([]byte, [][]byte, error) {
	defer c.lockKeys(keys...)()
	return model.ListMultiPop(c, keys, left, count, quiet)
}

// parseMpop parses LMPOP/BLMPOP (LEFT|RIGHT) and ZMPOP/BZMPOP (MIN|MAX)
// from numkeys (args[0]) on: first reports the first of the two words
// (LEFT, MIN). msg is the error reply ("" when none).
func parseMpop(args [][]byte, firstWord, secondWord string) (keys [][]byte, first bool, count int64, msg string) {
	numkeys, ok := model.String2ll(args[0])
	if !ok || numkeys < 1 {
		return nil, false, 0, MsgNumkeys
	}
	if numkeys >= int64(len(args))-1 {
		return nil, false, 0, MsgSyntax
	}
	keys = args[1 : 1+numkeys]
	rest := args[1+numkeys:]
	switch {
	case argIs(rest[0], firstWord):
		first = true
	case !argIs(rest[0], secondWord):
		return nil, false, 0, MsgSyntax
	}
	count = -1
	for j := 1; j < len(rest); j++ {
		if count == -1 && argIs(rest[j], "count") && j+1 < len(rest) {
			j++
			n, ok := model.String2ll(rest[j])
			if !ok || n < 1 {
				return nil, false, 0, msgCountGTZero
			}
			count = n
			continue
		}
		return nil, false, 0, MsgSyntax
	}
	if count == -1 {
		count = 1
	}
	return keys, first, count, ""
}

func cmdLmpop(c *Ctx) {
	keys, left, count, msg := parseMpop(c.Args[1:], "left", "right")
	if msg != "" {
		c.W.Error(msg)
		return
	}
	key, vals, err := listMultiPop(c, keys, left, count, false)
	if err != nil {
		c.Fail(err)
		return
	}
	writeMpop(c, key, vals)
	if key != nil {
		c.Notify(events.List, popEvent(left), key)
	}
}

func writeMpop(c *Ctx, key []byte, vals [][]byte) {
	if key == nil {
		c.W.NilArray()
		return
	}
	c.W.Array(2)
	c.W.Bulk(key)
	writeBulks(c, vals)
}

// ---- blocking timeouts ---------------------------------------------------------------------

// parseBlockTimeout parses a blocking command's timeout in seconds as Redis
// 7.0 does: a long double, times 1000, rounded up to whole ms and converted
// to a long long (a value past its range wraps to the most negative one and
// so is "negative"). 0 means forever.
func parseBlockTimeout(arg []byte) (ms int64, msg string) {
	x, ok := ldParse(arg)
	if !ok {
		return 0, MsgTimeoutNotFloat
	}
	if x.IsInf() {
		return 0, MsgNegativeTimeout
	}
	x = new(big.Float).Mul(x, big.NewFloat(1000))
	i, _ := x.Int(nil)
	if x.Sign() > 0 && !x.IsInt() {
		i.Add(i, big.NewInt(1))
	}
	if !i.IsInt64() {
		return 0, MsgNegativeTimeout
	}
	ms = i.Int64()
	if ms < 0 {
		return 0, MsgNegativeTimeout
	}
	return ms, ""
}
