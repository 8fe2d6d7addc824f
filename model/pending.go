package model

// Changes too big for one transaction (collection.go, "Changes"): their
// writes wait in pending items until one transaction publishes them, and
// are then rolled forward by the writer or by whoever reads first.

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/redamo/redamo/dynastore"
)

// planPending is the large-layout commit of member writes (their member
// actions; n the count after them) that do not fit one transaction. Each
// write goes, unconditioned, into a pending item of a fresh change id (sort
// key skPending, id, the target's sort key), written concurrently a
// transaction of them at a time; no read reaches them. The returned commit
// is one update of the key item, guarded by its ver as read (which also
// stands for every member read: none changes without it), that sets the
// count and marks the change pending. The commit's caller rolls it forward
// (Commit), and so does anyone who opens the collection first.
// The cost is in proportion to the change, not to the collection.
func (cl *Collection) planPending(key dynastore.Key, guard dynastore.Cond, members []dynastore.TxAction, n int64) ([]dynastore.TxAction, []byte, error) {
	tx := newGenID()[:8]
	cl.pendingTx = tx
	var batches [][]dynastore.TxAction
	var batch []dynastore.TxAction
	size := 0
	for _, a := range members {
		var it dynastore.Item
		target := a.Key
		if a.Op == dynastore.TxPut {
			target = a.Item.Key()
			it = a.Item.Clone(0)
			it.Set(attrPendingOp, dynastore.S("p"))
		} else {
			it = dynastore.Item{{Name: attrPendingOp, Value: dynastore.S("d")}}
		}
		it.Set(dynastore.AttrPK, dynastore.B(target.PK))
		it.Set(dynastore.AttrSK, dynastore.B(append(pendingPrefix(tx), target.SK...)))
		sz := dynastore.ItemSize(it)
		if len(batch) == dynastore.MaxTxActions || size+sz > maxTxBytes {
			batches, batch, size = append(batches, batch), nil, 0
		}
		batch = append(batch, dynastore.TxAction{Op: dynastore.TxPut, Item: it})
		size += sz
	}
	batches = append(batches, batch)
	if err := parallel(len(batches), func(i int) error { return cl.c.Data().Transact(cl.c, batches[i]) }); err != nil {
		return nil, nil, fmt.Errorf("writing pending members: %w", err)
	}
	cl.pending = dynastore.Item{
		{Name: AttrGen, Value: dynastore.B(cl.Gen)},
		{Name: AttrPending, Value: dynastore.B(tx)},
		{Name: attrPhase, Value: NInt(1)},
		{Name: attrChanges, Value: NInt(cl.changes + 1)},
	}
	return []dynastore.TxAction{{
		Op:  dynastore.TxUpdate,
		Key: key,
		Update: &dynastore.Update{Set: append([]dynastore.SetAction{
			{Attr: AttrCount, Val: NInt(n)},
			{Attr: AttrVer, Val: NewVer()},
			{Attr: AttrPending, Val: cl.pending.Get(AttrPending)},
			{Attr: attrPhase, Val: cl.pending.Get(attrPhase)},
			{Attr: attrChanges, Val: cl.pending.Get(attrChanges)},
		}, cl.keyAttrSets()...)},
		Cond: guard,
	}}, cl.Gen, nil
}

// dropUnpublished deletes, best effort, the pending items the plans of
// writes wrote for changes that will never be published (the commit was
// refused, or a plan failed), so a conflict on a big change leaves nothing
// behind. Items a crashed writer leaves stay until the generation is swept.
func dropUnpublished(c Scope, writes []*Collection) {
	for _, cl := range writes {
		cl.discardStaged()
		tx := cl.pendingTx
		if tx == nil {
			continue
		}
		cl.pending, cl.pendingTx = nil, nil
		st := c.Data()
		if txn, ok := st.(*Txn); ok {
			st = txn.Base()
		}
		q := dynastore.Query{PK: MembersPK(cl.Gen), Op: dynastore.SKBeginsWith, A: pendingPrefix(tx), Limit: dynastore.MaxTxActions}
		for {
			page, err := st.Query(c, q)
			if err != nil || len(page.Items) == 0 {
				break
			}
			dels := make([]dynastore.TxAction, len(page.Items))
			for i, it := range page.Items {
				dels[i] = dynastore.TxAction{Op: dynastore.TxDelete, Key: it.Key()}
			}
			if st.Transact(c, dels) != nil || page.Next == nil {
				break
			}
			q.After = page.Next
		}
	}
}

// pendingPrefix is the sort key prefix of change tx's pending items.
func pendingPrefix(tx []byte) []byte {
	return append([]byte{skPending}, tx...)
}

// rollForwardWidth is how many transactions of pending writes go out at
// once.
const rollForwardWidth = 4

// parallel runs f(0..n-1), rollForwardWidth at a time, and returns the
// first error once every call has returned (the callers' contexts do not
// outlive them).
func parallel(n int, f func(i int) error) error {
	errs := make(chan error, n)
	sem := make(chan struct{}, rollForwardWidth)
	for i := range n {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errs <- f(i)
		}()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// rollForward applies the pending writes of the change the key item it
// (the key item at key) marks as pending, then clears the mark.
//
// A reader that read the key item before the change was published may read
// members while it is applied, over many transactions; the items tell it,
// with no extra request unless it meets one. Every member or order item a
// change writes, or is about to delete, carries the change's count
// (attrRolling, from the key item's attrChanges): an item whose count is
// above the one of the key item the reader holds is newer than what it
// read, so it checks its key item again (ValidateRead). Two phases keep
// deletes visible that way until every write is in place:
//
//  1. every put is applied, carrying the count (and its pending item goes),
//     and every delete's target is marked with it;
//  2. the marked targets are deleted, with their pending items (a change
//     without deletes has no phase 2);
//
// and then the key item's mark goes. The key item holds the phase
// (attrPhase): every transaction of a phase also checks that the key item
// still marks the change at that phase, so any number of processes may roll
// it forward at once (the writes of a phase are idempotent), and a late
// one's writes fail once the change has moved on. It reads and writes the
// store itself, inside a transaction (EXEC) too: its writes change no
// content anyone can see, only how it is kept.
func rollForward(ctx context.Context, st dynastore.Store, key dynastore.Key, it dynastore.Item) error {
	if txn, ok := st.(*Txn); ok {
		st = txn.Base()
	}
	tx, _ := it.Get(AttrPending).(dynastore.B)
	tx = bytes.Clone(tx)
	gen, _ := it.Get(AttrGen).(dynastore.B)
	phase, _ := NumberInt(it.Get(attrPhase))
	count := it.Get(attrChanges)
	for ; phase <= 2; phase++ {
		at := dynastore.And{
			dynastore.Compare{Attr: AttrPending, Op: dynastore.OpEQ, Val: dynastore.B(tx)},
			dynastore.Compare{Attr: attrPhase, Op: dynastore.OpEQ, Val: NInt(phase)},
		}
		deletes, done, err := rollPhase(ctx, st, key, gen, tx, count, phase, at)
		if err != nil || done {
			return err
		}
		u := dynastore.Update{Set: []dynastore.SetAction{{Attr: attrPhase, Val: NInt(phase + 1)}}}
		if phase == 2 || !deletes {
			u = dynastore.Update{Remove: []string{AttrPending, attrPhase}}
			phase = 2
		}
		if _, err := st.Update(ctx, key, u, dynastore.WriteOptions{Cond: at}); err != nil && !errors.Is(err, dynastore.ErrConditionFailed) {
			return fmt.Errorf("rolling a change forward: %w", err)
		}
	}
	return nil
}

// rollPhase runs one phase of rollForward over every pending item of change
// tx (count is its attrChanges); deletes reports that it met pending
// deletes (which phase 1 leaves for phase 2), done that the key item no
// longer marks the change at that phase (another process moved it on,
// possibly to its end), so this one stops.
func rollPhase(ctx context.Context, st dynastore.Store, key dynastore.Key, gen, tx []byte, count dynastore.Value, phase int64, at dynastore.Cond) (deletes, done bool, err error) {
	check := dynastore.TxAction{Op: dynastore.TxCheck, Key: key, Cond: at}
	prefix := pendingPrefix(tx)
	q := dynastore.Query{PK: MembersPK(gen), Op: dynastore.SKBeginsWith, A: prefix, Limit: dynastore.MaxTxActions - 1}
	for {
		page, err := st.Query(ctx, q)
		if err != nil {
			return false, false, err
		}
		var batches [][]dynastore.TxAction
		var batch []dynastore.TxAction
		size := 0
		for _, p := range page.Items {
			sk, _ := p.Get(dynastore.AttrSK).(dynastore.B)
			target := dynastore.Key{PK: MembersPK(gen), SK: sk[len(prefix):]}
			op, _ := p.Get(attrPendingOp).(dynastore.S)
			var acts []dynastore.TxAction
			switch {
			case op == "p":
				t := p.Clone(1)
				t.Set(dynastore.AttrSK, dynastore.B(target.SK))
				t.Delete(attrPendingOp)
				t.Set(attrRolling, count)
				acts = append(acts, dynastore.TxAction{Op: dynastore.TxPut, Item: t}, dynastore.TxAction{Op: dynastore.TxDelete, Key: p.Key()})
			case phase == 1:
				deletes = true
				acts = append(acts, dynastore.TxAction{
					Op: dynastore.TxUpdate, Key: target, Cond: dynastore.Exists{Attr: dynastore.AttrPK},
					Update: &dynastore.Update{Set: []dynastore.SetAction{{Attr: attrRolling, Val: count}}},
				})
			default:
				acts = append(acts, dynastore.TxAction{Op: dynastore.TxDelete, Key: target}, dynastore.TxAction{Op: dynastore.TxDelete, Key: p.Key()})
			}
			sz := len(acts) * dynastore.ItemSize(p)
			if len(batch) > 0 && (size+sz > maxTxBytes || len(batch)+len(acts) > dynastore.MaxTxActions-1) {
				batches, batch, size = append(batches, append(batch, check)), nil, 0
			}
			batch = append(batch, acts...)
			size += sz
		}
		if len(batch) > 0 {
			batches = append(batches, append(batch, check))
		}
		err = parallel(len(batches), func(i int) error { return st.Transact(ctx, batches[i]) })
		if err != nil {
			if checkFailed(err) {
				return deletes, true, nil
			}
			return deletes, false, fmt.Errorf("rolling a change forward: %w", err)
		}
		if page.Next == nil {
			return deletes, false, nil
		}
		q.After = page.Next
	}
}
