package commands

// Sorted set commands, on the collection engine (model/collection.go) as its
// ordered layout: members are entries whose value is the score (8 bytes, the
// IEEE bits, so -0 and every double survive). An inline sorted set keeps its
// members like an inline hash (names in v, one attribute per score). A large
// one keeps, beside each member item, an order item whose sort key is the
// score in an order-preserving encoding followed by the member (model.MemberOrder),
// so score and rank ranges, pops and lexicographic ranges read pages of the
// order, not the set:
//
//   - ZADD/ZREM/ZINCRBY/ZSCORE of one member of a small set: one request
//     (ZINCRBY and flagged ZADDs when the item cache knows the key; else a
//     read and a write);
//   - the same on a large set: the key item, the members, one transaction;
//     two requests when the item cache knows the key (the commit is guarded
//     by the key item's ver, so a stale cache only costs a re-run);
//   - ZCARD: one read at any size; ZPOPMIN of k members: the key item (or
//     the cached one), one page of k order items, one transaction;
//   - ZRANK/ZCOUNT/ZLEXCOUNT and rank ranges of a large set read the order
//     up to the member or the range's end (a page per 1,024 members):
//     DynamoDB keeps no counts to skip with.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/redamo/redamo/events"
	"github.com/redamo/redamo/model"
)

func registerZsets(t *Table) {
	t.Register([]Row{
		{Name: "zadd", Run: cmdZadd},
		{Name: "zincrby", Run: cmdZincrby},
		{Name: "zrem", Run: cmdZrem},
		{Name: "zcard", Run: cmdZcard},
		{Name: "zscore", Run: cmdZscore},
		{Name: "zmscore", Run: cmdZmscore},
		{Name: "zrank", Run: cmdZrank},
		{Name: "zrevrank", Run: cmdZrevrank},
		{Name: "zcount", Run: cmdZcount},
		{Name: "zlexcount", Run: cmdZlexcount},
		{Name: "zrange", Run: cmdZrange},
		{Name: "zrangestore", Run: cmdZrangestore},
		{Name: "zrevrange", Run: cmdZrevrange},
		{Name: "zrangebyscore", Run: cmdZrangebyscore},
		{Name: "zrevrangebyscore", Run: cmdZrevrangebyscore},
		{Name: "zrangebylex", Run: cmdZrangebylex},
		{Name: "zrevrangebylex", Run: cmdZrevrangebylex},
		{Name: "zremrangebyrank", Run: cmdZremrangebyrank},
		{Name: "zremrangebyscore", Run: cmdZremrangebyscore},
		{Name: "zremrangebylex", Run: cmdZremrangebylex},
		{Name: "zpopmin", Run: cmdZpopmin},
		{Name: "zpopmax", Run: cmdZpopmax},
		{Name: "zmpop", Run: cmdZmpop},
		{Name: "bzpopmin", Run: cmdBzpopmin},
		{Name: "bzpopmax", Run: cmdBzpopmax},
		{Name: "bzmpop", Run: cmdBzmpop},
		{Name: "zrandmember", Run: cmdZrandmember},
		{Name: "zunion", Run: cmdZunion},
		{Name: "zinter", Run: cmdZinter},
		{Name: "zdiff", Run: cmdZdiff},
		{Name: "zunionstore", Run: cmdZunionstore},
		{Name: "zinterstore", Run: cmdZinterstore},
		{Name: "zdiffstore", Run: cmdZdiffstore},
		{Name: "zintercard", Run: cmdZintercard},
		{Name: "zscan", Run: cmdZscan},
	})
}

func isCSpace(c byte) bool {
	return c == ' ' || (c >= '\t' && c <= '\r')
}

// zrangeStrtod parses a score range bound as zslParseRange does: strtod,
// which skips leading blanks and reads "" as 0, with no range check.
func zrangeStrtod(b []byte) (float64, bool) {
	if len(b) == 0 {
		return 0, true
	}
	i := 0
	for i < len(b) && isCSpace(b[i]) {
		i++
	}
	text, ok := strtoldSyntax(string(b[i:]))
	if !ok {
		return 0, false
	}
	f, _ := strconv.ParseFloat(text, 64) // ±Inf on an overflow, as strtod
	return f, true
}

// scoreRange is a ZRANGEBYSCORE range as parsed.
type scoreRange struct {
	min, max     float64
	minex, maxex bool
}

// toModel is the range as the model reads it.
func (r scoreRange) toModel() model.ScoreRange {
	return model.ScoreRange{Min: r.min, Max: r.max, MinEx: r.minex, MaxEx: r.maxex}
}

// empty reports whether the range holds no score.
func (r scoreRange) empty() bool { return r.toModel().Empty() }

// parseScoreRange parses ZRANGEBYSCORE's min and max.
func parseScoreRange(minArg, maxArg []byte) (r scoreRange, ok bool) {
	bound := func(b []byte) (float64, bool, bool) {
		ex := len(b) > 0 && b[0] == '('
		if ex {
			b = b[1:]
		}
		f, ok := zrangeStrtod(b)
		return f, ex, ok
	}
	var ok1, ok2 bool
	r.min, r.minex, ok1 = bound(minArg)
	r.max, r.maxex, ok2 = bound(maxArg)
	return r, ok1 && ok2
}

// parseLexBound parses one end of a ZRANGEBYLEX range: "-", "+", or a
// member after "(" (exclusive) or "[".
func parseLexBound(b []byte) (model.LexBound, bool) {
	if len(b) == 0 {
		return model.LexBound{}, false
	}
	switch b[0] {
	case '+', '-':
		if len(b) != 1 {
			return model.LexBound{}, false
		}
		if b[0] == '+' {
			return model.LexBound{Inf: 1, Ex: true}, true
		}
		return model.LexBound{Inf: -1, Ex: true}, true
	case '(', '[':
		return model.LexBound{V: b[1:], Ex: b[0] == '('}, true
	}
	return model.LexBound{}, false
}

// parseLexRange parses ZRANGEBYLEX's min and max.
func parseLexRange(minArg, maxArg []byte) (model.LexRange, bool) {
	lo, ok1 := parseLexBound(minArg)
	hi, ok2 := parseLexBound(maxArg)
	return model.LexRange{Min: lo, Max: hi}, ok1 && ok2
}

// ---- replies -----------------------------------------------------------------------

// writeZentries replies with entries, with their scores when withScores
// (pairs in RESP3, a flat array in RESP2).
func writeZentries(c *Ctx, es []model.Entry, withScores bool) {
	if !withScores {
		c.W.Array(len(es))
		for _, e := range es {
			c.W.Bulk(e.Member)
		}
		return
	}
	if c.W.Proto() >= 3 {
		c.W.Array(len(es))
		for _, e := range es {
			c.W.Array(2)
			c.W.Bulk(e.Member)
			c.W.Double(e.Score)
		}
		return
	}
	c.W.Array(2 * len(es))
	for _, e := range es {
		c.W.Bulk(e.Member)
		c.W.Double(e.Score)
	}
}

// ---- writing -------------------------------------------------------------------------

func cmdZadd(c *Ctx)    { zadd(c, model.ZAddFlags{}) }
func cmdZincrby(c *Ctx) { zadd(c, model.ZAddFlags{Incr: true}) }

// zadd is ZADD and ZINCRBY (key increment member: ZADD key INCR ...).
func zadd(c *Ctx, f model.ZAddFlags) {
	key := c.Args[1]
	i := 2
	if !f.Incr {
	opts:
		for ; i < len(c.Args); i++ {
			switch strings.ToLower(string(c.Args[i])) {
			case "nx":
				f.NX = true
			case "xx":
				f.XX = true
			case "ch":
				f.CH = true
			case "incr":
				f.Incr = true
			case "gt":
				f.GT = true
			case "lt":
				f.LT = true
			default:
				break opts
			}
		}
	}
	pairs := c.Args[i:]
	switch {
	case len(pairs)%2 != 0 || len(pairs) == 0:
		c.W.Error(MsgSyntax)
		return
	case f.NX && f.XX:
		c.W.Error(MsgZXXNX)
		return
	case (f.GT && f.NX) || (f.LT && f.NX) || (f.GT && f.LT):
		c.W.Error(MsgGTLTNX)
		return
	case f.Incr && len(pairs) > 2:
		c.W.Error(MsgZIncrPair)
		return
	}
	members := make([][]byte, 0, len(pairs)/2)
	scores := make([]float64, 0, len(pairs)/2)
	for j := 0; j < len(pairs); j += 2 {
		s, ok := string2d(pairs[j])
		if !ok {
			c.W.Error(MsgNotFloat)
			return
		}
		scores = append(scores, s)
		members = append(members, pairs[j+1])
	}
	zaddApply(c, key, f, members, scores)
}

// zaddApply adds the parsed pairs (ZADD, ZINCRBY, GEOADD) and replies. It
// takes its key's lock in the model, only while its batch runs
// (model.KeyLocker), as list pushes do.
func zaddApply(c *Ctx, key []byte, f model.ZAddFlags, members [][]byte, scores []float64) {
	params := c.Srv.encoding().params
	res, err := model.ZAdd(c, key, f, members, scores, params.zsetEntries, params.zsetValue)
	if err != nil {
		c.Fail(collErr(err))
		return
	}
	switch {
	case res.Fast:
		c.W.Int(res.Added)
	case f.Incr && res.Processed > 0:
		c.W.Double(res.Score)
	case f.Incr:
		c.W.Nil()
	case f.CH:
		c.W.Int(res.Added + res.Updated)
	default:
		c.W.Int(res.Added)
	}
	if res.Changed {
		event := "zadd"
		if f.Incr {
			event = "zincr"
		}
		c.Notify(events.ZSet, event, key)
	}
	if res.Fast || res.Added > 0 {
		c.wake(key)
	}
}

func cmdZrem(c *Ctx) { removeMembersCmd(c, model.TypeZSet) }

func cmdZcard(c *Ctx) { collLenCmd(c, model.TypeZSet) }

func cmdZscore(c *Ctx) {
	scores, present, err := model.ZScores(c, c.Args[1], c.Args[2:3])
	if err != nil {
		c.Fail(err)
		return
	}
	if !present[0] {
		c.W.Nil()
		return
	}
	c.W.Double(scores[0])
}

func cmdZmscore(c *Ctx) {
	scores, present, err := model.ZScores(c, c.Args[1], c.Args[2:])
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Array(len(present))
	for i, p := range present {
		if p {
			c.W.Double(scores[i])
		} else {
			c.W.Nil()
		}
	}
}

func cmdZrank(c *Ctx)    { zrank(c, false) }
func cmdZrevrank(c *Ctx) { zrank(c, true) }

func zrank(c *Ctx, rev bool) {
	rank, found, err := model.ZRank(c, c.Args[1], c.Args[2], rev)
	switch {
	case err != nil:
		c.Fail(err)
	case !found:
		c.W.Nil()
	default:
		c.W.Int(rank)
	}
}

func cmdZcount(c *Ctx) {
	r, ok := parseScoreRange(c.Args[2], c.Args[3])
	if !ok {
		c.W.Error(MsgZRangeFloat)
		return
	}
	n, err := model.ZCount(c, c.Args[1], r.toModel())
	replyCount(c, n, err)
}

func cmdZlexcount(c *Ctx) {
	r, ok := parseLexRange(c.Args[2], c.Args[3])
	if !ok {
		c.W.Error(MsgZRangeLex)
		return
	}
	n, err := model.ZLexCount(c, c.Args[1], r)
	replyCount(c, n, err)
}

// replyCount replies with a count, or the error that ended it.
func replyCount(c *Ctx, n int64, err error) {
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(n)
}

// ---- ZRANGE and its family ----------------------------------------------------------

// zrangeQuery is a parsed ZRANGE-family command.
type zrangeQuery struct {
	model.ZRangeQuery
	withScores bool
}

// parseZrange parses the range arguments args[0:2] and the options after
// them as zrangeGenericCommand; dirSet says the command fixed the
// direction (ZREVRANGE...). It replies with the error when ok is false.
func parseZrange(c *Ctx, args [][]byte, by model.ZRangeBy, rev, dirSet, store bool) (q zrangeQuery, ok bool) {
	q = zrangeQuery{ZRangeQuery: model.ZRangeQuery{By: by, Rev: rev, Limit: -1}}
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		opt := strings.ToLower(string(args[j]))
		switch {
		case !store && opt == "withscores":
			q.withScores = true
		case opt == "limit" && left >= 2:
			o, ok1 := model.String2ll(args[j+1])
			l, ok2 := model.String2ll(args[j+2])
			if !ok1 || !ok2 {
				c.W.Error(MsgNotInt)
				return q, false
			}
			q.Offset, q.Limit = o, l
			j += 2
		case !dirSet && opt == "rev":
			q.Rev, dirSet = true, true
		case q.By == model.ZRangeAuto && opt == "bylex":
			q.By = model.ZRangeLex
		case q.By == model.ZRangeAuto && opt == "byscore":
			q.By = model.ZRangeScore
		default:
			c.W.Error(MsgSyntax)
			return q, false
		}
	}
	if q.By == model.ZRangeAuto {
		q.By = model.ZRangeRank
	}
	if q.Limit != -1 && q.By == model.ZRangeRank {
		c.W.Error(MsgZLimitRank)
		return q, false
	}
	if q.withScores && q.By == model.ZRangeLex {
		c.W.Error(MsgZScoresLex)
		return q, false
	}
	lo, hi := args[0], args[1]
	if q.Rev && q.By != model.ZRangeRank {
		lo, hi = hi, lo
	}
	switch q.By {
	case model.ZRangeRank:
		s, ok1 := model.String2ll(lo)
		e, ok2 := model.String2ll(hi)
		if !ok1 || !ok2 {
			c.W.Error(MsgNotInt)
			return q, false
		}
		q.Start, q.End = s, e
	case model.ZRangeScore:
		r, ok := parseScoreRange(lo, hi)
		if !ok {
			c.W.Error(MsgZRangeFloat)
			return q, false
		}
		q.Score = r.toModel()
	case model.ZRangeLex:
		if q.Lex, ok = parseLexRange(lo, hi); !ok {
			c.W.Error(MsgZRangeLex)
			return q, false
		}
	}
	return q, true
}

// zrangeCmd runs a ZRANGE-family read of key whose range arguments start
// at args.
func zrangeCmd(c *Ctx, args [][]byte, by model.ZRangeBy, rev, dirSet bool) {
	q, ok := parseZrange(c, args, by, rev, dirSet, false)
	if !ok {
		return
	}
	es, err := model.ZRange(c, c.Args[1], q.ZRangeQuery)
	if err != nil {
		c.Fail(err)
		return
	}
	writeZentries(c, es, q.withScores)
}

func cmdZrange(c *Ctx)         { zrangeCmd(c, c.Args[2:], model.ZRangeAuto, false, false) }
func cmdZrevrange(c *Ctx)      { zrangeCmd(c, c.Args[2:], model.ZRangeRank, true, true) }
func cmdZrangebyscore(c *Ctx)  { zrangeCmd(c, c.Args[2:], model.ZRangeScore, false, true) }
func cmdZrangebylex(c *Ctx)    { zrangeCmd(c, c.Args[2:], model.ZRangeLex, false, true) }
func cmdZrevrangebylex(c *Ctx) { zrangeCmd(c, c.Args[2:], model.ZRangeLex, true, true) }
func cmdZrevrangebyscore(c *Ctx) {
	zrangeCmd(c, c.Args[2:], model.ZRangeScore, true, true)
}

// cmdZrangestore is ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV]
// [LIMIT offset count]: the range replaces dst (an empty one deletes it).
func cmdZrangestore(c *Ctx) {
	dst, src := c.Args[1], c.Args[2]
	q, ok := parseZrange(c, c.Args[3:], model.ZRangeAuto, false, false, true)
	if !ok {
		return
	}
	params := c.Srv.encoding().params
	n, err := model.ZRangeStore(c, dst, src, q.ZRangeQuery, params.zsetEntries, params.zsetValue)
	if err != nil {
		c.Fail(err)
		return
	}
	replyStored(c, events.ZSet, "zrangestore", dst, n)
}

// replyStored replies with the size of a STORE command's result, then
// reports the destination's event, or its "del" when the result was empty
// and the destination existed, as Redis does.
func replyStored(c *Ctx, class events.Class, event string, dst []byte, n int64) {
	c.W.Int(n)
	if n > 0 {
		c.Notify(class, event, dst)
	} else {
		c.notifyEmptied(dst)
	}
}

// ---- removing ranges --------------------------------------------------------------------

func cmdZremrangebyrank(c *Ctx) {
	start, ok1 := model.String2ll(c.Args[2])
	end, ok2 := model.String2ll(c.Args[3])
	if !ok1 || !ok2 {
		c.W.Error(MsgNotInt)
		return
	}
	zremRange(c, model.ZRangeQuery{By: model.ZRangeRank, Start: start, End: end})
}

func cmdZremrangebyscore(c *Ctx) {
	r, ok := parseScoreRange(c.Args[2], c.Args[3])
	if !ok {
		c.W.Error(MsgZRangeFloat)
		return
	}
	zremRange(c, model.ZRangeQuery{By: model.ZRangeScore, Score: r.toModel(), Limit: -1})
}

func cmdZremrangebylex(c *Ctx) {
	r, ok := parseLexRange(c.Args[2], c.Args[3])
	if !ok {
		c.W.Error(MsgZRangeLex)
		return
	}
	zremRange(c, model.ZRangeQuery{By: model.ZRangeLex, Lex: r, Limit: -1})
}

// zremRange removes the entries q reads, under the key's lock, and
// replies with their count.
func zremRange(c *Ctx, q model.ZRangeQuery) {
	defer c.lockKeys(c.Args[1])()
	n, err := model.ZRemRange(c, c.Args[1], q)
	if err == nil && n > 0 {
		c.Notify(events.ZSet, zremRangeEvents[q.By], c.Args[1])
	}
	replyCount(c, n, err)
}

var zremRangeEvents = map[model.ZRangeBy]string{
	model.ZRangeRank: "zremrangebyrank", model.ZRangeScore: "zremrangebyscore", model.ZRangeLex: "zremrangebylex",
}

// zpopEvent names a pop of the lowest or (top) highest entries.
func zpopEvent(top bool) string {
	if top {
		return "zpopmax"
	}
	return "zpopmin"
}

// notifyZpop reports a pop from key as Redis does, inside the reply: after
// the reply's header, before the first entry (the "del" of a set it
// emptied follows the reply: zpopDone).
func notifyZpop(c *Ctx, top bool, key []byte) {
	c.notifyHoldingDel(events.ZSet, zpopEvent(top), key)
}

// ---- pops ------------------------------------------------------------------------------

// zpopFrom pops up to count of the lowest (highest when top) entries of
// the first of keys that exists (nil key when none does). quiet: a key of
// another type is passed over instead of failing (a blocked client's later
// tries, as Redis serves only sorted sets to them).
func zpopFrom(c *Ctx, keys [][]byte, top bool, count int64, quiet bool) (key []byte, es []model.Entry, err error) {
	for _, k := range keys {
		unlock := c.lockKeys(k)
		var found bool
		es, found, err = model.ZPop(c, k, top, count)
		unlock()
		if quiet && err == model.ErrWrongType {
			continue
		}
		if err != nil || found {
			return k, es, err
		}
	}
	return nil, nil, nil
}

func cmdZpopmin(c *Ctx) { zpop(c, false) }
func cmdZpopmax(c *Ctx) { zpop(c, true) }

// zpop is ZPOPMIN/ZPOPMAX key [count].
func zpop(c *Ctx, top bool) {
	if len(c.Args) > 3 {
		c.W.Error(MsgSyntax)
		return
	}
	count := int64(-1)
	if len(c.Args) == 3 {
		n, ok := model.String2ll(c.Args[2])
		if !ok || n < 0 {
			c.W.Error(MsgCountPositive)
			return
		}
		count = n
	}
	if count == 0 {
		// Redis checks the type first, then answers an empty array.
		if _, err := model.Len(c, c.Args[1], model.TypeZSet); err != nil {
			c.Fail(err)
			return
		}
		c.W.Array(0)
		return
	}
	_, es, err := zpopFrom(c, c.Args[1:2], top, max(count, 1), false)
	if err != nil {
		c.Fail(err)
		return
	}
	flat := count == -1 || c.W.Proto() < 3
	if flat {
		c.W.Array(2 * len(es))
	} else {
		c.W.Array(len(es))
	}
	if len(es) > 0 {
		notifyZpop(c, top, c.Args[1])
	}
	for _, e := range es {
		if !flat {
			c.W.Array(2)
		}
		c.W.Bulk(e.Member)
		c.W.Double(e.Score)
	}
	c.notifyEmptied(c.Args[1])
}

// writeZmpop replies [key, [[member, score] ...]], with the pop's events.
func writeZmpop(c *Ctx, key []byte, es []model.Entry, top bool) {
	c.W.Array(2)
	c.W.Bulk(key)
	c.W.Array(len(es))
	notifyZpop(c, top, key)
	writeZentriesNested(c, es)
	c.notifyEmptied(key)
}

// writeZentriesNested writes [member, score] pairs, in both protocols.
func writeZentriesNested(c *Ctx, es []model.Entry) {
	for _, e := range es {
		c.W.Array(2)
		c.W.Bulk(e.Member)
		c.W.Double(e.Score)
	}
}

func cmdZmpop(c *Ctx) {
	keys, lowest, count, msg := parseMpop(c.Args[1:], "min", "max")
	if msg != "" {
		c.W.Error(msg)
		return
	}
	key, es, err := zpopFrom(c, keys, !lowest, count, false)
	switch {
	case err != nil:
		c.Fail(err)
	case key == nil:
		c.W.NilArray()
	default:
		writeZmpop(c, key, es, !lowest)
	}
}

// zblockPop waits until it pops from the first non-empty sorted set of
// keys (blockingPop).
func zblockPop(c *Ctx, keys [][]byte, ms int64, top bool, count int64) ([]byte, []model.Entry, bool) {
	return blockingPop(c, keys, ms, func(ac *Ctx, quiet bool) ([]byte, []model.Entry, error) {
		return zpopFrom(ac, keys, top, count, quiet)
	})
}

func cmdBzpopmin(c *Ctx) { bzpop(c, false) }
func cmdBzpopmax(c *Ctx) { bzpop(c, true) }

// bzpop is BZPOPMIN/BZPOPMAX key [key ...] timeout: [key, member, score].
func bzpop(c *Ctx, top bool) {
	ms, msg := parseBlockTimeout(c.Args[len(c.Args)-1])
	if msg != "" {
		c.W.Error(msg)
		return
	}
	if key, es, ok := zblockPop(c, c.Args[1:len(c.Args)-1], ms, top, 1); ok {
		c.W.Array(3)
		c.W.Bulk(key)
		notifyZpop(c, top, key)
		c.W.Bulk(es[0].Member)
		c.W.Double(es[0].Score)
		c.notifyEmptied(key)
	}
}

func cmdBzmpop(c *Ctx) {
	keys, lowest, count, msg := parseMpop(c.Args[2:], "min", "max")
	if msg != "" {
		c.W.Error(msg)
		return
	}
	ms, msg := parseBlockTimeout(c.Args[1])
	if msg != "" {
		c.W.Error(msg)
		return
	}
	if key, es, ok := zblockPop(c, keys, ms, !lowest, count); ok {
		writeZmpop(c, key, es, !lowest)
	}
}

// ---- ZRANDMEMBER, ZSCAN -------------------------------------------------------------------

func cmdZrandmember(c *Ctx) {
	count, withCount, withScores, ok := parseRandomArgs(c, "withscores")
	if !ok {
		return
	}
	picked, err := model.RandomPick(c, c.Args[1], model.TypeZSet, count)
	if err != nil {
		c.Fail(err)
		return
	}
	if !withScores {
		writePicked(c, picked, withCount)
		return
	}
	writeZentries(c, picked, true)
}

func cmdZscan(c *Ctx) {
	collScanCmd(c, model.TypeZSet, func(e model.Entry) [][]byte {
		return [][]byte{e.Member, FormatDouble(nil, e.Score)}
	})
}

// ---- ZUNION, ZINTER, ZDIFF ---------------------------------------------------------------

// zopQuery is a parsed ZUNION/ZINTER/ZDIFF(STORE)/ZINTERCARD.
type zopQuery struct {
	model.ZOpQuery
	withScores bool
}

// parseZop parses numkeys key... [options] (args from numkeys) as
// zunionInterDiffGenericCommand, except the options, which it returns
// unparsed: Redis looks the keys up (WRONGTYPE) before it parses them.
func parseZop(c *Ctx, args [][]byte) (keys, opts [][]byte, ok bool) {
	n, okn := model.String2ll(args[0])
	if !okn {
		c.W.Error(MsgNotInt)
		return nil, nil, false
	}
	if n < 1 {
		c.W.Error(fmt.Sprintf(MsgZNeedsOneKey, strings.ToLower(string(c.Args[0]))))
		return nil, nil, false
	}
	if n > int64(len(args)-1) {
		c.W.Error(MsgSyntax)
		return nil, nil, false
	}
	return args[1 : 1+n], args[1+n:], true
}

// parseZopOptions parses the options after the keys; store and card say
// which command it is. It returns the error reply's text, "" when they are
// right.
func parseZopOptions(q *zopQuery, opts [][]byte, store, card bool) string {
	q.Agg = "sum"
	for j := 0; j < len(opts); {
		remaining := len(opts) - j
		opt := strings.ToLower(string(opts[j]))
		switch {
		case q.Op != model.ZDiff && !card && remaining >= len(q.Keys)+1 && opt == "weights":
			j++
			q.Weights = make([]float64, len(q.Keys))
			for i := range q.Keys {
				w, ok := string2d(opts[j])
				if !ok {
					return MsgZWeightFloat
				}
				q.Weights[i] = w
				j++
			}
		case q.Op != model.ZDiff && !card && remaining >= 2 && opt == "aggregate":
			switch a := strings.ToLower(string(opts[j+1])); a {
			case "sum", "min", "max":
				q.Agg = a
			default:
				return MsgSyntax
			}
			j += 2
		case !store && !card && opt == "withscores":
			q.withScores = true
			j++
		case card && remaining >= 2 && opt == "limit":
			l, ok := model.String2ll(opts[j+1])
			if !ok || l < 0 {
				return MsgLimitNegative
			}
			q.Limit = l
			j += 2
		default:
			return MsgSyntax
		}
	}
	return ""
}

// zopRead runs a read-only ZUNION/ZINTER/ZDIFF/ZINTERCARD as one
// consistent snapshot.
func zopRead(c *Ctx, op model.ZSetOp, card bool) {
	keys, opts, ok := parseZop(c, c.Args[1:])
	if !ok {
		return
	}
	q := &zopQuery{ZOpQuery: model.ZOpQuery{Op: op, Keys: keys}}
	res, err := model.ZCombine(c, &q.ZOpQuery, func() error { return zopOptions(q, opts, false, card) })
	switch {
	case err != nil:
		c.Fail(err)
	case card:
		c.W.Int(int64(len(res)))
	default:
		writeZentries(c, res, q.withScores)
	}
}

func cmdZunion(c *Ctx)     { zopRead(c, model.ZUnion, false) }
func cmdZinter(c *Ctx)     { zopRead(c, model.ZInter, false) }
func cmdZdiff(c *Ctx)      { zopRead(c, model.ZDiff, false) }
func cmdZintercard(c *Ctx) { zopRead(c, model.ZInter, true) }

func cmdZunionstore(c *Ctx) { zopStore(c, model.ZUnion) }
func cmdZinterstore(c *Ctx) { zopStore(c, model.ZInter) }
func cmdZdiffstore(c *Ctx)  { zopStore(c, model.ZDiff) }

// zopStore runs ZUNIONSTORE/ZINTERSTORE/ZDIFFSTORE dst numkeys key...
func zopStore(c *Ctx, op model.ZSetOp) {
	keys, opts, ok := parseZop(c, c.Args[2:])
	if !ok {
		return
	}
	q := &zopQuery{ZOpQuery: model.ZOpQuery{Op: op, Keys: keys}}
	params := c.Srv.encoding().params
	n, err := model.ZCombineStore(c, c.Args[1], &q.ZOpQuery, func() error { return zopOptions(q, opts, true, false) }, params.zsetEntries, params.zsetValue)
	if err != nil {
		c.Fail(err)
		return
	}
	replyStored(c, events.ZSet, zopStoreEvents[op], c.Args[1], n)
}

var zopStoreEvents = map[model.ZSetOp]string{
	model.ZUnion: "zunionstore", model.ZInter: "zinterstore", model.ZDiff: "zdiffstore",
}

// zopOptions is parseZopOptions with its error as a reply.
func zopOptions(q *zopQuery, opts [][]byte, store, card bool) error {
	if msg := parseZopOptions(q, opts, store, card); msg != "" {
		return redisError(msg)
	}
	return nil
}
