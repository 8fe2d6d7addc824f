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

// ZScoreAbove is the order key just above every member of score f: the
// key of the next double (ZOrderEnd past +inf).
func ZScoreAbove(f float64) []byte {
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
	sk := zorderSK(m, vals[0])
	var rank int64
	lo, hi := []byte(nil), sk
	if rev {
		lo, hi = append(sk, 0), nil
	}
	err = cl.EachOrdered(lo, hi, false, 0, func([]byte, dynastore.Value) error {
		rank++
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

// ZEach visits every entry of cl, a sorted set or a set (whose members
// all score 1), in member order.
func ZEach(cl *Collection, fn func(m []byte, score float64) error) error {
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
	vals, present, err := Lookup(c, key, TypeZSet, members)
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

// ZLookup is Lookup of members of a sorted set as scores.
func ZLookup(cl *Collection, members [][]byte) ([]float64, []bool, error) {
	vals, present, err := cl.Lookup(members)
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

// ZSetWrite runs change on key's sorted set and commits, re-running on
// conflict. The first try starts from the key item st holds (a failed
// single-request attempt's), else from the one the item cache holds, if
// any (outside a transaction): no read, as the commit is guarded by that
// item's ver and a stale one fails it; but an outcome that writes nothing,
// or an error (WRONGTYPE), is only trusted from a fresh read.
func ZSetWrite(c Scope, key []byte, st MemberStart, change func(cl *Collection) error) error {
	_, inTx := c.Data().(*Txn)
	return RetryConflicts(c, func(try int) error {
		seed, seeded, cached := st.Seed, st.Seeded && try == 0, false
		if try == 0 && !seeded && !inTx && KeyFits(key) {
			seed, cached = Items(c).Guardable(c.DB(), key, c.NowMS())
			seeded = cached
		}
		cl, err := OpenSeeded(c, key, TypeZSet, seed, seeded)
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
}

// ZAdd is ZADD, ZINCRBY and GEOADD: it applies the score-member pairs. A
// set that grows past bigEntries members, or takes a member longer than
// bigValue, is marked as Redis's skiplist from then on (AttrBigEncoding).
func ZAdd(c Scope, key []byte, f ZAddFlags, members [][]byte, scores []float64, bigEntries, bigValue int64) (ZAddResult, error) {
	var st MemberStart
	if !f.NX && !f.XX && !f.GT && !f.LT && !f.Incr {
		var n int64
		var done bool
		var err error
		st, n, done, err = zaddFast(c, key, members, scores, f.CH)
		if err != nil || done {
			return ZAddResult{Added: n, Fast: true}, err
		}
	}
	var res ZAddResult
	change := func(cl *Collection) error {
		res = ZAddResult{}
		if !cl.Exists() && f.XX {
			return nil
		}
		size := cl.Len()
		if !cl.Exists() {
			size = 0
		}
		// One read of every member a large set has not shown yet (zaddOne
		// then finds them known).
		if err := cl.Fetch(members); err != nil {
			return err
		}
		for j, m := range members {
			a, u, p, s, err := zaddOne(cl, f, m, scores[j])
			if err != nil {
				return err
			}
			if a {
				if cl.KeyAttr(AttrBigEncoding) == nil && (size+1 > bigEntries || int64(len(m)) > bigValue) {
					cl.SetKeyAttr(AttrBigEncoding, NInt(1))
				}
				size++
			}
			res.Added += boolInt(a)
			res.Updated += boolInt(u)
			res.Processed += boolInt(p)
			res.Score = s
		}
		return nil
	}
	err := ZSetWrite(c, key, st, change)
	return res, err
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
func zaddFast(c Scope, key []byte, members [][]byte, scores []float64, ch bool) (st MemberStart, n int64, done bool, err error) {
	lim := c.Process().inline(TypeZSet)
	if len(members) > lim.Entries || !AllSmall(members, lim.Bytes) || len(Dedupe(members)) != len(members) {
		return MemberStart{}, 0, false, nil
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
	return MemberFast(c, key, TypeZSet, nil, nil, &u, cond, func(old dynastore.Item) (n int64) {
		for i, m := range members {
			switch {
			case !BSContains(old.Get(AttrValue), m):
				n++
			case ch && zscoreOf(old.Get(FieldAttr(m))) != scores[i]:
				n++
			}
		}
		return n
	})
}

// ZPut stages member m with score in cl.
func ZPut(cl *Collection, m []byte, score float64) { cl.Put(m, zscoreValue(score)) }
