package commands

// Set commands, on the collection engine (model/collection.go). SADD and SREM of
// small sets are one UpdateItem (ADD/DELETE on the inline binary set, with
// ALL_OLD to compute the reply); everything else reads, computes, and
// commits conditioned on the key item's ver.

import (
	"bytes"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

func registerSets(t *Table) {
	t.Register([]Row{
		{"sadd", cmdSadd},
		{"srem", cmdSrem},
		{"sismember", cmdSismember},
		{"smismember", cmdSmismember},
		{"smembers", cmdSmembers},
		{"scard", cmdScard},
		{"spop", cmdSpop},
		{"srandmember", cmdSrandmember},
		{"smove", cmdSmove},
		{"sinter", cmdSinter},
		{"sintercard", cmdSintercard},
		{"sunion", cmdSunion},
		{"sdiff", cmdSdiff},
		{"sinterstore", cmdSinterstore},
		{"sunionstore", cmdSunionstore},
		{"sdiffstore", cmdSdiffstore},
		{"sscan", cmdSscan},
	})
}

// maxRandomCount bounds the reply of a negative-count SRANDMEMBER or
// HRANDFIELD (members repeat, so the reply does not depend on the set's
// size): Redis would build any size; redamo refuses to exhaust its memory.
const maxRandomCount = 10_000_000

// setMembersOf reads a set whole: the members of every entry.
func setMembersOf(cl *model.Collection) ([][]byte, error) {
	var out [][]byte
	err := cl.Each(func(m []byte, _ dynastore.Value) error {
		out = append(out, bytes.Clone(m))
		return nil
	})
	return out, err
}

func cmdSadd(c *Ctx) {
	n, err := model.AddMembers(c, c.Args[1], model.TypeSet, model.Dedupe(c.Args[2:]), nil)
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(n)
}

func cmdSrem(c *Ctx) { removeMembersCmd(c, model.TypeSet) }

func cmdSismember(c *Ctx) {
	_, present, err := model.Lookup(c, c.Args[1], model.TypeSet, c.Args[2:3])
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(boolInt(present[0]))
}

func cmdSmismember(c *Ctx) {
	_, present, err := model.Lookup(c, c.Args[1], model.TypeSet, c.Args[2:])
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
	var members [][]byte
	err := model.ReadAll(c, c.Args[1], model.TypeSet, func(cl *model.Collection) (err error) {
		members, err = setMembersOf(cl)
		return err
	})
	if err != nil {
		c.Fail(err)
		return
	}
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
	var popped [][]byte
	err := model.RetryConflicts(c, func(int) error {
		popped = nil
		cl, err := model.OpenChecked(c, c.Args[1], model.TypeSet)
		if err != nil {
			return err
		}
		if !cl.Exists() || count == 0 {
			return nil
		}
		if count >= cl.Len() {
			// Everything goes: the key is deleted, O(1) whatever its size.
			if popped, err = setMembersOf(cl); err != nil {
				return err
			}
			if err := model.ValidateRead(c, cl); err != nil {
				return err
			}
			for _, m := range popped {
				cl.Del(m)
			}
			if cl.Large() {
				err := model.CommitActions(c, []dynastore.TxAction{{Op: dynastore.TxDelete, Key: model.ItemKey(c.DB(), cl.Key), Cond: cl.KS.Guard()}})
				if err == nil {
					model.NoteGen(c, cl.Key, model.TypeSet, nil)
					model.Items(c).Put(c.DB(), cl.Key, nil)
				}
				return err
			}
			return cl.Commit()
		}
		ms, _, err := cl.RandomMembers(int(count))
		if err != nil {
			return err
		}
		popped = ms
		for _, m := range ms {
			cl.Del(m)
		}
		// RandomMembers' pages need no validation: the commit's ver guard
		// covers everything read.
		return cl.Commit()
	})
	if err != nil {
		c.Fail(err)
		return
	}
	if !withCount {
		writeFirst(c, popped)
		return
	}
	writeSet(c, popped)
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
	picked, _, err := randomPick(c, model.TypeSet, count)
	if err != nil {
		c.Fail(err)
		return
	}
	writePicked(c, picked, withCount)
}

// writePicked replies with random members: without a count the one member
// (nil for none), with one an array.
func writePicked(c *Ctx, picked [][]byte, withCount bool) {
	if !withCount {
		writeFirst(c, picked)
		return
	}
	c.W.Array(len(picked))
	for _, m := range picked {
		c.W.Bulk(m)
	}
}

// randomPick implements SRANDMEMBER, HRANDFIELD and ZRANDMEMBER counts
// over the key's collection of type typ (as one consistent read): a
// positive count picks distinct members (all of them when count >= size),
// a negative one -count members with repetition.
func randomPick(c *Ctx, typ string, count int64) (ms [][]byte, vs []dynastore.Value, err error) {
	err = model.Read(c, c.Args[1], typ, func(cl *model.Collection) (err error) {
		ms, vs, err = pickFrom(cl, count)
		return err
	})
	return ms, vs, err
}

func pickFrom(cl *model.Collection, count int64) ([][]byte, []dynastore.Value, error) {
	size := cl.Len()
	if !cl.Exists() || count == 0 || size == 0 {
		return nil, nil, nil
	}
	if count > 0 {
		if count >= size {
			return model.EntriesOf(cl)
		}
		return cl.RandomMembers(int(count))
	}
	want := -count
	// Draw from a pool of distinct members, with repetition.
	pool := min(want, size)
	ms, vs, err := cl.RandomMembers(int(pool))
	if err != nil || len(ms) == 0 {
		return nil, nil, err
	}
	outM := make([][]byte, want)
	outV := make([]dynastore.Value, want)
	for i := range outM {
		j := rand.IntN(len(ms))
		outM[i], outV[i] = ms[j], vs[j]
	}
	return outM, outV, nil
}

func cmdSmove(c *Ctx) {
	src, dst, m := c.Args[1], c.Args[2], c.Args[3]
	var moved bool
	err := model.RetryConflicts(c, func(int) error {
		moved = false
		cls, err := model.OpenMany(c, [][]byte{src, dst}, model.TypeSet)
		if err != nil {
			return err
		}
		s, d := cls[0], cls[1]
		if !s.Exists() {
			return nil
		}
		if err := s.Check(); err != nil {
			return err
		}
		if err := d.Check(); err != nil {
			return err
		}
		_, present, err := s.Lookup([][]byte{m})
		if err != nil {
			return err
		}
		if !present[0] {
			return nil
		}
		moved = true
		if bytes.Equal(src, dst) {
			return nil
		}
		s.Del(m)
		_, inDst, err := d.Lookup([][]byte{m})
		if err != nil {
			return err
		}
		if !inDst[0] {
			d.Put(m, nil)
		}
		return model.Commit(c, []*model.Collection{s, d}, nil)
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(boolInt(moved))
}

// openSets opens the distinct keys of keys (one BatchGet) and fails with
// WRONGTYPE if any holds another type, as Redis checks every key first.
func openSets(c *Ctx, keys [][]byte) ([]*model.Collection, error) {
	cls, err := model.OpenMany(c, model.Dedupe(keys), model.TypeSet)
	if err != nil {
		return nil, err
	}
	return setsByKey(cls, keys)
}

// setsByKey checks that each of cls (opened for the distinct keys) is a set
// or absent, and returns the one for each of keys, repeats included.
func setsByKey(cls []*model.Collection, keys [][]byte) ([]*model.Collection, error) {
	byKey := map[string]*model.Collection{}
	for _, cl := range cls {
		if err := cl.Check(); err != nil {
			return nil, err
		}
		byKey[string(cl.Key)] = cl
	}
	out := make([]*model.Collection, len(keys))
	for i, k := range keys {
		out[i] = byKey[string(k)]
	}
	return out, nil
}

type setOp uint8

const (
	opInter setOp = iota
	opUnion
	opDiff
)

// setAlgebra computes the intersection, union or difference of sets, in
// a deterministic order. limit > 0 stops an intersection at limit members.
func setAlgebra(op setOp, sets []*model.Collection, limit int) ([][]byte, error) {
	switch op {
	case opUnion:
		seen := map[string]bool{}
		var out [][]byte
		for _, cl := range dedupeColls(sets) {
			err := cl.Each(func(m []byte, _ dynastore.Value) error {
				if !seen[string(m)] {
					seen[string(m)] = true
					out = append(out, bytes.Clone(m))
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
		return out, nil
	case opInter:
		for _, cl := range sets {
			if !cl.Exists() {
				return nil, nil
			}
		}
		ordered := dedupeColls(sets)
		sort.SliceStable(ordered, func(i, j int) bool { return ordered[i].Len() < ordered[j].Len() })
		cand, err := setMembersOf(ordered[0])
		if err != nil {
			return nil, err
		}
		for _, cl := range ordered[1:] {
			cand, err = filterMembers(cl, cand, true)
			if err != nil {
				return nil, err
			}
		}
		if limit > 0 && len(cand) > limit {
			cand = cand[:limit]
		}
		return cand, nil
	default:
		cand, err := setMembersOf(sets[0])
		if err != nil {
			return nil, err
		}
		for _, cl := range sets[1:] {
			if cl == sets[0] {
				return nil, nil
			}
			if cand, err = filterMembers(cl, cand, false); err != nil {
				return nil, err
			}
		}
		return cand, nil
	}
}

// filterMembers keeps the candidates that are (keep) or are not (!keep)
// members of cl, looking them up in batches for a large set.
func filterMembers(cl *model.Collection, cand [][]byte, keep bool) ([][]byte, error) {
	if !cl.Exists() {
		if keep {
			return nil, nil
		}
		return cand, nil
	}
	out := cand[:0]
	const batch = 1000
	for i := 0; i < len(cand); i += batch {
		part := cand[i:min(i+batch, len(cand))]
		_, present, err := cl.Lookup(part)
		if err != nil {
			return nil, err
		}
		for j, m := range part {
			if present[j] == keep {
				out = append(out, m)
			}
		}
		if cl.Large() {
			cl.Known = nil // keep memory bounded by the batch
		}
	}
	return out, nil
}

func dedupeColls(cls []*model.Collection) []*model.Collection {
	seen := map[*model.Collection]bool{}
	var out []*model.Collection
	for _, cl := range cls {
		if !seen[cl] {
			seen[cl] = true
			out = append(out, cl)
		}
	}
	return out
}

// setRead runs a read-only set algebra command as one consistent snapshot.
func setRead(c *Ctx, op setOp, keys [][]byte, limit int) ([][]byte, error) {
	var res [][]byte
	err := model.RetryConflicts(c, func(int) error {
		sets, err := openSets(c, keys)
		if err != nil {
			return err
		}
		if res, err = setAlgebra(op, sets, limit); err != nil {
			return err
		}
		return model.ValidateRead(c, dedupeColls(sets)...)
	})
	return res, err
}

func setReadCmd(c *Ctx, op setOp) {
	res, err := setRead(c, op, c.Args[1:], 0)
	if err != nil {
		c.Fail(err)
		return
	}
	writeSet(c, res)
}

func cmdSinter(c *Ctx) { setReadCmd(c, opInter) }
func cmdSunion(c *Ctx) { setReadCmd(c, opUnion) }
func cmdSdiff(c *Ctx)  { setReadCmd(c, opDiff) }

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
	res, err := setRead(c, opInter, keys, int(min(limit, math.MaxInt32)))
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(int64(len(res)))
}

// setStore runs SINTERSTORE/SUNIONSTORE/SDIFFSTORE: the result replaces dst
// (whatever it held) in one transaction that also checks every source is
// unchanged since it was read.
func setStore(c *Ctx, op setOp) {
	dst, keys := c.Args[1], c.Args[2:]
	var n int
	err := model.RetryConflicts(c, func(int) error {
		all, err := model.OpenMany(c, append([][]byte{dst}, model.Dedupe(keys)...), model.TypeSet)
		if err != nil {
			return err
		}
		dest := all[0]
		sets, err := setsByKey(all[1:], keys)
		if err != nil {
			return err
		}
		res, err := setAlgebra(op, sets, 0)
		if err != nil {
			return err
		}
		n = len(res)
		dest.Replace = true
		for _, m := range res {
			dest.Put(m, nil)
		}
		return model.Commit(c, []*model.Collection{dest}, all[1:])
	})
	if err != nil {
		c.Fail(err)
		return
	}
	c.W.Int(int64(n))
}

func cmdSinterstore(c *Ctx) { setStore(c, opInter) }
func cmdSunionstore(c *Ctx) { setStore(c, opUnion) }
func cmdSdiffstore(c *Ctx)  { setStore(c, opDiff) }

func cmdSscan(c *Ctx) {
	collScanCmd(c, model.TypeSet, func(m []byte, _ dynastore.Value) [][]byte { return [][]byte{m} })
}

// ---- SSCAN / HSCAN ---------------------------------------------------------------

// collScanCmd runs SSCAN/HSCAN: key cursor [MATCH pattern] [COUNT count].
// emit turns an entry into the reply elements it contributes.
func collScanCmd(c *Ctx, typ string, emit func(m []byte, v dynastore.Value) [][]byte) {
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
	cl, err := model.OpenChecked(c, c.Args[1], typ)
	var ms [][]byte
	var vs []dynastore.Value
	var next uint64
	if err == nil {
		ms, vs, next, err = cl.ScanPage(cursor, int(min(count, 10_000)))
	}
	if err != nil {
		c.Fail(err)
		return
	}
	var out [][]byte
	for i, m := range ms {
		if pattern != nil && !globMatch(pattern, m) {
			continue
		}
		out = append(out, emit(m, vs[i])...)
	}
	c.W.Array(2)
	c.W.BulkString(strconv.FormatUint(next, 10))
	c.W.Array(len(out))
	for _, b := range out {
		c.W.Bulk(b)
	}
}
