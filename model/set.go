package model

// The set operations (commands/sets.go holds the set commands). A set is
// the collection engine's plainest type: members without values, inline
// in the key item's v (a binary set) while small (setCodec).

import (
	"bytes"
	"math/rand/v2"
	"sort"

	"github.com/redamo/redamo/dynastore"
)

// SetMembersOf reads a set whole: the members of every entry.
func SetMembersOf(cl *Collection) ([][]byte, error) {
	var out [][]byte
	err := cl.Each(func(m []byte, _ dynastore.Value) error {
		out = append(out, bytes.Clone(m))
		return nil
	})
	return out, err
}

// SetMembers is SMEMBERS.
func SetMembers(c Scope, key []byte) ([][]byte, error) {
	var members [][]byte
	err := ReadAll(c, key, TypeSet, func(cl *Collection) (err error) {
		members, err = SetMembersOf(cl)
		return err
	})
	return members, err
}

// SetIsMember is SISMEMBER and SMISMEMBER: whether each of members is in
// key's set.
func SetIsMember(c Scope, key []byte, members [][]byte) ([]bool, error) {
	_, present, err := Lookup(c, key, TypeSet, members)
	return present, err
}

// SetPop is SPOP of count members (the key goes whole, O(1) whatever its
// size, when count covers it).
func SetPop(c Scope, key []byte, count int64) ([][]byte, error) {
	var popped [][]byte
	err := RetryConflicts(c, func(int) error {
		popped = nil
		cl, err := OpenChecked(c, key, TypeSet)
		if err != nil {
			return err
		}
		if !cl.Exists() || count == 0 {
			return nil
		}
		if count >= cl.Len() {
			// Everything goes: the key is deleted, O(1) whatever its size.
			if popped, err = SetMembersOf(cl); err != nil {
				return err
			}
			if err := ValidateRead(c, cl); err != nil {
				return err
			}
			for _, m := range popped {
				cl.Del(m)
			}
			if cl.Large() {
				err := CommitActions(c, []dynastore.TxAction{{Op: dynastore.TxDelete, Key: ItemKey(c.DB(), cl.Key), Cond: cl.KS.Guard()}})
				if err == nil {
					NoteGen(c, cl.Key, TypeSet, nil)
					Items(c).Put(c.DB(), cl.Key, nil)
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
	return popped, err
}

// SetMove is SMOVE: whether m was in src (and is now in dst), and whether
// dst gained it.
func SetMove(c Scope, src, dst, m []byte) (moved, added bool, err error) {
	err = RetryConflicts(c, func(int) error {
		moved, added = false, false
		cls, err := OpenMany(c, [][]byte{src, dst}, TypeSet)
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
			added = true
		}
		return Commit(c, []*Collection{s, d}, nil)
	})
	return moved, added, err
}

// openSets opens the distinct keys of keys (one BatchGet) and fails with
// WRONGTYPE if any holds another type, as Redis checks every key first.
func openSets(c Scope, keys [][]byte) ([]*Collection, error) {
	cls, err := OpenMany(c, Dedupe(keys), TypeSet)
	if err != nil {
		return nil, err
	}
	return setsByKey(cls, keys)
}

// setsByKey checks that each of cls (opened for the distinct keys) is a set
// or absent, and returns the one for each of keys, repeats included.
func setsByKey(cls []*Collection, keys [][]byte) ([]*Collection, error) {
	byKey := map[string]*Collection{}
	for _, cl := range cls {
		if err := cl.Check(); err != nil {
			return nil, err
		}
		byKey[string(cl.Key)] = cl
	}
	out := make([]*Collection, len(keys))
	for i, k := range keys {
		out[i] = byKey[string(k)]
	}
	return out, nil
}

// SetOp is a set algebra operation.
type SetOp uint8

const (
	SetInter SetOp = iota
	SetUnion
	SetDiff
)

// setAlgebra computes the intersection, union or difference of sets, in
// a deterministic order. limit > 0 stops an intersection at limit members.
func setAlgebra(op SetOp, sets []*Collection, limit int) ([][]byte, error) {
	switch op {
	case SetUnion:
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
	case SetInter:
		for _, cl := range sets {
			if !cl.Exists() {
				return nil, nil
			}
		}
		ordered := dedupeColls(sets)
		sort.SliceStable(ordered, func(i, j int) bool { return ordered[i].Len() < ordered[j].Len() })
		cand, err := SetMembersOf(ordered[0])
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
		cand, err := SetMembersOf(sets[0])
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
func filterMembers(cl *Collection, cand [][]byte, keep bool) ([][]byte, error) {
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

// dedupeColls is cls without repeats, in order.
func dedupeColls(cls []*Collection) []*Collection {
	seen := map[*Collection]bool{}
	var out []*Collection
	for _, cl := range cls {
		if !seen[cl] {
			seen[cl] = true
			out = append(out, cl)
		}
	}
	return out
}

// SetRead is SINTER, SUNION, SDIFF and SINTERCARD (limit > 0 stops an
// intersection at limit members): a read-only set algebra as one
// consistent snapshot.
func SetRead(c Scope, op SetOp, keys [][]byte, limit int) ([][]byte, error) {
	var res [][]byte
	err := RetryConflicts(c, func(int) error {
		sets, err := openSets(c, keys)
		if err != nil {
			return err
		}
		if res, err = setAlgebra(op, sets, limit); err != nil {
			return err
		}
		return ValidateRead(c, dedupeColls(sets)...)
	})
	return res, err
}

// SetStore is SINTERSTORE, SUNIONSTORE and SDIFFSTORE: the result replaces
// dst (whatever it held) in one transaction that also checks every source
// is unchanged since it was read. It returns the result's size, and
// whether a source key did not exist.
func SetStore(c Scope, op SetOp, dst []byte, keys [][]byte) (size int64, missing bool, err error) {
	var n int
	err = RetryConflicts(c, func(int) error {
		all, err := OpenMany(c, append([][]byte{dst}, Dedupe(keys)...), TypeSet)
		if err != nil {
			return err
		}
		dest := all[0]
		sets, err := setsByKey(all[1:], keys)
		if err != nil {
			return err
		}
		missing = false
		for _, s := range sets {
			missing = missing || s == nil || !s.Exists()
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
		return Commit(c, []*Collection{dest}, all[1:])
	})
	return int64(n), missing, err
}

// ---- entries as commands see them ---------------------------------------------------

// Entry is a collection entry as a reply shows it: its member, a hash
// field's value, a sorted set member's score.
type Entry struct {
	Member []byte
	Value  []byte
	Score  float64
}

// entryOf is the Entry of member m with stored value v in a collection of
// type typ.
func entryOf(typ string, m []byte, v dynastore.Value) Entry {
	switch typ {
	case TypeHash:
		return Entry{Member: m, Value: ValueBytes(v)}
	case TypeZSet:
		return Entry{Member: m, Score: zscoreOf(v)}
	}
	return Entry{Member: m}
}

// entriesOf is entryOf of each member.
func entriesOf(typ string, ms [][]byte, vs []dynastore.Value) []Entry {
	out := make([]Entry, len(ms))
	for i, m := range ms {
		out[i] = entryOf(typ, m, vs[i])
	}
	return out
}

// RandomPick is SRANDMEMBER, HRANDFIELD and ZRANDMEMBER with a count over
// key's collection of type typ (as one consistent read): a positive count
// picks distinct members (all of them when count >= size), a negative one
// -count members with repetition.
func RandomPick(c Scope, key []byte, typ string, count int64) (es []Entry, err error) {
	err = Read(c, key, typ, func(cl *Collection) error {
		ms, vs, err := pickFrom(cl, count)
		if err == nil {
			err = loadValues(c, vs)
		}
		es = entriesOf(typ, ms, vs)
		return err
	})
	return es, err
}

func pickFrom(cl *Collection, count int64) ([][]byte, []dynastore.Value, error) {
	size := cl.Len()
	if !cl.Exists() || count == 0 || size == 0 {
		return nil, nil, nil
	}
	if count > 0 {
		if count >= size {
			return EntriesOf(cl)
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

// Scan is SSCAN, HSCAN and ZSCAN: a page of about count entries of key's
// collection of type typ from cursor, and the cursor that follows (0 at
// the end).
func Scan(c Scope, key []byte, typ string, cursor uint64, count int) ([]Entry, uint64, error) {
	cl, err := OpenChecked(c, key, typ)
	if err != nil {
		return nil, 0, err
	}
	ms, vs, next, err := cl.ScanPage(cursor, count)
	if err == nil {
		err = loadValues(c, vs)
	}
	if err != nil {
		return nil, 0, err
	}
	return entriesOf(typ, ms, vs), next, nil
}
