package model

// The single-request forms of the hot collection commands (collection.go,
// "Caches"): conditions of the inline fast paths, updates guarded by a
// cached item, and blind member writes to known large collections.

import (
	"bytes"
	"fmt"

	"github.com/redamo/redamo/dynastore"
)

// The fast-path conditions below are kept to the operators their meaning
// needs (DynamoDB Local's latency grows with each one):
//   - "inline" is not attribute_not_exists(g): a size comparison of v
//     holds only when v exists, and only an inline layout has v (the key
//     item of a large collection holds g and n, never v: see plan);
//   - "live" is CondUnexpired: the comparison of t (and of v's size) holds
//     only when the item exists.

// InlineFastCond is the condition under which a fast-path update may touch
// an inline collection of type typ that will hold at most limit entries
// after adding up to adding new ones: the key is absent (the update creates
// it), or live, of the type, inline, with room. The caller checks that
// adding fits limit on its own.
func InlineFastCond(nowMS int64, typ string, limit, adding int, mustExist bool) dynastore.Cond {
	room := dynastore.And{
		CondUnexpired(nowMS),
		CondType(typ),
		dynastore.SizeCompare{Attr: AttrValue, Op: dynastore.OpLE, Size: int64(limit - adding)},
	}
	if mustExist {
		return room
	}
	return dynastore.Or{dynastore.NotExists{Attr: dynastore.AttrPK}, room}
}

// inlineShrinkCond is the condition under which a fast-path update may remove
// up to removing entries from an inline collection without emptying it (the
// write that empties a collection must delete its key item instead).
func inlineShrinkCond(nowMS int64, typ string, removing int) dynastore.Cond {
	return dynastore.And{
		CondUnexpired(nowMS),
		CondType(typ),
		dynastore.SizeCompare{Attr: AttrValue, Op: dynastore.OpGT, Size: int64(removing)},
	}
}

// genLiveCond is the condition of a commutative change of a large
// collection's key item: it still holds generation gen (so it is still that
// collection: see largeGen; the comparison also implies the item exists)
// and has not expired, and, when the change removes entries (delta < 0),
// keeps at least one (the write that empties a collection must delete its
// key item instead).
func genLiveCond(gen []byte, nowMS int64, delta int64) dynastore.Cond {
	cond := dynastore.And{
		dynastore.Compare{Attr: AttrGen, Op: dynastore.OpEQ, Val: dynastore.B(gen)},
		CondUnexpired(nowMS),
		dynastore.NotExists{Attr: AttrPending},
	}
	if delta < 0 {
		cond = append(cond, dynastore.Compare{Attr: AttrCount, Op: dynastore.OpGT, Val: NInt(-delta)})
	}
	return cond
}

// FastUpdate tries a command's single-request form, the update u under
// cond, on the key item of key. applied: it happened, and old and nw are
// the item before and after it (nil when absent). Otherwise cond failed and
// cur is the item as it is (nil if none), for the command's general path
// to start from without reading again. The item cache learns the outcome.
//
// When the item cache knows the key's item and cond holds on it, u goes
// out under the item's guard alone (its ver, or its absence) and returns
// nothing. The guard holds only on exactly that item, on which cond holds
// (dynastore.EvalCond is DynamoDB's semantics, liveness included, at the
// same nowMS), so that request is equivalent, and lighter: one comparison
// instead of cond's six or more, and no item back, as old and nw follow
// from the cache (dynastore.ApplyValidUpdate, what the store itself
// computes). A failed guard (another writer) pauses guarded writes of the
// key (itemCache.contend) and u goes out under cond, unless the item the
// failure returned already fails it.
func FastUpdate(c Scope, key []byte, u dynastore.Update, cond dynastore.Cond) (old, nw dynastore.Item, applied bool, cur dynastore.Item, err error) {
	if !KeyFits(key) {
		return nil, nil, false, nil, nil
	}
	k, items, now := ItemKey(c.DB(), key), Items(c), c.NowMS()
	if it, ok := items.Guardable(c.DB(), key, now); ok {
		if holds, _ := dynastore.EvalCond(it, cond); holds {
			_, err := c.Data().Update(c, k, onKnownItem(it, u), dynastore.WriteOptions{Cond: KeyState{Raw: it}.Guard(), OldOnFailure: true})
			if err == nil {
				nw, err = fastApplied(c, key, it, u)
				if err == nil && it == nil {
					reportCreated(c, key)
				}
				return it, nw, err == nil, nil, err
			}
			cur, failed := CondFailed(err)
			if !failed {
				return nil, nil, false, nil, err
			}
			items.contend(c.DB(), key, cur, now)
			if holds, _ := dynastore.EvalCond(cur, cond); !holds {
				return nil, nil, false, cur, nil
			}
		}
	}
	old, err = c.Data().Update(c, k, u, dynastore.WriteOptions{Cond: cond, Return: dynastore.ReturnAllOld, OldOnFailure: true})
	if err == nil {
		nw, err = fastApplied(c, key, old, u)
		if err == nil && old == nil {
			reportCreated(c, key)
		}
		return old, nw, err == nil, nil, err
	}
	if cur, failed := CondFailed(err); failed {
		items.Put(c.DB(), key, cur)
		return nil, nil, false, cur, nil
	}
	return nil, nil, false, nil, err
}

// onKnownItem returns u as it may go out under the guard of it, the exact
// item it applies to: without the SET actions that give an attribute the
// literal value it holds (SADD and HSET on a known item set t to the type
// it has), and with if_not_exists of an attribute it has reduced to that
// attribute (LPUSH on a known list). Each action and function costs
// DynamoDB time; the outcome is the same.
func onKnownItem(it dynastore.Item, u dynastore.Update) dynastore.Update {
	var set []dynastore.SetAction
	for i, a := range u.Set {
		keep, changed := true, false
		if lit, ok := a.Val.(dynastore.Value); ok {
			cur := it.Get(a.Attr)
			keep = cur == nil || !dynastore.ValuesEqual(cur, lit)
		} else {
			a.Val, changed = knownOperand(it, a.Val)
		}
		if set == nil && (!keep || changed) {
			set = append(make([]dynastore.SetAction, 0, len(u.Set)), u.Set[:i]...)
		}
		if set != nil && keep {
			set = append(set, a)
		}
	}
	if set == nil || (len(set) == 0 && len(u.Remove)+len(u.Add)+len(u.Delete) == 0) {
		return u // unchanged, or nothing left: an update must keep an action
	}
	u.Set = set
	return u
}

// knownOperand is op with if_not_exists of an attribute it has reduced to
// that attribute; changed says whether it reduced any.
func knownOperand(it dynastore.Item, op dynastore.Operand) (_ dynastore.Operand, changed bool) {
	pair := func(a, b dynastore.Operand) (dynastore.Operand, dynastore.Operand, bool) {
		a, ca := knownOperand(it, a)
		b, cb := knownOperand(it, b)
		return a, b, ca || cb
	}
	switch o := op.(type) {
	case dynastore.IfNotExists:
		if it.Has(o.Attr) {
			return dynastore.Ref{Attr: o.Attr}, true
		}
	case dynastore.ListAppend:
		if a, b, ok := pair(o.A, o.B); ok {
			return dynastore.ListAppend{A: a, B: b}, true
		}
	case dynastore.Plus:
		if a, b, ok := pair(o.A, o.B); ok {
			return dynastore.Plus{A: a, B: b}, true
		}
	case dynastore.Minus:
		if a, b, ok := pair(o.A, o.B); ok {
			return dynastore.Minus{A: a, B: b}, true
		}
	}
	return op, false
}

// fastApplied returns the item a FastUpdate that applied u to old left,
// and remembers it in the item cache.
func fastApplied(c Scope, key []byte, old dynastore.Item, u dynastore.Update) (dynastore.Item, error) {
	nw, err := dynastore.ApplyValidUpdate(ItemKey(c.DB(), key), old, u)
	if err != nil {
		return nil, fmt.Errorf("model: applying an accepted update: %w", err)
	}
	Items(c).Put(c.DB(), key, nw)
	return nw, nil
}

// blindOutcome is how a blind member write ended.
type blindOutcome uint8

const (
	// blindApplied: the write happened.
	blindApplied blindOutcome = iota
	// blindMemberFailed: only the member's condition failed: it was not as
	// assumed, while the key item held the generation, live.
	blindMemberFailed
	// blindUnknown: the key item changed (or the store cannot tell): the
	// caller falls back to its general path.
	blindUnknown
)

// blindResult is how a blind member write ended and, when the key item's
// condition failed, the key item as the transaction found it (cur, nil when
// there is none; known false when the store did not say).
type blindResult struct {
	out   blindOutcome
	cur   dynastore.Item
	known bool
}

// blindMember changes one member of the large collection cl in a single
// transaction, without reading the member first: memberAction carries the
// assumption as its condition (NotExists for an add, Exists for a removal),
// and the key item's update adds delta to n under genLiveCond. The
// cancellation reasons tell a wrong assumption (the member's condition
// alone failed) from a changed key item, which the failure returns.
func blindMember(c Scope, cl *Collection, memberAction dynastore.TxAction, delta int64) (blindResult, error) {
	return blindMembers(c, cl, []dynastore.TxAction{memberAction}, delta)
}

// blindMembers is blindMember for up to maxBlindMembers member actions,
// where blindMemberFailed means that member conditions alone failed.
func blindMembers(c Scope, cl *Collection, memberActions []dynastore.TxAction, delta int64) (blindResult, error) {
	u := &dynastore.Update{Set: []dynastore.SetAction{{Attr: AttrVer, Val: NewVer()}}}
	if delta != 0 {
		u.Add = []dynastore.AttrValue{{Attr: AttrCount, Val: NInt(delta)}}
	}
	keyAction := dynastore.TxAction{Op: dynastore.TxUpdate, Key: ItemKey(c.DB(), cl.Key), Update: u, Cond: genLiveCond(cl.Gen, c.NowMS(), delta), OldOnFailure: true}
	actions := append(memberActions[:len(memberActions):len(memberActions)], keyAction)
	err := c.Data().Transact(c, actions)
	if err == nil {
		return blindResult{out: blindApplied}, nil
	}
	r, failed := ConditionsFailed(err)
	if failed && r.Actions() == len(actions) {
		if cur, ok := r.Failed(len(memberActions)); ok {
			return blindResult{out: blindUnknown, cur: cur, known: true}, nil
		}
		if r.Only() {
			// The key item's condition held, so a member's did not.
			return blindResult{out: blindMemberFailed}, nil
		}
		return blindResult{out: blindUnknown}, nil
	}
	if failed || Retryable(err) {
		return blindResult{out: blindUnknown}, nil
	}
	return blindResult{out: blindUnknown}, err
}

// blindWrite is a change of members of a large collection made without
// reading its key item first (blindAdd, blindRemove, and for several
// members blindAddMany, blindRemoveMany): n is the command's count (the
// members added or removed) and done whether the change settled the
// command; when it did not, res says why.
type blindWrite func(cl *Collection) (n int64, done bool, res blindResult, err error)

// blindAdd adds one member (v nil for sets) to the large collection cl.
func blindAdd(c Scope, cl *Collection, m []byte, v dynastore.Value) (int64, bool, blindResult, error) {
	res, err := blindMember(c, cl, dynastore.TxAction{
		Op: dynastore.TxPut, Item: memberItem(cl.Gen, m, v, nil), Cond: dynastore.NotExists{Attr: dynastore.AttrPK},
	}, 1)
	switch {
	case err != nil || res.out == blindUnknown:
		return 0, false, res, err
	case res.out == blindApplied:
		return 1, true, res, nil
	case v == nil:
		return 0, true, res, nil // a set member that is already there
	}
	// A hash field that exists: overwrite it, n unchanged.
	res, err = blindMember(c, cl, dynastore.TxAction{
		Op: dynastore.TxPut, Item: memberItem(cl.Gen, m, v, nil), Cond: dynastore.Exists{Attr: dynastore.AttrPK},
	}, 0)
	return 0, err == nil && res.out == blindApplied, res, err
}

// blindRemove removes one member from the large collection cl (never the
// last one: that write must delete the key item, so it fails genLiveCond
// and falls back).
func blindRemove(c Scope, cl *Collection, m []byte) (int64, bool, blindResult, error) {
	res, err := blindMember(c, cl, dynastore.TxAction{
		Op: dynastore.TxDelete, Key: MemberKey(cl.Gen, m), Cond: dynastore.Exists{Attr: dynastore.AttrPK},
	}, -1)
	if err != nil || res.out == blindUnknown {
		return 0, false, res, err
	}
	if res.out != blindApplied {
		return 0, true, res, nil // it was not there
	}
	return 1, true, res, nil
}

// maxBlindMembers is the most members one blind write changes: with the
// key item's action they fill one transaction.
const maxBlindMembers = dynastore.MaxTxActions - 1

// blindFits reports whether a blind write of members (vals nil for a set
// or a removal) fits one transaction, measured as plan measures a commit.
func blindFits(members, vals [][]byte) bool {
	if len(members) > maxBlindMembers {
		return false
	}
	size := 0
	for i, m := range members {
		size += len(m) + 64
		if vals != nil {
			size += len(vals[i])
		}
	}
	return size <= maxTxBytes
}

// blindRead reads, in one BatchGet, the key item of the large collection
// cl and its members: present says which are there, and seed hands the
// key item to the general path should the write need it. When the key item
// no longer holds cl's generation (deleted, replaced, renamed, expired), ok
// is false.
func blindRead(c Scope, cl *Collection, members [][]byte) (present []bool, n int64, seed blindResult, ok bool, err error) {
	keys := make([]dynastore.Key, 0, 1+len(members))
	keys = append(keys, ItemKey(c.DB(), cl.Key))
	for _, m := range members {
		keys = append(keys, MemberKey(cl.Gen, m))
	}
	items, err := c.Data().BatchGet(c, keys)
	if err != nil {
		return nil, 0, blindResult{out: blindUnknown}, false, err
	}
	cur, err := FromItem(c, cl.Key, cl.Type, items[0])
	if err != nil {
		return nil, 0, blindResult{out: blindUnknown}, false, err
	}
	seed = blindResult{out: blindUnknown, cur: items[0], known: true}
	if cur.WrongType || !cur.Large() || !bytes.Equal(cur.Gen, cl.Gen) {
		return nil, 0, seed, false, nil
	}
	present = make([]bool, len(members))
	for i, it := range items[1:] {
		present[i] = isMember(it, members[i])
	}
	return present, cur.n, seed, true, nil
}

// blindAddMany adds several members (vals nil for a set) to the large
// collection cl: it reads its key item and them (blindRead), and one
// transaction writes the new ones on condition that they are still absent,
// and checks that each present one still is (a hash overwrites it on that
// condition), so the count it replies with holds when it commits. A set
// add of members all there writes nothing, as Redis (the read showed the
// key item holding the generation, and a generation's members are only
// added while it does). A member that changed in between (a race with
// another writer) does not settle the command: the general path does.
func blindAddMany(c Scope, cl *Collection, members, vals [][]byte) (int64, bool, blindResult, error) {
	present, _, seed, ok, err := blindRead(c, cl, members)
	if !ok {
		return 0, false, seed, err
	}
	actions := make([]dynastore.TxAction, len(members))
	var added int64
	for i, m := range members {
		var v dynastore.Value
		if vals != nil {
			v = HashValue(vals[i])
		}
		switch {
		case !present[i]:
			added++
			actions[i] = dynastore.TxAction{Op: dynastore.TxPut, Item: memberItem(cl.Gen, m, v, nil), Cond: dynastore.NotExists{Attr: dynastore.AttrPK}}
		case v != nil:
			actions[i] = dynastore.TxAction{Op: dynastore.TxPut, Item: memberItem(cl.Gen, m, v, nil), Cond: dynastore.Exists{Attr: dynastore.AttrPK}}
		default:
			actions[i] = dynastore.TxAction{Op: dynastore.TxCheck, Key: MemberKey(cl.Gen, m), Cond: dynastore.Exists{Attr: dynastore.AttrPK}}
		}
	}
	if vals == nil && added == 0 {
		return 0, true, blindResult{}, nil
	}
	res, err := blindMembers(c, cl, actions, added)
	if err != nil || res.out != blindApplied {
		return 0, false, res, err
	}
	return added, true, res, nil
}

// blindRemoveMany removes several members from the large collection cl as
// blindAddMany adds them: the present ones are deleted on condition that
// they still are, the absent ones checked absent; none present writes
// nothing. Removing the last members is left to the general path (the
// write that empties the collection must delete its key item), from the
// key item read; genLiveCond's count condition makes the transaction fail
// should that happen in between.
func blindRemoveMany(c Scope, cl *Collection, members [][]byte) (int64, bool, blindResult, error) {
	present, n, seed, ok, err := blindRead(c, cl, members)
	if !ok {
		return 0, false, seed, err
	}
	actions := make([]dynastore.TxAction, len(members))
	var removed int64
	for i, m := range members {
		if present[i] {
			removed++
			actions[i] = dynastore.TxAction{Op: dynastore.TxDelete, Key: MemberKey(cl.Gen, m), Cond: dynastore.Exists{Attr: dynastore.AttrPK}}
		} else {
			actions[i] = dynastore.TxAction{Op: dynastore.TxCheck, Key: MemberKey(cl.Gen, m), Cond: dynastore.NotExists{Attr: dynastore.AttrPK}}
		}
	}
	switch {
	case removed == 0:
		return 0, true, blindResult{}, nil
	case removed >= n:
		return 0, false, seed, nil
	}
	res, err := blindMembers(c, cl, actions, -removed)
	if err != nil || res.out != blindApplied {
		return 0, false, res, err
	}
	return removed, true, res, nil
}

// largeFromSeed decodes the item a failed single-request attempt returned
// when it is a large collection of type typ (nil otherwise).
func largeFromSeed(c Scope, key []byte, typ string, seed dynastore.Item) *Collection {
	cl, err := FromItem(c, key, typ, seed)
	if err != nil || cl.WrongType || !cl.Large() {
		return nil
	}
	return cl
}

// MemberStart is where a member write goes on when a single-request form
// did not settle it: from the key item that attempt returned (seeded; seed
// nil when there is none), or from a fresh read.
type MemberStart struct {
	Seed   dynastore.Item
	Seeded bool
	// tried is the generation a blind write failed on: it is not tried
	// again.
	tried []byte
}

// blind runs write on the large collection cl (nil: nothing to try). When
// write does not settle the command, st takes the key item it found, if
// any; when write cannot tell, the generation cache forgets the key.
func (st *MemberStart) blind(c Scope, cl *Collection, write blindWrite) (n int64, done bool, err error) {
	if cl == nil || bytes.Equal(cl.Gen, st.tried) {
		return 0, false, nil
	}
	n, done, res, err := write(cl)
	if err != nil || done {
		return n, done, err
	}
	st.tried = cl.Gen
	st.Seed, st.Seeded = res.cur, res.known
	if res.out == blindUnknown && !res.known {
		gensOf(c).drop(c.DB(), cl.Key)
	}
	return 0, false, nil
}

// SeededRetry is a read-modify-write of members of key's collection,
// committed conditioned on what it read (the first try starts from seed
// when seeded): change stages the writes, given what lookup found.
func SeededRetry(c Scope, key []byte, typ string, members [][]byte, seed dynastore.Item, seeded bool, change func(cl *Collection, vals []dynastore.Value, present []bool) error) error {
	return RetryConflicts(c, func(try int) error {
		cl, err := OpenSeeded(c, key, typ, seed, seeded && try == 0)
		if err != nil {
			return err
		}
		vals, present, err := cl.Lookup(members)
		if err != nil {
			return err
		}
		if err := change(cl, vals, present); err != nil {
			return err
		}
		return cl.Commit()
	})
}

// MemberFast runs the single-request forms of a member write on key, in
// turn: cached, a blind write (nil: none), on the large collection the
// generation cache remembers; then, unless that cache knows the key as
// large, the UpdateItem u (nil: the members cannot be inline) under cond,
// whose returned old attributes count turns into the command's count; then
// seeded, a blind write (nil: none), on the large collection a failed u or
// cached returned. A blind write of several members reads them first, so
// from a returned key item it would cost what the general path costs from
// it: it is a cached write only. done reports the command settled with
// count n; otherwise the general path starts from st.
func MemberFast(c Scope, key []byte, typ string, cached, seeded blindWrite, u *dynastore.Update, cond dynastore.Cond, count func(old dynastore.Item) int64) (st MemberStart, n int64, done bool, err error) {
	if cached != nil {
		if n, done, err = st.blind(c, cachedLarge(c, key, typ), cached); err != nil || done {
			return st, n, done, err
		}
	}
	// A collection the generation cache knows as large has no inline
	// entries: u would fail, costing a write unit, only to hand back the key
	// item, which the general path reads for a read unit. (A stale entry
	// costs the general path's read where u would have done.)
	if !st.Seeded && u != nil && cachedLarge(c, key, typ) == nil {
		old, _, applied, cur, err := FastUpdate(c, key, *u, cond)
		if err != nil || applied {
			return st, count(old), applied, err
		}
		st.Seed, st.Seeded = cur, true
	}
	if st.Seeded && seeded != nil {
		n, done, err = st.blind(c, largeFromSeed(c, key, typ, st.Seed), seeded)
	}
	return st, n, done, err
}

// someNewMax is the most members an SADD fast path conditions on one of
// them being new: each is a term of the condition, and DynamoDB caps an
// expression at 4 KB. A larger SADD of members all present rewrites the
// set's version, as before.
const someNewMax = 16

// AddMembers is SADD and HSET/HMSET: it puts members, with vals for a hash
// (nil for a set, whose present members are left alone), and returns how
// many were new. A small add to an inline collection is one UpdateItem,
// one member of a large one a blind write (MemberFast), several members of
// a large one the generation cache knows a read of those members and a
// blind write; anything else reads, computes and commits.
func AddMembers(c Scope, key []byte, typ string, members, vals [][]byte) (int64, error) {
	if vals != nil {
		sv, err := stageFieldValues(c, key, members, vals)
		if err != nil {
			return 0, err
		}
		if sv != nil {
			return addBigFields(c, key, members, vals, sv)
		}
	}
	if memberCoalesced(c, key, typ) {
		return doMembers(c, key, typ, memberOp{members: members, vals: vals}, func() (int64, error) { return addMembers(c, key, typ, members, vals) })
	}
	return addMembers(c, key, typ, members, vals)
}

func addMembers(c Scope, key []byte, typ string, members, vals [][]byte) (added int64, err error) {
	var cached, seeded blindWrite
	switch {
	case !AllSmall(members, maxItemMember):
		// A big member's chunks are staged by the commit's plan.
	case len(members) == 1:
		var v dynastore.Value
		if vals != nil {
			v = HashValue(vals[0])
		}
		cached = func(cl *Collection) (int64, bool, blindResult, error) { return blindAdd(c, cl, members[0], v) }
		seeded = cached
	case blindFits(members, vals):
		cached = func(cl *Collection) (int64, bool, blindResult, error) { return blindAddMany(c, cl, members, vals) }
	}
	var u *dynastore.Update
	lim := c.Process().inline(typ)
	if AllSmall(members, lim.Bytes) && AllSmall(vals, lim.Bytes) && len(members) <= lim.Entries {
		u = &dynastore.Update{
			Set: []dynastore.SetAction{
				{Attr: AttrType, Val: dynastore.S(typ)},
				{Attr: AttrVer, Val: NewVer()},
			},
			Add: []dynastore.AttrValue{{Attr: AttrValue, Val: BSOf(members)}},
		}
		for i, v := range vals {
			u.Set = append(u.Set, dynastore.SetAction{Attr: FieldAttr(members[i]), Val: HashValue(v)})
		}
	}
	cond := InlineFastCond(c.NowMS(), typ, lim.Entries, len(members), false)
	if vals == nil && u != nil && len(members) <= someNewMax {
		// An SADD of members that are all there already changes nothing,
		// as in Redis (a WATCH of the set stays unbroken): the update
		// only goes out when one of them is new; otherwise the failed
		// condition returns the set, which the count is taken from.
		someNew := make(dynastore.Or, len(members))
		for i, m := range members {
			someNew[i] = dynastore.Not{C: dynastore.Contains{Attr: AttrValue, Val: dynastore.B(m)}}
		}
		cond = dynastore.Or{dynastore.NotExists{Attr: dynastore.AttrPK}, dynastore.And{cond, someNew}}
	}
	st, n, done, err := MemberFast(c, key, typ, cached, seeded, u, cond, func(old dynastore.Item) (n int64) {
		for _, m := range members {
			if !BSContains(old.Get(AttrValue), m) {
				n++
			}
		}
		return n
	})
	if err != nil || done {
		return n, err
	}
	err = SeededRetry(c, key, typ, members, st.Seed, st.Seeded, func(cl *Collection, _ []dynastore.Value, present []bool) error {
		added = 0
		for i, m := range members {
			if !present[i] {
				added++
			}
			switch {
			case vals != nil:
				cl.Put(m, HashValue(vals[i]))
			case !present[i]:
				cl.Put(m, nil)
			}
		}
		return nil
	})
	return added, err
}

// RemoveMembers is SREM, HDEL and ZREM: it removes members from key's
// collection of type typ and returns how many of them were there. Like AddMembers, a small remove
// from an inline collection is one UpdateItem, one member of a large one a
// blind delete, and several members of a large one the generation cache
// knows a read of those members and a blind write.
func RemoveMembers(c Scope, key []byte, typ string, members [][]byte) (int64, error) {
	if typ == TypeZSet {
		return zsetRemove(c, key, members)
	}
	if memberCoalesced(c, key, typ) {
		return doMembers(c, key, typ, memberOp{rem: true, members: members}, func() (int64, error) { return removeMembers(c, key, typ, members) })
	}
	return removeMembers(c, key, typ, members)
}

func removeMembers(c Scope, key []byte, typ string, members [][]byte) (int64, error) {
	var cached, seeded blindWrite
	_, ordered := MemberOrders[typ] // a blind delete would leave the order item
	switch {
	case ordered:
	case len(members) == 1:
		cached = func(cl *Collection) (int64, bool, blindResult, error) { return blindRemove(c, cl, members[0]) }
		seeded = cached
	case blindFits(members, nil):
		cached = func(cl *Collection) (int64, bool, blindResult, error) { return blindRemoveMany(c, cl, members) }
	}
	// An inline collection has at most inlineLimit entries: more arguments,
	// or longer ones, cannot all be there (and would bloat the expression).
	var u *dynastore.Update
	if len(members) <= inlineLimit(typ) && AllSmall(members, InlineMaxBytes) {
		u = &dynastore.Update{
			Set:    []dynastore.SetAction{{Attr: AttrVer, Val: NewVer()}},
			Delete: []dynastore.AttrValue{{Attr: AttrValue, Val: BSOf(members)}},
		}
		if typ != TypeSet { // each value is an attribute of its own
			for _, m := range members {
				u.Remove = append(u.Remove, FieldAttr(m))
			}
		}
	}
	st, n, done, err := MemberFast(c, key, typ, cached, seeded, u, inlineShrinkCond(c.NowMS(), typ, len(members)), func(old dynastore.Item) (n int64) {
		for _, m := range members {
			if BSContains(old.Get(AttrValue), m) {
				n++
			}
		}
		return n
	})
	if err != nil || done {
		return n, err
	}
	var removed int64
	err = SeededRetry(c, key, typ, members, st.Seed, st.Seeded, func(cl *Collection, _ []dynastore.Value, present []bool) error {
		removed = 0
		for i, m := range members {
			if present[i] {
				cl.Del(m)
				removed++
			}
		}
		return nil
	})
	return removed, err
}
