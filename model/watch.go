package model

import "github.com/redamo/redamo/dynastore"

// Watched is a key as WATCH read it: a unit of work (Unit.Watched) commits
// only if its key item is still as read then and, if the key was live
// then, still live.
type Watched struct {
	DB  int
	Key []byte
	// item is the key item as read (a WATCH mark for a key with none).
	item dynastore.Item
	// live: the key existed unexpired at WATCH, so its expiry since
	// counts as a change.
	live bool
}

// Watch reads the key items of keys (of db) in one request, and returns
// them as watched. A key with no item gets one (WatchMarkItem), so that
// one set and deleted again before the commit is noticed too: one
// conditional PutItem each.
func Watch(c Scope, db int, keys [][]byte) ([]Watched, error) {
	out := make([]Watched, len(keys))
	var ks []dynastore.Key
	for i, k := range keys {
		out[i] = Watched{DB: db, Key: k}
		if KeyFits(k) {
			ks = append(ks, ItemKey(db, k))
		}
	}
	items, err := dynastore.GetMany(c, c.Data(), ks)
	if err != nil {
		return nil, err
	}
	for i := range out {
		w := &out[i]
		if !KeyFits(w.Key) {
			continue // a key that cannot exist never changes
		}
		w.item, items = items[0], items[1:]
		if w.item == nil {
			// No item to tell a key created and deleted again meanwhile
			// from one left alone: leave one.
			mark := WatchMarkItem(db, w.Key, c.NowMS())
			_, err := c.Data().Put(c, mark, dynastore.WriteOptions{Cond: dynastore.NotExists{Attr: dynastore.AttrPK}, OldOnFailure: true})
			cur, failed := CondFailed(err)
			switch {
			case failed:
				w.item = cur // written meanwhile: watch what is there now
			case err != nil:
				return nil, err
			default:
				w.item = mark
			}
		}
		st, err := DecodeKey(w.item, c.NowMS())
		if err != nil {
			return nil, err
		}
		w.live = st.Live
	}
	return out, nil
}

// still is what must hold on a watched key item at commit: the item as
// WATCH read it and, if it was live then, still live at nowMS. A key that
// had expired at WATCH may be deleted meanwhile (by DynamoDB's TTL): no
// logical change, as in Redis. A WATCH mark must be there still.
func (w Watched) still(nowMS int64) dynastore.Cond {
	ks := KeyState{Raw: w.item}
	switch {
	case w.live && w.item.Has(AttrStreamWatch):
		// A stream: what Redis counts as a change of it (stream.go) or
		// of its expiry, not its groups' changes.
		expiry := dynastore.Cond(dynastore.NotExists{Attr: AttrExpiry})
		if x := w.item.Get(AttrExpiry); x != nil {
			expiry = dynastore.Compare{Attr: AttrExpiry, Op: dynastore.OpEQ, Val: x}
		}
		return dynastore.And{dynastore.Compare{Attr: AttrStreamWatch, Op: dynastore.OpEQ, Val: w.item.Get(AttrStreamWatch)}, expiry, CondUnexpired(nowMS)}
	case w.live:
		return dynastore.And{ks.Guard(), CondUnexpired(nowMS)}
	case w.item != nil && !w.item.Has(AttrWatchMark):
		return dynastore.Or{ks.Guard(), dynastore.NotExists{Attr: dynastore.AttrPK}}
	}
	return ks.Guard()
}

// watch makes t's commit conditional on w at nowMS.
func (w Watched) watch(t *Txn, nowMS int64) {
	if KeyFits(w.Key) {
		t.Watch(ItemKey(w.DB, w.Key), w.item, w.still(nowMS))
	}
}
