package model

// The sorted set layout: a sorted set is a hash of members whose values
// are scores (8 bytes, the IEEE bits, so -0 and every double survive),
// inline like a hash (hashCodec); a large one keeps beside each member
// item an order item whose sort key is the score in an order-preserving
// encoding followed by the member (its MemberOrder), so score and rank
// ranges read pages of the order, not the set.

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"
	"sort"

	"github.com/redamo/redamo/dynastore"
)

// zorderPrefixSize is the length of an order item's sort key before its
// member: SKOrder and the score's 8 bytes.
const zorderPrefixSize = 9

// ---- scores ------------------------------------------------------------------

// zscoreValue is the stored form of a score: its IEEE bits, big-endian.
// Redis stores -0 as 0 (replies computed from scores, such as ZUNION's, may
// still say -0).
func zscoreValue(f float64) dynastore.Value {
	if f == 0 {
		f = 0
	}
	b := make(dynastore.B, 8)
	binary.BigEndian.PutUint64(b, math.Float64bits(f))
	return b
}

// zscoreOf decodes a stored score.
func zscoreOf(v dynastore.Value) float64 {
	b, _ := v.(dynastore.B)
	if len(b) != 8 {
		return 0
	}
	return math.Float64frombits(binary.BigEndian.Uint64(b))
}

// ZOrderKey is the order sort key of score f without a member: SKOrder and
// the score's bits turned so that they sort as the numbers do (-0 as 0).
func ZOrderKey(f float64) []byte {
	if f == 0 {
		f = 0
	}
	b := math.Float64bits(f)
	if b>>63 == 1 {
		b = ^b
	} else {
		b |= 1 << 63
	}
	k := make([]byte, zorderPrefixSize, zorderPrefixSize+16)
	k[0] = SKOrder
	binary.BigEndian.PutUint64(k[1:], b)
	return k
}

// ZOrderEnd sorts after every order key.
var ZOrderEnd = []byte{SKOrder + 1}

// zorderSK is the order item's sort key of member m with score v. A member
// too long for a sort key is cut and followed by its digest: such members
// sort by their first bytes, then by digest, among equal scores.
func zorderSK(m []byte, v dynastore.Value) []byte {
	k := ZOrderKey(zscoreOf(v))
	if len(m) <= MaxPlainSK {
		return append(k, m...)
	}
	h := sha256.Sum256(m)
	return append(append(k, m[:MaxPlainSK-sha256.Size]...), h[:]...)
}

// zscoreAbove is the order key just above every member of score f: the
// key of the next double (ZOrderEnd past +inf).
func zscoreAbove(f float64) []byte {
	if math.IsInf(f, 1) {
		return ZOrderEnd
	}
	return ZOrderKey(math.Nextafter(f, math.Inf(1)))
}

// ZRankOf returns the rank of m (ok false when absent).
func ZRankOf(cl *Collection, m []byte, rev bool) (int64, bool, error) {
	vals, present, err := cl.Lookup([][]byte{m})
	if err != nil || !present[0] {
		return 0, false, err
	}
	// The walk goes up to m (from m, when rev) in member order, over
	// neighbours its sort key does not order it among (MemberOrder.tieKey).
	sk := zorderSK(m, vals[0])
	var rank int64
	lo, hi := []byte(nil), append(bytes.Clone(sk), 0)
	if rev {
		lo, hi = sk, nil
	}
	seen := false
	err = cl.EachOrdered(lo, hi, false, 0, func(x []byte, _ dynastore.Value) error {
		switch {
		case bytes.Equal(x, m):
			seen = true
			if !rev {
				return ErrEnough
			}
		case seen == rev:
			rank++
		}
		return nil
	})
	return rank, true, err
}

// ZWalk visits the entries of cl whose order keys lie in [lo, hi) in score
// order (descending when rev), skipping offset of them, until fn returns
// ErrEnough; hint is how many the caller expects to need (0: unknown).
func ZWalk(cl *Collection, lo, hi []byte, rev bool, offset int64, hint int, fn func(m []byte, score float64) error) error {
	if hint > 0 && offset > 0 {
		hint += int(min(offset, MemberPageItems))
	}
	return cl.EachOrdered(lo, hi, rev, hint, func(m []byte, v dynastore.Value) error {
		if offset > 0 {
			offset--
			return nil
		}
		return fn(bytes.Clone(m), zscoreOf(v))
	})
}

// zeach visits every entry of cl, a sorted set or a set (whose members
// all score 1), in member order.
func zeach(cl *Collection, fn func(m []byte, score float64) error) error {
	return cl.Each(func(m []byte, v dynastore.Value) error {
		s := 1.0
		if cl.Type == TypeZSet {
			s = zscoreOf(v)
		}
		return fn(m, s)
	})
}

// ZScores is ZSCORE and ZMSCORE: the scores of members (present false for
// one that is absent).
func ZScores(c Scope, key []byte, members [][]byte) ([]float64, []bool, error) {
	return asScores(Lookup(c, key, TypeZSet, members))
}

// zlookup is Lookup of members of a sorted set as scores.
func zlookup(cl *Collection, members [][]byte) ([]float64, []bool, error) {
	return asScores(cl.Lookup(members))
}

// asScores turns a lookup's values into scores.
func asScores(vals []dynastore.Value, present []bool, err error) ([]float64, []bool, error) {
	if err != nil {
		return nil, nil, err
	}
	scores := make([]float64, len(vals))
	for i, v := range vals {
		if present[i] {
			scores[i] = zscoreOf(v)
		}
	}
	return scores, present, nil
}

// ZSetWrite is collWrite of key's sorted set.
func ZSetWrite(c Scope, key []byte, st MemberStart, change func(cl *Collection) error) error {
	return collWrite(c, key, TypeZSet, st, change)
}

// collWrite runs change on key's collection of type typ and commits,
// re-running on conflict. The first try starts from the key item st holds
// (a failed single-request attempt's), else from the one the item cache
// holds, if any (outside a transaction): no read, as the commit is guarded
// by that item's ver and a stale one fails it; but an outcome that writes
// nothing, or an error (WRONGTYPE), is only trusted from a fresh read.
func collWrite(c Scope, key []byte, typ string, st MemberStart, change func(cl *Collection) error) error {
	_, inTx := c.Data().(*Txn)
	return RetryConflicts(c, func(try int) error {
		seed, seeded, cached := st.Seed, st.Seeded && try == 0, false
		if try == 0 && !seeded && !inTx && KeyFits(key) {
			seed, cached = Items(c).Guardable(c.DB(), key, c.NowMS())
			seeded = cached
		}
		cl, err := OpenSeeded(c, key, typ, seed, seeded)
		if err == nil {
			err = change(cl)
		}
		if cached && (err != nil || !cl.Changed()) {
			return ErrConflict // an error or a no-op, from what the cache says
		}
		if err != nil {
			return err
		}
		return cl.Commit()
	})
}

// ErrZNaN: ZINCRBY (or ZADD INCR) made a score NaN.
var ErrZNaN = errors.New("model: resulting score is not a number (NaN)")

// ZAddFlags are ZADD's options.
type ZAddFlags struct {
	NX, XX, GT, LT, Incr, CH bool
}

// ZAddResult is what a ZADD did: members added, scores updated, pairs that
// were not no-ops, and the last member's score after it (ZINCRBY's reply).
// Fast: it was the single-request fast path, which counts in Added what
// the reply counts (members added, and changed under CH) and may have
// added members.
type ZAddResult struct {
	Added, Updated, Processed int64
	Score                     float64
	Fast                      bool
	// Changed: a member was added or had its score changed (the write a
	// keyspace event reports).
	Changed bool
}

// ZAdd is ZADD, ZINCRBY and GEOADD: it applies the score-member pairs. A
// set that grows past bigEntries members, or takes a member longer than
// bigValue, is marked as Redis's skiplist from then on (AttrBigEncoding).
// Concurrent ones on a key share requests (coalesce_zset.go).
func ZAdd(c Scope, key []byte, f ZAddFlags, members [][]byte, scores []float64, bigEntries, bigValue int64) (ZAddResult, error) {
	lim := zsetLimits{entries: bigEntries, value: bigValue}
	r, err := doZSet(c, key, zsetOp{f: f, members: members, scores: scores, lim: lim}, func() (zsetRes, error) {
		res, err := zaddAlone(c, key, f, members, scores, lim)
		return zsetRes{add: res}, err
	})
	return r.add, err
}

// zsetLimits are the entries and member length past which Redis holds a
// sorted set as a skiplist (zset-max-listpack-entries and -value).
type zsetLimits struct{ entries, value int64 }

// zaddAlone is one ZAdd on its own.
func zaddAlone(c Scope, key []byte, f ZAddFlags, members [][]byte, scores []float64, lim zsetLimits) (ZAddResult, error) {
	var st MemberStart
	if !f.NX && !f.XX && !f.GT && !f.LT && !f.Incr {
		var n int64
		var done bool
		var err error
		var changed bool
		st, n, changed, done, err = zaddFast(c, key, members, scores, f.CH)
		if err != nil || done {
			return ZAddResult{Added: n, Fast: true, Changed: changed}, err
		}
	}
	var res ZAddResult
	err := ZSetWrite(c, key, st, func(cl *Collection) error {
		// One read of every member a large set has not shown yet (zaddOne
		// then finds them known).
		if err := cl.Fetch(members); err != nil {
			return err
		}
		r := startRun(cl)
		var err error
		res, err = zaddPairs(r, f, members, scores, lim)
		r.finish()
		return err
	})
	return res, err
}

// zaddPairs applies ZADD's score-member pairs to r in turn, its members
// fetched.
func zaddPairs(r *collRun, f ZAddFlags, members [][]byte, scores []float64, lim zsetLimits) (ZAddResult, error) {
	var res ZAddResult
	for j, m := range members {
		a, u, p, s, err := zaddOne(r.Collection, f, m, scores[j])
		if err != nil {
			return ZAddResult{}, err
		}
		if a {
			r.n++
			r.big = r.big || r.n > lim.entries || int64(len(m)) > lim.value
		}
		res.Added += boolInt(a)
		res.Updated += boolInt(u)
		res.Processed += boolInt(p)
		res.Score = s
	}
	res.Changed = res.Added+res.Updated > 0
	return res, nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// zaddOne applies one score-member pair as Redis's zsetAdd: added or
// updated report what changed, processed whether the pair was not a no-op,
// and score is the member's score after it.
func zaddOne(cl *Collection, f ZAddFlags, m []byte, score float64) (added, updated, processed bool, _ float64, err error) {
	cur, present, err := cl.Lookup([][]byte{m})
	if err != nil {
		return false, false, false, 0, err
	}
	if present[0] {
		if f.NX {
			return false, false, false, 0, nil
		}
		old := zscoreOf(cur[0])
		if f.Incr {
			score += old
			if math.IsNaN(score) {
				return false, false, false, 0, ErrZNaN
			}
		}
		if (f.LT && score >= old) || (f.GT && score <= old) {
			return false, false, false, 0, nil
		}
		if score != old {
			cl.Put(m, zscoreValue(score))
			updated = true
		}
		return false, updated, true, score, nil
	}
	if f.XX {
		return false, false, false, 0, nil
	}
	cl.Put(m, zscoreValue(score))
	return true, false, true, score, nil
}

// zaddFast is a plain ZADD (or ZADD CH) of distinct members that fit an
// inline set: one UpdateItem that sets their scores and adds their names.
// done is false when the set is not inline with room (or not a sorted set);
// the general path then starts from st.
func zaddFast(c Scope, key []byte, members [][]byte, scores []float64, ch bool) (st MemberStart, n int64, changed, done bool, err error) {
	lim := c.Process().inline(TypeZSet)
	if len(members) > lim.Entries || !AllSmall(members, lim.Bytes) || len(Dedupe(members)) != len(members) {
		return MemberStart{}, 0, false, false, nil
	}
	u := dynastore.Update{
		Set: []dynastore.SetAction{
			{Attr: AttrType, Val: dynastore.S(TypeZSet)},
			{Attr: AttrVer, Val: NewVer()},
		},
		Add: []dynastore.AttrValue{{Attr: AttrValue, Val: BSOf(members)}},
	}
	for i, m := range members {
		u.Set = append(u.Set, dynastore.SetAction{Attr: FieldAttr(m), Val: zscoreValue(scores[i])})
	}
	cond := InlineFastCond(c.NowMS(), TypeZSet, lim.Entries, len(members), false)
	st, n, done, err = MemberFast(c, key, TypeZSet, nil, nil, &u, cond, func(old dynastore.Item) (n int64) {
		for i, m := range members {
			switch {
			case !BSContains(old.Get(AttrValue), m):
				n++
				changed = true
			case zscoreOf(old.Get(FieldAttr(m))) != scores[i]:
				changed = true
				if ch {
					n++
				}
			}
		}
		return n
	})
	return st, n, changed, done, err
}

// zput stages member m with score in cl.
func zput(cl *Collection, m []byte, score float64) { cl.Put(m, zscoreValue(score)) }

// ---- ranges ----------------------------------------------------------------------

// ScoreRange is a ZRANGEBYSCORE range.
type ScoreRange struct {
	Min, Max     float64
	MinEx, MaxEx bool
}

// Empty reports whether the range holds no score.
func (r ScoreRange) Empty() bool {
	return r.Min > r.Max || (r.Min == r.Max && (r.MinEx || r.MaxEx))
}

// keys returns the order keys [lo, hi) that hold the range's members.
func (r ScoreRange) keys() (lo, hi []byte) {
	lo = ZOrderKey(r.Min)
	if r.MinEx {
		lo = zscoreAbove(r.Min)
	}
	hi = zscoreAbove(r.Max)
	if r.MaxEx {
		hi = ZOrderKey(r.Max)
	}
	return lo, hi
}

// LexBound is one end of a ZRANGEBYLEX range: "-" (inf -1), "+" (inf 1),
// or a member, exclusive or not.
type LexBound struct {
	V   []byte
	Inf int
	Ex  bool
}

// cmpLex compares a member with a bound (sdscmplex).
func cmpLex(m []byte, b LexBound) int {
	if b.Inf != 0 {
		return -b.Inf
	}
	return bytes.Compare(m, b.V)
}

// LexRange is a ZRANGEBYLEX range.
type LexRange struct{ Min, Max LexBound }

func (r LexRange) gteMin(m []byte) bool {
	if r.Min.Ex {
		return cmpLex(m, r.Min) > 0
	}
	return cmpLex(m, r.Min) >= 0
}

func (r LexRange) lteMax(m []byte) bool {
	if r.Max.Ex {
		return cmpLex(m, r.Max) < 0
	}
	return cmpLex(m, r.Max) <= 0
}

func (r LexRange) empty() bool {
	var cmp int
	switch {
	case r.Min.Inf != 0 && r.Min.Inf == r.Max.Inf:
		cmp = 0
	case r.Min.Inf == 1 || r.Max.Inf == -1:
		cmp = 1
	case r.Min.Inf == -1 || r.Max.Inf == 1:
		cmp = -1
	default:
		cmp = bytes.Compare(r.Min.V, r.Max.V)
	}
	return cmp > 0 || (cmp == 0 && (r.Min.Ex || r.Max.Ex))
}

// ---- reading ---------------------------------------------------------------------

// zwalk is ZWalk of entries.
func zwalk(cl *Collection, lo, hi []byte, rev bool, offset int64, hint int, fn func(e Entry) error) error {
	return ZWalk(cl, lo, hi, rev, offset, hint, func(m []byte, s float64) error { return fn(Entry{Member: m, Score: s}) })
}

// zlimitWalk is zwalk of at most limit entries (negative: all).
func zlimitWalk(cl *Collection, lo, hi []byte, rev bool, offset, limit int64, fn func(e Entry) error) error {
	if limit == 0 {
		return nil
	}
	hint := 0
	if limit > 0 && limit < MemberPageItems {
		hint = int(limit)
	}
	return zwalk(cl, lo, hi, rev, offset, hint, func(e Entry) error {
		if err := fn(e); err != nil {
			return err
		}
		if limit--; limit == 0 {
			return ErrEnough
		}
		return nil
	})
}

// zgather collects the entries a walk visits.
func zgather(walk func(fn func(e Entry) error) error) ([]Entry, error) {
	var out []Entry
	err := walk(func(e Entry) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// zcollect gathers up to limit entries (negative: all) of a zwalk.
func zcollect(cl *Collection, lo, hi []byte, rev bool, offset, limit int64) ([]Entry, error) {
	return zgather(func(fn func(e Entry) error) error { return zlimitWalk(cl, lo, hi, rev, offset, limit, fn) })
}

// ZByRank returns the entries of ranks [start, end] (Redis's indexes,
// negative from the end), in descending order when rev. A large set is
// read from the end the range is nearer to.
func ZByRank(cl *Collection, start, end int64, rev bool) ([]Entry, error) {
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
	var out []Entry
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
func zscoreWalk(cl *Collection, r ScoreRange, rev bool, offset, limit int64, fn func(e Entry) error) error {
	if r.Empty() || offset < 0 || (offset > 0 && offset >= cl.Len()) {
		return nil
	}
	lo, hi := r.keys()
	return zlimitWalk(cl, lo, hi, rev, offset, limit, fn)
}

// zbyScore is zscoreWalk's entries.
func zbyScore(cl *Collection, r ScoreRange, rev bool, offset, limit int64) ([]Entry, error) {
	return zgather(func(fn func(e Entry) error) error { return zscoreWalk(cl, r, rev, offset, limit, fn) })
}

// zlexWalk visits the entries of a ZRANGEBYLEX read. The order is by
// score first: as in Redis, a lexicographic range means something only
// while every score is equal. The walk starts at the bound under the first
// (last, when rev) score, as a walk from the start that skips what the
// bound excludes would.
func zlexWalk(cl *Collection, r LexRange, rev bool, offset, limit int64, fn func(e Entry) error) error {
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
		case !rev && r.Min.Inf == 0:
			lo = append(ZOrderKey(edge[0].Score), r.Min.V...)
		case rev && r.Max.Inf == 0:
			hi = append(append(ZOrderKey(edge[0].Score), r.Max.V...), 0)
		}
	}
	started := false
	return zwalk(cl, lo, hi, rev, 0, 0, func(e Entry) error {
		if !started {
			if rev && !r.lteMax(e.Member) || !rev && !r.gteMin(e.Member) {
				return nil
			}
			started = true
		}
		if rev && !r.gteMin(e.Member) || !rev && !r.lteMax(e.Member) {
			return ErrEnough
		}
		if offset > 0 {
			offset--
			return nil
		}
		if limit == 0 {
			return ErrEnough
		}
		limit--
		return fn(e)
	})
}

// zbyLex is zlexWalk's entries.
func zbyLex(cl *Collection, r LexRange, rev bool, offset, limit int64) ([]Entry, error) {
	return zgather(func(fn func(e Entry) error) error { return zlexWalk(cl, r, rev, offset, limit, fn) })
}

// ZStore replaces dst with what compute makes of the sources srcs (opened
// as sorted sets, with dst, in one BatchGet; a set among them shows as
// wrongType), in one transaction that also checks that every source is
// unchanged since it was read. A result of more than bigEntries members,
// or with a member longer than bigValue, is marked as Redis's skiplist.
func ZStore(c Scope, dst []byte, srcs [][]byte, bigEntries, bigValue int64, compute func(srcs []*Collection) ([]Entry, error)) (int64, error) {
	var n int64
	err := RetryConflicts(c, func(int) error {
		all, err := OpenMany(c, append([][]byte{dst}, srcs...), TypeZSet)
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
		big := n > bigEntries
		for _, e := range res {
			zput(dest, e.Member, e.Score)
			big = big || int64(len(e.Member)) > bigValue
		}
		if big {
			dest.SetKeyAttr(AttrBigEncoding, NInt(1))
		}
		return Commit(c, []*Collection{dest}, dedupeColls(all[1:]))
	})
	return n, err
}

// zsource is one input of a ZUNION-style command: a sorted set, or a set
// (every member scoring 1), as read.
type zsource struct {
	cl     *Collection
	scores map[string]float64
	order  []string
	weight float64
}

// zsourcesOf reads whole the sources cls, opened as sorted sets: one
// holding a set is read as a set; any other type is WRONGTYPE.
func zsourcesOf(c Scope, cls []*Collection) ([]zsource, error) {
	srcs := make([]zsource, len(cls))
	for i, cl := range cls {
		if cl.WrongType && cl.KS.Type == TypeSet {
			var err error
			if cl, err = FromItem(c, cl.Key, TypeSet, cl.KS.Raw); err != nil {
				return nil, err
			}
		}
		if err := cl.Check(); err != nil {
			return nil, err
		}
		src := zsource{cl: cl, scores: map[string]float64{}, weight: 1}
		err := zeach(cl, func(m []byte, s float64) error {
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
func (q *ZOpQuery) compute(srcs []zsource) []Entry {
	for i := range srcs {
		if q.Weights != nil {
			srcs[i].weight = q.Weights[i]
		}
	}
	if q.Op != ZDiff {
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
	var out []Entry
	switch q.Op {
	case ZInter:
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
				zaggregate(&score, v*src.weight, q.Agg)
			}
			if !in {
				continue
			}
			out = append(out, Entry{Member: []byte(m), Score: score})
			if q.Limit > 0 && int64(len(out)) >= q.Limit {
				break
			}
		}
	case ZUnion:
		acc := map[string]float64{}
		var order []string
		for _, src := range srcs {
			for _, m := range src.order {
				score := weighted(src.scores[m], src.weight)
				if cur, ok := acc[m]; ok {
					zaggregate(&cur, score, q.Agg)
					acc[m] = cur
					continue
				}
				acc[m] = score
				order = append(order, m)
			}
		}
		for _, m := range order {
			out = append(out, Entry{Member: []byte(m), Score: acc[m]})
		}
	case ZDiff:
		for _, m := range srcs[0].order {
			in := false
			for _, src := range srcs[1:] {
				if _, ok := src.scores[m]; ok {
					in = true
					break
				}
			}
			if !in {
				out = append(out, Entry{Member: []byte(m), Score: srcs[0].scores[m]})
			}
		}
	}
	sortZentries(out)
	return out
}

// sortZentries sorts by score, then member bytes, as a sorted set orders.
func sortZentries(es []Entry) {
	sort.Slice(es, func(i, j int) bool {
		if es[i].Score != es[j].Score {
			return es[i].Score < es[j].Score
		}
		return bytes.Compare(es[i].Member, es[j].Member) < 0
	})
}

// ---- the operations ---------------------------------------------------------------

// ZRangeBy is how a ZRANGE-family query reads: by rank, score or member.
type ZRangeBy uint8

// The ZRANGE readings (ZRangeAuto: not chosen yet, as ZRANGE parses).
const (
	ZRangeAuto ZRangeBy = iota
	ZRangeRank
	ZRangeScore
	ZRangeLex
)

// ZRangeQuery is a ZRANGE-family read: ranks Start..End, or Score, or Lex,
// reversed when Rev, with LIMIT Offset, Limit (negative: all) for the
// score and lex readings.
type ZRangeQuery struct {
	By            ZRangeBy
	Rev           bool
	Offset, Limit int64
	Start, End    int64
	Score         ScoreRange
	Lex           LexRange
}

// read runs the query on cl.
func (q ZRangeQuery) read(cl *Collection) ([]Entry, error) {
	switch q.By {
	case ZRangeScore:
		return zbyScore(cl, q.Score, q.Rev, q.Offset, q.Limit)
	case ZRangeLex:
		return zbyLex(cl, q.Lex, q.Rev, q.Offset, q.Limit)
	}
	return ZByRank(cl, q.Start, q.End, q.Rev)
}

// ZRange is ZRANGE and its family (ZREVRANGE, ZRANGEBYSCORE, ...).
func ZRange(c Scope, key []byte, q ZRangeQuery) (es []Entry, err error) {
	err = Read(c, key, TypeZSet, func(cl *Collection) (err error) {
		es, err = q.read(cl)
		return err
	})
	return es, err
}

// ZRangeStore is ZRANGESTORE: the range of src replaces dst (an empty one
// deletes it); it returns the range's size.
func ZRangeStore(c Scope, dst, src []byte, q ZRangeQuery, bigEntries, bigValue int64) (int64, error) {
	return ZStore(c, dst, [][]byte{src}, bigEntries, bigValue, func(srcs []*Collection) ([]Entry, error) {
		if err := srcs[0].Check(); err != nil {
			return nil, err
		}
		return q.read(srcs[0])
	})
}

// zcount is how many entries walk visits, counted as they come rather
// than gathered: a count of a large set holds no entries.
func zcount(c Scope, key []byte, walk func(cl *Collection, fn func(Entry) error) error) (int64, error) {
	var n int64
	err := Read(c, key, TypeZSet, func(cl *Collection) error {
		n = 0
		return walk(cl, func(Entry) error {
			n++
			return nil
		})
	})
	return n, err
}

// ZCount is ZCOUNT.
func ZCount(c Scope, key []byte, r ScoreRange) (int64, error) {
	return zcount(c, key, func(cl *Collection, fn func(Entry) error) error { return zscoreWalk(cl, r, false, 0, -1, fn) })
}

// ZLexCount is ZLEXCOUNT.
func ZLexCount(c Scope, key []byte, r LexRange) (int64, error) {
	return zcount(c, key, func(cl *Collection, fn func(Entry) error) error { return zlexWalk(cl, r, false, 0, -1, fn) })
}

// ZRank is ZRANK (ZREVRANK when rev): m's rank, found false when absent.
func ZRank(c Scope, key, m []byte, rev bool) (rank int64, found bool, err error) {
	err = Read(c, key, TypeZSet, func(cl *Collection) (err error) {
		rank, found, err = ZRankOf(cl, m, rev)
		return err
	})
	return rank, found, err
}

// ZRemRange is ZREMRANGEBYRANK, ZREMRANGEBYSCORE and ZREMRANGEBYLEX: it
// removes the entries q reads and returns how many.
func ZRemRange(c Scope, key []byte, q ZRangeQuery) (int64, error) {
	var n int
	err := ZSetWrite(c, key, MemberStart{}, func(cl *Collection) error {
		es, err := q.read(cl)
		n = len(es)
		for _, e := range es {
			cl.Del(e.Member)
		}
		return err
	})
	return int64(n), err
}

// ZPop pops up to count of the lowest (highest when top) entries of key;
// found is false when the key does not exist.
func ZPop(c Scope, key []byte, top bool, count int64) (es []Entry, found bool, err error) {
	err = ZSetWrite(c, key, MemberStart{}, func(cl *Collection) error {
		es, found = nil, false
		if err := cl.Check(); err != nil || !cl.Exists() {
			return err
		}
		found = true
		var err error
		es, err = zcollect(cl, nil, nil, top, 0, count)
		for _, e := range es {
			cl.Del(e.Member)
		}
		return err
	})
	return es, found, err
}

// ZSetOp is a ZUNION-family operation.
type ZSetOp uint8

// The ZUNION-family operations.
const (
	ZUnion ZSetOp = iota
	ZInter
	ZDiff
)

// ZOpQuery is a ZUNION/ZINTER/ZDIFF(STORE)/ZINTERCARD: its keys, weights
// (nil: all 1), aggregate ("sum", "min", "max") and ZINTERCARD's limit.
type ZOpQuery struct {
	Op      ZSetOp
	Keys    [][]byte
	Weights []float64
	Agg     string
	Limit   int64
}

// ZCombine is a read-only ZUNION/ZINTER/ZDIFF/ZINTERCARD as one consistent
// snapshot. options is called once the sources are read (Redis looks the
// keys up, WRONGTYPE first, before it parses the options) and may fill q.
func ZCombine(c Scope, q *ZOpQuery, options func() error) ([]Entry, error) {
	var res []Entry
	parsed := false
	err := RetryConflicts(c, func(int) error {
		cls, err := OpenMany(c, q.Keys, TypeZSet)
		if err != nil {
			return err
		}
		srcs, err := zsourcesOf(c, cls)
		if err != nil {
			return err
		}
		if !parsed {
			if err := options(); err != nil {
				return err
			}
			parsed = true
		}
		res = q.compute(srcs)
		return ValidateRead(c, dedupeColls(cls)...)
	})
	return res, err
}

// ZCombineStore is ZUNIONSTORE/ZINTERSTORE/ZDIFFSTORE into dst (ZStore),
// options as ZCombine's.
func ZCombineStore(c Scope, dst []byte, q *ZOpQuery, options func() error, bigEntries, bigValue int64) (int64, error) {
	parsed := false
	return ZStore(c, dst, q.Keys, bigEntries, bigValue, func(cls []*Collection) ([]Entry, error) {
		srcs, err := zsourcesOf(c, cls)
		if err != nil {
			return nil, err
		}
		if !parsed {
			if err := options(); err != nil {
				return nil, err
			}
			parsed = true
		}
		return q.compute(srcs), nil
	})
}

// ZView is a sorted set as one read sees it, for a recipe over its order
// (a GEO search): whether it exists, its members' scores, ranges of scores.
type ZView struct{ cl *Collection }

// Exists reports whether the sorted set exists.
func (v ZView) Exists() bool { return v.cl.Exists() }

// Score is member m's score (ok false when absent).
func (v ZView) Score(m []byte) (score float64, ok bool, err error) {
	scores, present, err := zlookup(v.cl, [][]byte{m})
	if err != nil || !present[0] {
		return 0, false, err
	}
	return scores[0], true, nil
}

// Range calls fn for each member whose score s is min <= s < max, in the
// set's order, until fn returns an error (ErrEnough: stop).
func (v ZView) Range(min, max float64, fn func(m []byte, score float64) error) error {
	return ZWalk(v.cl, ZOrderKey(min), ZOrderKey(max), false, 0, 0, fn)
}

// ZRead runs read on key's sorted set as one consistent state (Read).
func ZRead(c Scope, key []byte, read func(v ZView) error) error {
	return Read(c, key, TypeZSet, func(cl *Collection) error { return read(ZView{cl}) })
}

// ZStoreFrom is ZStore of the one source src, seen as a ZView
// (GEOSEARCHSTORE): WRONGTYPE unless it is a sorted set or absent.
func ZStoreFrom(c Scope, dst, src []byte, bigEntries, bigValue int64, compute func(v ZView) ([]Entry, error)) (int64, error) {
	return ZStore(c, dst, [][]byte{src}, bigEntries, bigValue, func(srcs []*Collection) ([]Entry, error) {
		if err := srcs[0].Check(); err != nil {
			return nil, err
		}
		return compute(ZView{srcs[0]})
	})
}
