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
	"bytes"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/redamo/redamo/model"
)

func registerZsets(t *Table) {
	t.Register([]Row{
		{"zadd", cmdZadd},
		{"zincrby", cmdZincrby},
		{"zrem", cmdZrem},
		{"zcard", cmdZcard},
		{"zscore", cmdZscore},
		{"zmscore", cmdZmscore},
		{"zrank", cmdZrank},
		{"zrevrank", cmdZrevrank},
		{"zcount", cmdZcount},
		{"zlexcount", cmdZlexcount},
		{"zrange", cmdZrange},
		{"zrangestore", cmdZrangestore},
		{"zrevrange", cmdZrevrange},
		{"zrangebyscore", cmdZrangebyscore},
		{"zrevrangebyscore", cmdZrevrangebyscore},
		{"zrangebylex", cmdZrangebylex},
		{"zrevrangebylex", cmdZrevrangebylex},
		{"zremrangebyrank", cmdZremrangebyrank},
		{"zremrangebyscore", cmdZremrangebyscore},
		{"zremrangebylex", cmdZremrangebylex},
		{"zpopmin", cmdZpopmin},
		{"zpopmax", cmdZpopmax},
		{"zmpop", cmdZmpop},
		{"bzpopmin", cmdBzpopmin},
		{"bzpopmax", cmdBzpopmax},
		{"bzmpop", cmdBzmpop},
		{"zrandmember", cmdZrandmember},
		{"zunion", cmdZunion},
		{"zinter", cmdZinter},
		{"zdiff", cmdZdiff},
		{"zunionstore", cmdZunionstore},
		{"zinterstore", cmdZinterstore},
		{"zdiffstore", cmdZdiffstore},
		{"zintercard", cmdZintercard},
		{"zscan", cmdZscan},
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

// scoreRange is a ZRANGEBYSCORE range.
type scoreRange struct {
	min, max     float64
	minex, maxex bool
}

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

func (r scoreRange) empty() bool {
	return r.min > r.max || (r.min == r.max && (r.minex || r.maxex))
}

// keys returns the order keys [lo, hi) that hold the range's members.
func (r scoreRange) keys() (lo, hi []byte) {
	lo = model.ZOrderKey(r.min)
	if r.minex {
		lo = model.ZScoreAbove(r.min)
	}
	hi = model.ZScoreAbove(r.max)
	if r.maxex {
		hi = model.ZOrderKey(r.max)
	}
	return lo, hi
}

// lexBound is one end of a ZRANGEBYLEX range: "-" (inf -1), "+" (inf 1),
// or a member, exclusive or not.
type lexBound struct {
	v   []byte
	inf int
	ex  bool
}

func parseLexBound(b []byte) (lexBound, bool) {
	if len(b) == 0 {
		return lexBound{}, false
	}
	switch b[0] {
	case '+', '-':
		if len(b) != 1 {
			return lexBound{}, false
		}
		if b[0] == '+' {
			return lexBound{inf: 1, ex: true}, true
		}
		return lexBound{inf: -1, ex: true}, true
	case '(', '[':
		return lexBound{v: b[1:], ex: b[0] == '('}, true
	}
	return lexBound{}, false
}

// cmpLex compares a member with a bound (sdscmplex).
func cmpLex(m []byte, b lexBound) int {
	if b.inf != 0 {
		return -b.inf
	}
	return bytes.Compare(m, b.v)
}

// lexRange is a ZRANGEBYLEX range.
type lexRange struct{ min, max lexBound }

func parseLexRange(minArg, maxArg []byte) (lexRange, bool) {
	lo, ok1 := parseLexBound(minArg)
	hi, ok2 := parseLexBound(maxArg)
	return lexRange{lo, hi}, ok1 && ok2
}

func (r lexRange) gteMin(m []byte) bool {
	if r.min.ex {
		return cmpLex(m, r.min) > 0
	}
	return cmpLex(m, r.min) >= 0
}

func (r lexRange) lteMax(m []byte) bool {
	if r.max.ex {
		return cmpLex(m, r.max) < 0
	}
	return cmpLex(m, r.max) <= 0
}

func (r lexRange) empty() bool {
	var cmp int
	switch {
	case r.min.inf != 0 && r.min.inf == r.max.inf:
		cmp = 0
	case r.min.inf == 1 || r.max.inf == -1:
		cmp = 1
	case r.min.inf == -1 || r.max.inf == 1:
		cmp = -1
	default:
		cmp = bytes.Compare(r.min.v, r.max.v)
	}
	return cmp > 0 || (cmp == 0 && (r.min.ex || r.max.ex))
}

// ---- reading ---------------------------------------------------------------------

// zentry is a member with its score.
type zentry struct {
	m []byte
	s float64
}

// zwalk is model.ZWalk of entries.
func zwalk(cl *model.Collection, lo, hi []byte, rev bool, offset int64, hint int, fn func(e zentry) error) error {
	return model.ZWalk(cl, lo, hi, rev, offset, hint, func(m []byte, s float64) error { return fn(zentry{m, s}) })
}

// zlimitWalk is zwalk of at most limit entries (negative: all).
func zlimitWalk(cl *model.Collection, lo, hi []byte, rev bool, offset, limit int64, fn func(e zentry) error) error {
	if limit == 0 {
		return nil
	}
	hint := 0
	if limit > 0 && limit < model.MemberPageItems {
		hint = int(limit)
	}
	return zwalk(cl, lo, hi, rev, offset, hint, func(e zentry) error {
		if err := fn(e); err != nil {
			return err
		}
		if limit--; limit == 0 {
			return model.ErrEnough
		}
		return nil
	})
}

// zgather collects the entries a walk visits.
func zgather(walk func(fn func(e zentry) error) error) ([]zentry, error) {
	var out []zentry
	err := walk(func(e zentry) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// zcollect gathers up to limit entries (negative: all) of a zwalk.
func zcollect(cl *model.Collection, lo, hi []byte, rev bool, offset, limit int64) ([]zentry, error) {
	return zgather(func(fn func(e zentry) error) error { return zlimitWalk(cl, lo, hi, rev, offset, limit, fn) })
}

// zbyRank returns the entries of ranks [start, end] (Redis's indexes,
// negative from the end), in descending order when rev. A large set is
// read from the end the range is nearer to.
func zbyRank(cl *model.Collection, start, end int64, rev bool) ([]zentry, error) {
	n := cl.Len()
	if !cl.Exists() {
		n = 0
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start = max(start, 0)
	if start > end || start >= n {
		return nil, nil
	}
	end = min(end, n-1)
	// Ascending positions [a, b].
	a, b := start, end
	if rev {
		a, b = n-1-end, n-1-start
	}
	fromTop := a > n-1-b
	var out []zentry
	var err error
	if fromTop {
		out, err = zcollect(cl, nil, nil, true, n-1-b, b-a+1)
	} else {
		out, err = zcollect(cl, nil, nil, false, a, b-a+1)
	}
	if fromTop != rev {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out, err
}

// zscoreWalk visits the entries of a ZRANGEBYSCORE read, with Redis's
// LIMIT semantics (a negative offset reads nothing, a negative limit
// everything).
func zscoreWalk(cl *model.Collection, r scoreRange, rev bool, offset, limit int64, fn func(e zentry) error) error {
	if r.empty() || offset < 0 || (offset > 0 && offset >= cl.Len()) {
		return nil
	}
	lo, hi := r.keys()
	return zlimitWalk(cl, lo, hi, rev, offset, limit, fn)
}

// zbyScore is zscoreWalk's entries.
func zbyScore(cl *model.Collection, r scoreRange, rev bool, offset, limit int64) ([]zentry, error) {
	return zgather(func(fn func(e zentry) error) error { return zscoreWalk(cl, r, rev, offset, limit, fn) })
}

// zlexWalk visits the entries of a ZRANGEBYLEX read. The order is by
// score first: as in Redis, a lexicographic range means something only
// while every score is equal. The walk starts at the bound under the first
// (last, when rev) score, as a walk from the start that skips what the
// bound excludes would.
func zlexWalk(cl *model.Collection, r lexRange, rev bool, offset, limit int64, fn func(e zentry) error) error {
	if r.empty() || offset < 0 || !cl.Exists() {
		return nil
	}
	var lo, hi []byte
	if cl.Large() {
		edge, err := zcollect(cl, nil, nil, rev, 0, 1)
		if err != nil || len(edge) == 0 {
			return err
		}
		switch {
		case !rev && r.min.inf == 0:
			lo = append(model.ZOrderKey(edge[0].s), r.min.v...)
		case rev && r.max.inf == 0:
			hi = append(append(model.ZOrderKey(edge[0].s), r.max.v...), 0)
		}
	}
	started := false
	return zwalk(cl, lo, hi, rev, 0, 0, func(e zentry) error {
		if !started {
			if rev && !r.lteMax(e.m) || !rev && !r.gteMin(e.m) {
				return nil
			}
			started = true
		}
		if rev && !r.gteMin(e.m) || !rev && !r.lteMax(e.m) {
			return model.ErrEnough
		}
		if offset > 0 {
			offset--
			return nil
		}
		if limit == 0 {
			return model.ErrEnough
		}
		limit--
		return fn(e)
	})
}

// zbyLex is zlexWalk's entries.
func zbyLex(cl *model.Collection, r lexRange, rev bool, offset, limit int64) ([]zentry, error) {
	return zgather(func(fn func(e zentry) error) error { return zlexWalk(cl, r, rev, offset, limit, fn) })
}

// ---- replies -----------------------------------------------------------------------

// writeZentries replies with entries, with their scores when withScores
// (pairs in RESP3, a flat array in RESP2).
func writeZentries(c *Ctx, es []zentry, withScores bool) {
	if !withScores {
		c.W.Array(len(es))
		for _, e := range es {
			c.W.Bulk(e.m)
		}
		return
	}
	if c.W.Proto() >= 3 {
		c.W.Array(len(es))
		for _, e := range es {
			c.W.Array(2)
			c.W.Bulk(e.m)
			c.W.Double(e.s)
		}
		return
	}
	c.W.Array(2 * len(es))
	for _, e := range es {
		c.W.Bulk(e.m)
		c.W.Double(e.s)
	}
}

// ---- writing -------------------------------------------------------------------------

// zsetWrite is model.ZSetWrite under the key's lock: this process's
// writers of the key take turns (as list writers do), as they would only
// invalidate each other's optimistic commits.
func zsetWrite(c *Ctx, key []byte, st model.MemberStart, change func(cl *model.Collection) error) error {
	defer c.lockKeys(key)()
	return model.ZSetWrite(c, key, st, change)
}

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

// zaddApply adds the parsed pairs (ZADD, ZINCRBY, GEOADD) and replies.
func zaddApply(c *Ctx, key []byte, f model.ZAddFlags, members [][]byte, scores []float64) {
	params := c.Srv.encoding().params
	unlock := c.lockKeys(key)
	res, err := model.ZAdd(c, key, f, members, scores, params.zsetEntries, params.zsetValue)
	unlock()
	if err != nil {
		c.Fail(collErr(err))
		return
	}
	if res.Fast || res.Added > 0 {
		c.Srv.listRT().notify(c.DB(), key)
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
	var rank int64
	var found bool
	err := model.Read(c, c.Args[1], model.TypeZSet, func(cl *model.Collection) (err error) {
		rank, found, err = model.ZRankOf(cl, c.Args[2], rev)
		return err
	})
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
	zcountWith(c, func(cl *model.Collection, fn func(zentry) error) error { return zscoreWalk(cl, r, false, 0, -1, fn) })
}

func cmdZlexcount(c *Ctx) {
	r, ok := parseLexRange(c.Args[2], c.Args[3])
	if !ok {
		c.W.Error(MsgZRangeLex)
		return
	}
	zcountWith(c, func(cl *model.Collection, fn func(zentry) error) error { return zlexWalk(cl, r, false, 0, -1, fn) })
}

// zcountWith replies with how many entries walk visits, counted as they
// come rather than gathered: a count of a large set holds no entries.
func zcountWith(c *Ctx, walk func(cl *model.Collection, fn func(zentry) error) error) {
	var n int64
	err := model.Read(c, c.Args[1], model.TypeZSet, func(cl *model.Collection) error {
		n = 0
		return walk(cl, func(zentry) error {
			n++
			return nil
		})
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(n)
}

// ---- ZRANGE and its family ----------------------------------------------------------

type zrangeBy uint8

const (
	zbyAuto zrangeBy = iota
	zbyRankRange
	zbyScoreRange
	zbyLexRange
)

// zrangeQuery is a parsed ZRANGE-family command.
type zrangeQuery struct {
	by            zrangeBy
	rev           bool
	withScores    bool
	offset, limit int64
	start, end    int64
	score         scoreRange
	lex           lexRange
}

// parseZrange parses the range arguments args[0:2] and the options after
// them as zrangeGenericCommand; dirSet says the command fixed the
// direction (ZREVRANGE...). It replies with the error when ok is false.
func parseZrange(c *Ctx, args [][]byte, by zrangeBy, rev, dirSet, store bool) (q zrangeQuery, ok bool) {
	q = zrangeQuery{by: by, rev: rev, limit: -1}
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
			q.offset, q.limit = o, l
			j += 2
		case !dirSet && opt == "rev":
			q.rev, dirSet = true, true
		case q.by == zbyAuto && opt == "bylex":
			q.by = zbyLexRange
		case q.by == zbyAuto && opt == "byscore":
			q.by = zbyScoreRange
		default:
			c.W.Error(MsgSyntax)
			return q, false
		}
	}
	if q.by == zbyAuto {
		q.by = zbyRankRange
	}
	if q.limit != -1 && q.by == zbyRankRange {
		c.W.Error(MsgZLimitRank)
		return q, false
	}
	if q.withScores && q.by == zbyLexRange {
		c.W.Error(MsgZScoresLex)
		return q, false
	}
	lo, hi := args[0], args[1]
	if q.rev && q.by != zbyRankRange {
		lo, hi = hi, lo
	}
	switch q.by {
	case zbyRankRange:
		s, ok1 := model.String2ll(lo)
		e, ok2 := model.String2ll(hi)
		if !ok1 || !ok2 {
			c.W.Error(MsgNotInt)
			return q, false
		}
		q.start, q.end = s, e
	case zbyScoreRange:
		if q.score, ok = parseScoreRange(lo, hi); !ok {
			c.W.Error(MsgZRangeFloat)
			return q, false
		}
	case zbyLexRange:
		if q.lex, ok = parseLexRange(lo, hi); !ok {
			c.W.Error(MsgZRangeLex)
			return q, false
		}
	}
	return q, true
}

// read runs the query on cl.
func (q zrangeQuery) read(cl *model.Collection) ([]zentry, error) {
	switch q.by {
	case zbyScoreRange:
		return zbyScore(cl, q.score, q.rev, q.offset, q.limit)
	case zbyLexRange:
		return zbyLex(cl, q.lex, q.rev, q.offset, q.limit)
	}
	return zbyRank(cl, q.start, q.end, q.rev)
}

// zrangeCmd runs a ZRANGE-family read of key whose range arguments start
// at args.
func zrangeCmd(c *Ctx, args [][]byte, by zrangeBy, rev, dirSet bool) {
	q, ok := parseZrange(c, args, by, rev, dirSet, false)
	if !ok {
		return
	}
	var es []zentry
	err := model.Read(c, c.Args[1], model.TypeZSet, func(cl *model.Collection) (err error) {
		es, err = q.read(cl)
		return err
	})
	if err != nil {
		c.Fail(err)
		return
	}
	writeZentries(c, es, q.withScores)
}

func cmdZrange(c *Ctx)         { zrangeCmd(c, c.Args[2:], zbyAuto, false, false) }
func cmdZrevrange(c *Ctx)      { zrangeCmd(c, c.Args[2:], zbyRankRange, true, true) }
func cmdZrangebyscore(c *Ctx)  { zrangeCmd(c, c.Args[2:], zbyScoreRange, false, true) }
func cmdZrangebylex(c *Ctx)    { zrangeCmd(c, c.Args[2:], zbyLexRange, false, true) }
func cmdZrevrangebylex(c *Ctx) { zrangeCmd(c, c.Args[2:], zbyLexRange, true, true) }
func cmdZrevrangebyscore(c *Ctx) {
	zrangeCmd(c, c.Args[2:], zbyScoreRange, true, true)
}

// cmdZrangestore is ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV]
// [LIMIT offset count]: the range replaces dst (an empty one deletes it).
func cmdZrangestore(c *Ctx) {
	dst, src := c.Args[1], c.Args[2]
	q, ok := parseZrange(c, c.Args[3:], zbyAuto, false, false, true)
	if !ok {
		return
	}
	n, err := zstore(c, dst, [][]byte{src}, func(srcs []*model.Collection) ([]zentry, error) {
		if err := srcs[0].Check(); err != nil {
			return nil, err
		}
		return q.read(srcs[0])
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(n)
}

// zstore replaces dst with what compute makes of the sources srcs (opened
// as sorted sets, with dst, in one BatchGet; a set among them shows as
// wrongType), in one transaction that also checks that every source is
// unchanged since it was read.
func zstore(c *Ctx, dst []byte, srcs [][]byte, compute func(srcs []*model.Collection) ([]zentry, error)) (int64, error) {
	var n int64
	err := model.RetryConflicts(c, func(int) error {
		all, err := model.OpenMany(c, append([][]byte{dst}, srcs...), model.TypeZSet)
		if err != nil {
			return err
		}
		res, err := compute(all[1:])
		if err != nil {
			return err
		}
		dest := all[0]
		n = int64(len(res))
		dest.Replace = true
		params := c.Srv.encoding().params
		big := n > params.zsetEntries
		for _, e := range res {
			model.ZPut(dest, e.m, e.s)
			big = big || int64(len(e.m)) > params.zsetValue
		}
		if big {
			dest.SetKeyAttr(model.AttrBigEncoding, model.NInt(1))
		}
		return model.Commit(c, []*model.Collection{dest}, model.DedupeColls(all[1:]))
	})
	return n, err
}

// ---- removing ranges --------------------------------------------------------------------

func cmdZremrangebyrank(c *Ctx) {
	start, ok1 := model.String2ll(c.Args[2])
	end, ok2 := model.String2ll(c.Args[3])
	if !ok1 || !ok2 {
		c.W.Error(MsgNotInt)
		return
	}
	zremRange(c, func(cl *model.Collection) ([]zentry, error) { return zbyRank(cl, start, end, false) })
}

func cmdZremrangebyscore(c *Ctx) {
	r, ok := parseScoreRange(c.Args[2], c.Args[3])
	if !ok {
		c.W.Error(MsgZRangeFloat)
		return
	}
	zremRange(c, func(cl *model.Collection) ([]zentry, error) { return zbyScore(cl, r, false, 0, -1) })
}

func cmdZremrangebylex(c *Ctx) {
	r, ok := parseLexRange(c.Args[2], c.Args[3])
	if !ok {
		c.W.Error(MsgZRangeLex)
		return
	}
	zremRange(c, func(cl *model.Collection) ([]zentry, error) { return zbyLex(cl, r, false, 0, -1) })
}

// zremRange removes the entries read finds and replies with their count.
func zremRange(c *Ctx, read func(cl *model.Collection) ([]zentry, error)) {
	var n int
	err := zsetWrite(c, c.Args[1], model.MemberStart{}, func(cl *model.Collection) error {
		es, err := read(cl)
		n = len(es)
		for _, e := range es {
			cl.Del(e.m)
		}
		return err
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(int64(n))
}

// ---- pops ------------------------------------------------------------------------------

// zpopFrom pops up to count of the lowest (highest when top) entries of
// the first of keys that exists (nil key when none does). quiet: a key of
// another type is passed over instead of failing (a blocked client's later
// tries, as Redis serves only sorted sets to them).
func zpopFrom(c *Ctx, keys [][]byte, top bool, count int64, quiet bool) (key []byte, es []zentry, err error) {
	for _, k := range keys {
		found := false
		err = zsetWrite(c, k, model.MemberStart{}, func(cl *model.Collection) error {
			key, es, found = nil, nil, false
			if err := cl.Check(); err != nil || !cl.Exists() {
				return err
			}
			found = true
			var err error
			es, err = zcollect(cl, nil, nil, top, 0, count)
			for _, e := range es {
				cl.Del(e.m)
			}
			return err
		})
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
		if _, err := model.OpenChecked(c, c.Args[1], model.TypeZSet); err != nil {
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
	if count == -1 || c.W.Proto() < 3 {
		c.W.Array(2 * len(es))
		for _, e := range es {
			c.W.Bulk(e.m)
			c.W.Double(e.s)
		}
		return
	}
	writeZentries(c, es, true)
}

// writeZmpop replies [key, [[member, score] ...]].
func writeZmpop(c *Ctx, key []byte, es []zentry) {
	c.W.Array(2)
	c.W.Bulk(key)
	writeZentriesNested(c, es)
}

// writeZentriesNested replies [[member, score] ...] in both protocols.
func writeZentriesNested(c *Ctx, es []zentry) {
	c.W.Array(len(es))
	for _, e := range es {
		c.W.Array(2)
		c.W.Bulk(e.m)
		c.W.Double(e.s)
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
		writeZmpop(c, key, es)
	}
}

// zblockPop waits until it pops from the first non-empty sorted set of
// keys (blockingPop).
func zblockPop(c *Ctx, keys [][]byte, ms int64, top bool, count int64) ([]byte, []zentry, bool) {
	return blockingPop(c, keys, ms, func(ac *Ctx, quiet bool) ([]byte, []zentry, error) {
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
		c.W.Bulk(es[0].m)
		c.W.Double(es[0].s)
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
		writeZmpop(c, key, es)
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
	es := make([]zentry, len(picked))
	for i, e := range picked {
		es[i] = zentry{e.Member, e.Score}
	}
	writeZentries(c, es, true)
}

func cmdZscan(c *Ctx) {
	collScanCmd(c, model.TypeZSet, func(e model.Entry) [][]byte {
		return [][]byte{e.Member, FormatDouble(nil, e.Score)}
	})
}

// ---- ZUNION, ZINTER, ZDIFF ---------------------------------------------------------------

type zsetOp uint8

const (
	zopUnion zsetOp = iota
	zopInter
	zopDiff
)

// zopQuery is a parsed ZUNION/ZINTER/ZDIFF(STORE)/ZINTERCARD.
type zopQuery struct {
	op         zsetOp
	keys       [][]byte
	weights    []float64
	agg        string
	withScores bool
	limit      int64
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
	q.agg = "sum"
	for j := 0; j < len(opts); {
		remaining := len(opts) - j
		opt := strings.ToLower(string(opts[j]))
		switch {
		case q.op != zopDiff && !card && remaining >= len(q.keys)+1 && opt == "weights":
			j++
			q.weights = make([]float64, len(q.keys))
			for i := range q.keys {
				w, ok := string2d(opts[j])
				if !ok {
					return MsgZWeightFloat
				}
				q.weights[i] = w
				j++
			}
		case q.op != zopDiff && !card && remaining >= 2 && opt == "aggregate":
			switch a := strings.ToLower(string(opts[j+1])); a {
			case "sum", "min", "max":
				q.agg = a
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
			q.limit = l
			j += 2
		default:
			return MsgSyntax
		}
	}
	return ""
}

// zsource is one input of a ZUNION-style command: a sorted set, or a set
// (every member scoring 1), as read.
type zsource struct {
	cl     *model.Collection
	scores map[string]float64
	order  []string
	weight float64
}

// zsourcesOf reads whole the sources cls, opened as sorted sets: one
// holding a set is read as a set; any other type is WRONGTYPE.
func zsourcesOf(c *Ctx, cls []*model.Collection) ([]zsource, error) {
	srcs := make([]zsource, len(cls))
	for i, cl := range cls {
		if cl.WrongType && cl.KS.Type == model.TypeSet {
			var err error
			if cl, err = model.FromItem(c, cl.Key, model.TypeSet, cl.KS.Raw); err != nil {
				return nil, err
			}
		}
		if err := cl.Check(); err != nil {
			return nil, err
		}
		src := zsource{cl: cl, scores: map[string]float64{}, weight: 1}
		err := model.ZEach(cl, func(m []byte, s float64) error {
			src.scores[string(m)] = s
			src.order = append(src.order, string(m))
			return nil
		})
		if err != nil {
			return nil, err
		}
		srcs[i] = src
	}
	return srcs, nil
}

// zaggregate folds v into acc as zunionInterAggregate.
func zaggregate(acc *float64, v float64, agg string) {
	switch agg {
	case "sum":
		*acc += v
		if math.IsNaN(*acc) {
			*acc = 0
		}
	case "min":
		*acc = min(*acc, v)
	case "max":
		*acc = max(*acc, v)
	}
}

// compute runs the operation over srcs and returns the result in score
// order (and its size, for ZINTERCARD, which stops at its limit).
func (q *zopQuery) compute(srcs []zsource) []zentry {
	for i := range srcs {
		if q.weights != nil {
			srcs[i].weight = q.weights[i]
		}
	}
	if q.op != zopDiff {
		// Redis orders the inputs by size (a stable sort): the order in
		// which scores are summed.
		sort.SliceStable(srcs, func(i, j int) bool { return len(srcs[i].order) < len(srcs[j].order) })
	}
	weighted := func(s float64, w float64) float64 {
		x := s * w
		if math.IsNaN(x) {
			return 0
		}
		return x
	}
	var out []zentry
	switch q.op {
	case zopInter:
		if len(srcs[0].order) == 0 {
			return nil
		}
		for _, m := range srcs[0].order {
			score := weighted(srcs[0].scores[m], srcs[0].weight)
			in := true
			for _, src := range srcs[1:] {
				v, ok := src.scores[m]
				if !ok {
					in = false
					break
				}
				zaggregate(&score, v*src.weight, q.agg)
			}
			if !in {
				continue
			}
			out = append(out, zentry{[]byte(m), score})
			if q.limit > 0 && int64(len(out)) >= q.limit {
				break
			}
		}
	case zopUnion:
		acc := map[string]float64{}
		var order []string
		for _, src := range srcs {
			for _, m := range src.order {
				score := weighted(src.scores[m], src.weight)
				if cur, ok := acc[m]; ok {
					zaggregate(&cur, score, q.agg)
					acc[m] = cur
					continue
				}
				acc[m] = score
				order = append(order, m)
			}
		}
		for _, m := range order {
			out = append(out, zentry{[]byte(m), acc[m]})
		}
	case zopDiff:
		for _, m := range srcs[0].order {
			in := false
			for _, src := range srcs[1:] {
				if _, ok := src.scores[m]; ok {
					in = true
					break
				}
			}
			if !in {
				out = append(out, zentry{[]byte(m), srcs[0].scores[m]})
			}
		}
	}
	sortZentries(out)
	return out
}

// sortZentries sorts by score, then member bytes, as a sorted set orders.
func sortZentries(es []zentry) {
	sort.Slice(es, func(i, j int) bool {
		if es[i].s != es[j].s {
			return es[i].s < es[j].s
		}
		return bytes.Compare(es[i].m, es[j].m) < 0
	})
}

// zopRead runs a read-only ZUNION/ZINTER/ZDIFF/ZINTERCARD as one
// consistent snapshot.
func zopRead(c *Ctx, op zsetOp, card bool) {
	keys, opts, ok := parseZop(c, c.Args[1:])
	if !ok {
		return
	}
	q := &zopQuery{op: op, keys: keys}
	var res []zentry
	parsed := false
	err := model.RetryConflicts(c, func(int) error {
		cls, err := model.OpenMany(c, keys, model.TypeZSet)
		if err != nil {
			return err
		}
		srcs, err := zsourcesOf(c, cls)
		if err != nil {
			return err
		}
		if !parsed {
			if msg := parseZopOptions(q, opts, false, card); msg != "" {
				return redisError(msg)
			}
			parsed = true
		}
		res = q.compute(srcs)
		return model.ValidateRead(c, model.DedupeColls(cls)...)
	})
	switch {
	case err != nil:
		c.Fail(err)
	case card:
		c.W.Int(int64(len(res)))
	default:
		writeZentries(c, res, q.withScores)
	}
}

func cmdZunion(c *Ctx)     { zopRead(c, zopUnion, false) }
func cmdZinter(c *Ctx)     { zopRead(c, zopInter, false) }
func cmdZdiff(c *Ctx)      { zopRead(c, zopDiff, false) }
func cmdZintercard(c *Ctx) { zopRead(c, zopInter, true) }

func cmdZunionstore(c *Ctx) { zopStore(c, zopUnion) }
func cmdZinterstore(c *Ctx) { zopStore(c, zopInter) }
func cmdZdiffstore(c *Ctx)  { zopStore(c, zopDiff) }

// zopStore runs ZUNIONSTORE/ZINTERSTORE/ZDIFFSTORE dst numkeys key...
func zopStore(c *Ctx, op zsetOp) {
	keys, opts, ok := parseZop(c, c.Args[2:])
	if !ok {
		return
	}
	q := &zopQuery{op: op, keys: keys}
	parsed := false
	n, err := zstore(c, c.Args[1], keys, func(cls []*model.Collection) ([]zentry, error) {
		srcs, err := zsourcesOf(c, cls)
		if err != nil {
			return nil, err
		}
		if !parsed {
			if msg := parseZopOptions(q, opts, true, false); msg != "" {
				return nil, redisError(msg)
			}
			parsed = true
		}
		return q.compute(srcs), nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(n)
}
