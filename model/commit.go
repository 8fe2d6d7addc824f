package model

// How a Collection's staged changes become requests (collection.go,
// "Changes"): plans for each layout, and the commit of several collections
// in one request or transaction.

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/redamo/redamo/dynastore"
)

// Changed reports whether anything is staged.
func (cl *Collection) Changed() bool {
	return cl.Replace || cl.rebuilt != nil || len(cl.puts) > 0 || len(cl.dels) > 0 || len(cl.keyAttrs) > 0
}

// Rebuild stages the replacement of the collection's whole content by the
// n entries entries yields (in any order; for a spanned type, positions
// from 0 on), keeping the key's expiry: the commit writes a new generation,
// or an inline item when the result fits one. Other staged changes are
// dropped.
func (cl *Collection) Rebuild(n int64, entries func(yield func(m []byte, v dynastore.Value) error) error) {
	cl.puts, cl.dels = nil, nil
	cl.rebuilt, cl.rebuiltLen = entries, n
}

// inlineLimit is the most entries an inline collection of the type can
// hold, whatever the encoding parameters were when it was written.
func inlineLimit(typ string) int {
	switch typ {
	case TypeHash, TypeZSet:
		return InlineMaxHash
	case TypeList:
		return InlineMaxList
	}
	return InlineMaxSet
}

// fitsInline reports whether entries can be stored inline within lim.
func fitsInline(lim InlineLimits, entries map[string]dynastore.Value) bool {
	if len(entries) > lim.Entries {
		return false
	}
	for m, v := range entries {
		if len(m) > lim.Bytes || ValueSize(v) > lim.Bytes {
			return false
		}
	}
	return true
}

// baseKeyItem is the key item's common part for a write: type, fresh ver,
// and the expiry kept unless the commit replaces the key.
func (cl *Collection) baseKeyItem() dynastore.Item {
	k := ItemKey(cl.c.DB(), cl.Key)
	it := dynastore.Item{
		{Name: dynastore.AttrPK, Value: dynastore.B(k.PK)},
		{Name: dynastore.AttrSK, Value: dynastore.B(k.SK)},
		{Name: AttrType, Value: dynastore.S(cl.Type)},
		{Name: AttrVer, Value: NewVer()},
	}
	if !cl.Replace && cl.KS.Live && cl.KS.HasExpiry {
		it.Set(AttrExpiry, NInt(cl.KS.Expiry))
		it.Set(dynastore.AttrTTL, TTLSeconds(cl.KS.Expiry))
	}
	for _, name := range []string{AttrBigEncoding, attrBigFields} {
		if v := cl.KeyAttr(name); v != nil && !cl.WrongType {
			it.Set(name, v)
		}
	}
	for name, v := range cl.keyAttrs {
		it.Set(name, v)
	}
	return it
}

// keyAttrSets are the SET actions of the staged key attributes.
func (cl *Collection) keyAttrSets() []dynastore.SetAction {
	var out []dynastore.SetAction
	for name, v := range cl.keyAttrs {
		out = append(out, dynastore.SetAction{Attr: name, Val: v})
	}
	return out
}

// inlineItem is the key item of an inline collection holding entries.
func (cl *Collection) inlineItem(entries map[string]dynastore.Value) dynastore.Item {
	it := cl.baseKeyItem()
	InlineCodecs[cl.Type].Encode(&it, entries)
	return it
}

// Plan stages what must be staged (a new generation) and returns the
// actions that commit this view's changes, each guarded by the key item's
// ver as read. No actions means nothing to write.
func (cl *Collection) Plan() ([]dynastore.TxAction, error) {
	cl.markBigMembers()
	actions, gen, err := cl.planActions()
	if len(actions) > 0 {
		actions = append(actions, cl.checks...)
	}
	cl.planned, cl.genAfter, cl.after, cl.afterKnown = len(actions) > 0, gen, nil, false
	k := ItemKey(cl.c.DB(), cl.Key)
	for _, a := range actions {
		switch {
		case a.Op == dynastore.TxPut && bytes.Equal(a.Item.Key().PK, k.PK):
			cl.after, cl.afterKnown = a.Item, true
		case a.Op == dynastore.TxDelete && bytes.Equal(a.Key.PK, k.PK):
			cl.afterKnown = true
		case a.Op == dynastore.TxUpdate && bytes.Equal(a.Key.PK, k.PK) && len(a.Update.Add) == 0 && cl.KS.Raw != nil:
			// Only SETs, guarded by the ver as read: the item after is
			// that one updated (the commutative form ADDs to n, whose
			// value then depends on concurrent writers).
			if after, err := dynastore.ApplyValidUpdate(k, cl.KS.Raw, *a.Update); err == nil {
				cl.after, cl.afterKnown = after, true
			}
		}
	}
	return actions, err
}

// planActions is plan, also returning the generation the key item holds
// after the actions (nil when they leave it inline or delete it).
func (cl *Collection) planActions() ([]dynastore.TxAction, []byte, error) {
	if !cl.Changed() {
		return nil, nil, nil
	}
	if !KeyFits(cl.Key) {
		return nil, nil, ErrKeyTooLong
	}
	key := ItemKey(cl.c.DB(), cl.Key)
	guard := cl.KS.Guard()
	if !cl.Large() || cl.Replace || cl.rebuilt != nil {
		return cl.planWhole(key, guard)
	}

	// Large layout.
	lo, hi, spanned, err := cl.Span(false)
	if err != nil {
		return nil, nil, err
	}
	members, n, size, err := cl.memberActions(spanned, lo, hi)
	if err != nil {
		return nil, nil, err
	}
	if n == 0 {
		if InlineCodecs[cl.Type].KeepEmpty {
			// Back to an inline key item with no entries; the generation
			// is left to the sweeper.
			return []dynastore.TxAction{{Op: dynastore.TxPut, Item: cl.inlineItem(nil), Cond: guard}}, nil, nil
		}
		return []dynastore.TxAction{{Op: dynastore.TxDelete, Key: key, Cond: guard}}, nil, nil
	}
	if len(members) == 0 && len(cl.keyAttrs) == 0 {
		return nil, nil, nil
	}
	// The checks of the big values and members it publishes (bigfields.go,
	// bigmembers.go) go with the member writes, or else with the commit
	// of the pending ones.
	if len(members)+len(cl.checks) <= MaxTxMembers && size <= maxTxBytes {
		keyUpdate := cl.keyUpdate(key, guard, n)
		if !cl.exact && !spanned {
			// Commutative form: concurrent writers of different members
			// of one large collection do not invalidate each other (the
			// writer that would empty it fails genLiveCond and takes the
			// guarded path above on its re-run). Never for a spanned
			// type, whose member writes carry no condition of their own.
			delta := n - cl.n
			keyUpdate.Update = &dynastore.Update{
				Set: []dynastore.SetAction{{Attr: AttrVer, Val: NewVer()}},
				Add: []dynastore.AttrValue{{Attr: AttrCount, Val: NInt(delta)}},
			}
			keyUpdate.Cond = genLiveCond(cl.Gen, cl.c.NowMS(), delta)
		}
		return append(members, keyUpdate), cl.Gen, nil
	}
	_, inTx := cl.c.Data().(*Txn)
	if spanned && !inTx {
		if acts, ok, err := cl.planSpan(key, guard, members, n, lo, hi); ok || err != nil {
			return acts, cl.Gen, err
		}
	}
	if !inTx {
		// Too big for one transaction: the writes wait in pending items
		// (invisible), one transaction publishes them with the key item,
		// and they are rolled forward (rollForward) before anyone reads.
		return cl.planPending(key, guard, members, n)
	}
	return cl.planRestage(key, guard, spanned, lo, hi)
}

// memberActions are the member (and order) writes of a large collection's
// staged changes, with the count after them and their size. Members are
// read first where not known yet (a spanned type's need no read).
func (cl *Collection) memberActions(spanned bool, lo, hi int64) (members []dynastore.TxAction, n int64, size int, err error) {
	var changed [][]byte
	for m := range cl.puts {
		changed = append(changed, []byte(m))
	}
	for m := range cl.dels {
		changed = append(changed, []byte(m))
	}
	if spanned {
		// A position is an entry exactly when it is in the range: nothing
		// to read.
		if cl.Known == nil {
			cl.Known = map[string]MemberState{}
		}
		for _, m := range changed {
			if _, ok := cl.Known[string(m)]; !ok {
				p, _ := MemberPos(m)
				cl.Known[string(m)] = MemberState{present: p >= lo && p < hi}
			}
		}
	} else if err := cl.Fetch(changed); err != nil {
		return nil, 0, 0, err
	}
	n = cl.n
	for m, v := range cl.puts {
		// Each member action is conditioned on the member being as read,
		// which is all a command that did not read the whole collection
		// depends on (see planActions). A spanned type's writes are all
		// guarded by the key item's ver instead (they set its range).
		var cond dynastore.Cond = dynastore.NotExists{Attr: dynastore.AttrPK}
		if st := cl.Known[m]; st.present {
			cond = asRead(st)
		} else {
			n++
		}
		if spanned {
			cond = nil
		}
		ref, err := cl.memberRef([]byte(m))
		if err != nil {
			return nil, 0, 0, err
		}
		members = append(members, dynastore.TxAction{Op: dynastore.TxPut, Item: memberItem(cl.Gen, []byte(m), v, ref), Cond: cond})
		size += memberCost([]byte(m)) + storedSize(v) + 64
		members = append(members, cl.reorder([]byte(m), cl.Known[m], v, ref)...)
	}
	for m := range cl.dels {
		if st := cl.Known[m]; st.present {
			n--
			// As read, value included: the order item a sorted set's
			// delete removes is the one of the score it read.
			cond := asRead(st)
			if spanned {
				cond = nil
			}
			members = append(members, dynastore.TxAction{Op: dynastore.TxDelete, Key: MemberKey(cl.Gen, []byte(m)), Cond: cond})
			members = append(members, cl.reorder([]byte(m), st, nil, nil)...)
		}
	}
	return members, n, size, nil
}

// asRead is the condition that a present member's item is as read: its
// value (or its big value's generation), else its existence.
func asRead(st MemberState) dynastore.Cond {
	if h, ok := refOf(st.v); ok {
		return dynastore.Compare{Attr: attrBigGen, Op: dynastore.OpEQ, Val: dynastore.B(h.gen)}
	}
	if st.v != nil {
		return dynastore.Compare{Attr: AttrValue, Op: dynastore.OpEQ, Val: st.v}
	}
	return dynastore.Exists{Attr: dynastore.AttrPK}
}

// planRestage is the commit of a large collection's change too big for
// one transaction inside MULTI or a script, whose commit is not the plan's
// to roll forward: a new generation with the result, published by the
// commit. A spanned type's leftovers are left behind.
func (cl *Collection) planRestage(key dynastore.Key, guard dynastore.Cond, spanned bool, lo, hi int64) ([]dynastore.TxAction, []byte, error) {
	gen, n, err := stageGen(cl.c, cl.c.Data(), cl.Type, key.PK, cl.c.NowMS(), cl.memberRef, func(yield func([]byte, dynastore.Value) error) error {
		err := eachMemberPaged(cl.c, cl.c.Data(), cl.Gen, nil, func(m []byte, v dynastore.Value) error {
			if _, ok := cl.puts[string(m)]; ok || cl.dels[string(m)] {
				return nil
			}
			if p, _ := MemberPos(m); spanned && (p < lo || p >= hi) {
				return nil // a leftover (MemberSpan)
			}
			return yield(m, v)
		}, nil, cl.saw)
		if err != nil {
			return err
		}
		for m, v := range cl.puts {
			if err := yield([]byte(m), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return []dynastore.TxAction{{
		Op:  dynastore.TxUpdate,
		Key: key,
		Update: &dynastore.Update{Set: append([]dynastore.SetAction{
			{Attr: AttrGen, Val: dynastore.B(gen)},
			{Attr: AttrCount, Val: NInt(n)},
			{Attr: AttrVer, Val: NewVer()},
		}, cl.keyAttrSets()...)},
		Cond: guard,
	}, genAliveCheck(gen)}, gen, nil
}

// planWhole is the commit of a collection written whole: an inline one,
// one the commit replaces (replace), or one rebuilt (rebuild). The result
// goes inline when it fits, else into a new generation the commit
// publishes.
func (cl *Collection) planWhole(key dynastore.Key, guard dynastore.Cond) ([]dynastore.TxAction, []byte, error) {
	lim := cl.c.Process().inline(cl.Type)
	entries := cl.rebuilt
	n := cl.rebuiltLen
	var small map[string]dynastore.Value // the entries, when they may fit inline
	if entries == nil {
		small = map[string]dynastore.Value{}
		if !cl.Replace && !cl.WrongType {
			for m, v := range cl.Inline {
				small[m] = v
			}
		}
		for m := range cl.dels {
			delete(small, m)
		}
		for m, v := range cl.puts {
			small[m] = v
		}
		n = int64(len(small))
		entries = func(yield func([]byte, dynastore.Value) error) error {
			for m, v := range small {
				if err := yield([]byte(m), v); err != nil {
					return err
				}
			}
			return nil
		}
	} else if n <= int64(lim.Entries) {
		small = make(map[string]dynastore.Value, n)
		err := entries(func(m []byte, v dynastore.Value) error {
			small[string(m)] = v
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	if n == 0 && !InlineCodecs[cl.Type].KeepEmpty {
		if cl.KS.Raw == nil || (!cl.KS.Live && !cl.Replace) {
			return nil, nil, nil
		}
		return []dynastore.TxAction{{Op: dynastore.TxDelete, Key: key, Cond: guard}}, nil, nil
	}
	if small != nil && fitsInline(lim, small) {
		return []dynastore.TxAction{{Op: dynastore.TxPut, Item: cl.inlineItem(small), Cond: guard}}, nil, nil
	}
	sp, spanned := MemberSpans[cl.Type]
	var lo, hi int64 // a spanned type's range: the positions written
	gen, n, err := stageGen(cl.c, cl.c.Data(), cl.Type, key.PK, cl.c.NowMS(), cl.memberRef, func(yield func([]byte, dynastore.Value) error) error {
		first := true
		return entries(func(m []byte, v dynastore.Value) error {
			if p, ok := MemberPos(m); ok && spanned {
				if first {
					lo, hi, first = p, p+1, false
				}
				lo, hi = min(lo, p), max(hi, p+1)
			}
			return yield(m, v)
		})
	})
	if err != nil {
		return nil, nil, err
	}
	it := cl.baseKeyItem()
	it.Set(AttrGen, dynastore.B(gen))
	it.Set(AttrCount, NInt(n))
	if spanned {
		it.Set(sp.Lo, NInt(lo))
		it.Set(sp.Hi, NInt(hi))
	}
	return []dynastore.TxAction{{Op: dynastore.TxPut, Item: it, Cond: guard}, genAliveCheck(gen)}, gen, nil
}

// planSpan is the large-layout commit of a spanned type's member writes
// (their member actions; n the count after them) that do not fit one
// transaction, when every put is to a position outside the range as read
// (lo, hi) and every delete to one outside the range after the change (a
// big push, pop or LTRIM): no read can see any of them before or after the
// key item's update, so the puts are written first, directly, a
// transaction at a time, each checking that the key item is still as read
// (they never overwrite what a concurrent writer published), and the
// deletes are left to dropOutside once the update is in. ok is false when
// the change is not of that kind (planPending then takes it).
func (cl *Collection) planSpan(key dynastore.Key, guard dynastore.Cond, members []dynastore.TxAction, n, lo, hi int64) (_ []dynastore.TxAction, ok bool, err error) {
	nlo, nhi, _, err := cl.Span(true)
	if err != nil {
		return nil, false, err
	}
	var puts []dynastore.TxAction
	var outside []int64
	for _, a := range members {
		if a.Op == dynastore.TxPut {
			if p, _ := MemberPos(decodeMember(a.Item)); p >= lo && p < hi {
				return nil, false, nil
			}
			puts = append(puts, a)
			continue
		}
		p, _ := MemberPos(a.Key.SK[1:]) // a position's sort key is skMember and the position
		if p >= nlo && p < nhi {
			return nil, false, nil
		}
		outside = append(outside, p)
	}
	check := dynastore.TxAction{Op: dynastore.TxCheck, Key: key, Cond: guard}
	var batches [][]dynastore.TxAction
	var batch []dynastore.TxAction
	size := 0
	for _, a := range puts {
		sz := dynastore.ItemSize(a.Item)
		if len(batch) == dynastore.MaxTxActions-1 || size+sz > maxTxBytes {
			batches, batch, size = append(batches, append(batch, check)), nil, 0
		}
		batch = append(batch, a)
		size += sz
	}
	if len(batch) > 0 {
		batches = append(batches, append(batch, check))
	}
	if err := parallel(len(batches), func(i int) error { return CommitActions(cl.c, batches[i]) }); err != nil {
		return nil, true, err
	}
	slices.Sort(outside)
	cl.outside = outside
	return []dynastore.TxAction{cl.keyUpdate(key, guard, n)}, true, nil
}

// keyUpdate is the update of a large collection's key item under guard
// that sets its count to n, a fresh ver and the staged key attributes.
func (cl *Collection) keyUpdate(key dynastore.Key, guard dynastore.Cond, n int64) dynastore.TxAction {
	return dynastore.TxAction{
		Op:  dynastore.TxUpdate,
		Key: key,
		Update: &dynastore.Update{Set: append([]dynastore.SetAction{
			{Attr: AttrCount, Val: NInt(n)},
			{Attr: AttrVer, Val: NewVer()},
		}, cl.keyAttrSets()...)},
		Cond: guard,
	}
}

// dropOutside deletes the members a committed spanned change took out of
// the range (planSpan), a transaction at a time, each checking that the
// key item still holds the generation with every one of them outside its
// range (a later push may have reached a position again: then it is an
// entry, and the clean-up stops). It is best effort: leftovers are
// harmless (MemberSpan).
func (cl *Collection) dropOutside() {
	sp := MemberSpans[cl.Type]
	nlo, _, _, err := cl.Span(true)
	if err != nil {
		return
	}
	key := ItemKey(cl.c.DB(), cl.Key)
	below, above := cl.outside, []int64(nil)
	if i, _ := slices.BinarySearch(cl.outside, nlo); i < len(cl.outside) {
		below, above = cl.outside[:i], cl.outside[i:]
	}
	run := func(ps []int64, isBelow bool) error {
		for len(ps) > 0 {
			batch := ps[:min(len(ps), dynastore.MaxTxActions-1)]
			ps = ps[len(batch):]
			acts := make([]dynastore.TxAction, 0, len(batch)+1)
			for _, p := range batch {
				acts = append(acts, dynastore.TxAction{Op: dynastore.TxDelete, Key: MemberKey(cl.Gen, PosMember(p))})
			}
			out := dynastore.Cond(dynastore.Compare{Attr: sp.Lo, Op: dynastore.OpGT, Val: NInt(batch[len(batch)-1])})
			if !isBelow {
				out = dynastore.Compare{Attr: sp.Hi, Op: dynastore.OpLE, Val: NInt(batch[0])}
			}
			acts = append(acts, dynastore.TxAction{Op: dynastore.TxCheck, Key: key, Cond: dynastore.And{
				dynastore.Compare{Attr: AttrGen, Op: dynastore.OpEQ, Val: dynastore.B(cl.Gen)}, out,
			}})
			if err := CommitActions(cl.c, acts); err != nil {
				return err
			}
		}
		return nil
	}
	if run(below, true) == nil {
		_ = run(above, false)
	}
}

// CondFailed reports whether err is a failed condition, and the item the
// store returned with it (nil when not asked for, or when there is none).
func CondFailed(err error) (dynastore.Item, bool) {
	var cf *dynastore.ConditionFailedError
	if errors.As(err, &cf) {
		return cf.Old, true
	}
	return nil, errors.Is(err, dynastore.ErrConditionFailed)
}

// checkFailed reports whether a transaction was cancelled by its last
// action's condition (rollPhase's check of the key item).
func checkFailed(err error) bool {
	r, ok := ConditionsFailed(err)
	_, last := r.Failed(r.Actions() - 1)
	return ok && last
}

// reorder returns the actions that keep a large collection's order items
// (MemberOrder) in step with member m going from was to v (nil: removed):
// none when the type keeps no order or the order item stays the same. They
// need no condition of their own: the member item's action carries it.
func (cl *Collection) reorder(m []byte, was MemberState, v, ref dynastore.Value) []dynastore.TxAction {
	var old, nw dynastore.Item
	if was.present {
		old = orderItem(cl.Type, cl.Gen, m, was.v, nil)
	}
	if v != nil {
		nw = orderItem(cl.Type, cl.Gen, m, v, ref)
	}
	if old != nil && nw != nil && bytes.Equal(old.Key().SK, nw.Key().SK) {
		return nil
	}
	var out []dynastore.TxAction
	if old != nil {
		out = append(out, dynastore.TxAction{Op: dynastore.TxDelete, Key: old.Key()})
	}
	if nw != nil {
		out = append(out, dynastore.TxAction{Op: dynastore.TxPut, Item: nw})
	}
	return out
}

// checkAction guards a key only read by a multi-key commit.
func (cl *Collection) checkAction() dynastore.TxAction {
	k := ItemKey(cl.c.DB(), cl.Key)
	if !KeyFits(cl.Key) {
		// A key that cannot exist never changes.
		return dynastore.TxAction{}
	}
	return dynastore.TxAction{Op: dynastore.TxCheck, Key: k, Cond: cl.KS.Guard()}
}

// Commit writes the staged changes of one collection.
func (cl *Collection) Commit() error {
	return Commit(cl.c, []*Collection{cl}, nil)
}

// Commit commits the changes of writes in one request or
// transaction, with checks that the keys of reads are unchanged (reads that
// are also written need no check).
func Commit(c Scope, writes []*Collection, reads []*Collection) error {
	var actions []dynastore.TxAction
	written := map[string]bool{}
	for _, cl := range writes {
		a, err := cl.Plan()
		if err != nil {
			dropUnpublished(c, writes)
			return err
		}
		written[string(cl.Key)] = true
		actions = append(actions, a...)
		if len(a) > 0 {
			actions = append(actions, cl.Extra...)
		}
	}
	if len(actions) == 0 {
		// Nothing to write: the reply still rests on every read agreeing.
		return ValidateRead(c, reads...)
	}
	for _, cl := range reads {
		if written[string(cl.Key)] || !KeyFits(cl.Key) {
			continue
		}
		written[string(cl.Key)] = true
		actions = append(actions, cl.checkAction())
	}
	if err := CommitActions(c, actions); err != nil {
		if errors.Is(err, ErrConflict) {
			// Refused, so certainly not published (after another error
			// it may have been: its pending items must then stay).
			dropUnpublished(c, writes)
		}
		return err
	}
	for _, cl := range writes {
		cl.NoteCommitted()
		reportCommitted(c, cl)
		if cl.outside != nil {
			// The command's outcome is decided; a failed clean-up only
			// leaves leftovers.
			cl.dropOutside()
		}
		if cl.pending == nil {
			continue
		}
		// Published: roll it forward now (readers would otherwise). A
		// failure leaves it to them, so the command still succeeded; the
		// item cache then forgets the key, which holds the mark until
		// they have. After a roll-forward it holds the item as published
		// without the mark (the same ver).
		err := rollForward(c, c.Data(), ItemKey(c.DB(), cl.Key), cl.pending)
		if err != nil || !cl.afterKnown || cl.after == nil {
			Items(c).Drop(c.DB(), cl.Key)
			continue
		}
		done := cl.after.Clone(0)
		done.Delete(AttrPending)
		done.Delete(attrPhase)
		Items(c).Put(c.DB(), cl.Key, done)
	}
	return nil
}

// NoteCommitted records in the caches what a successful commit of cl's
// plan left the key as.
func (cl *Collection) NoteCommitted() {
	if !cl.planned {
		return
	}
	NoteGen(cl.c, cl.Key, cl.Type, cl.genAfter)
	if cl.afterKnown {
		Items(cl.c).putList(cl.c.DB(), cl.Key, cl.after, cl.ListKnown)
	} else {
		Items(cl.c).Drop(cl.c.DB(), cl.Key)
	}
}

// CommitActions runs actions as one single-item write when there is only
// one, else as a transaction. A failed condition becomes ErrConflict.
func CommitActions(c Scope, actions []dynastore.TxAction) error {
	if len(actions) > dynastore.MaxTxActions {
		return fmt.Errorf("model: %d actions: %w", len(actions), dynastore.ErrTxTooLarge)
	}
	return Refused(writeActions(c, c.Data(), actions), nil)
}
