package model

import (
	"bytes"
	"errors"

	"github.com/redamo/redamo/dynastore"
)

// Reads is what one attempt read of several key items (SORT with its BY
// and GET patterns): the key items of the keys it looked at, as KeyStates
// at the scope's now, so that it can hold its result only if all of it was
// one state (Validate), or write a result that checks every read is still
// as read (StoreList).
type Reads struct {
	states map[string]KeyState
	// keys are the keys read, in the order read (the ones that fit).
	keys [][]byte
	// Multi: the reads were not one request of one key item, so they are
	// one state only if validated. Load sets it when it reads a second
	// time; the caller sets it for reads of its own beyond the key items
	// (a large collection's pages).
	Multi bool
}

// NewReads returns an empty Reads.
func NewReads() *Reads { return &Reads{states: map[string]KeyState{}} }

// Load reads the key items of keys not read yet, in one BatchGet (one
// GetItem for one key).
func (r *Reads) Load(s Scope, keys [][]byte) error {
	var want [][]byte
	var ks []dynastore.Key
	seen := map[string]bool{}
	for _, k := range keys {
		if _, ok := r.states[string(k)]; ok || seen[string(k)] {
			continue
		}
		seen[string(k)] = true
		if !KeyFits(k) {
			r.states[string(k)] = KeyState{} // it cannot exist
			continue
		}
		want = append(want, k)
		ks = append(ks, ItemKey(s.DB(), k))
	}
	if len(ks) == 0 {
		return nil
	}
	if len(r.keys) > 0 {
		r.Multi = true
	}
	items, err := dynastore.GetMany(s, s.Data(), ks)
	if err != nil {
		return err
	}
	for i, it := range items {
		st, err := decodeIn(s, it)
		if err != nil {
			return err
		}
		r.states[string(want[i])] = st
		r.keys = append(r.keys, want[i])
	}
	return nil
}

// State is what was read of key (not live when it was not read).
func (r *Reads) State(key []byte) KeyState { return r.states[string(key)] }

// Note replaces what was read of key (a collection open that rolled a
// change forward read its key item again).
func (r *Reads) Note(key []byte, st KeyState) {
	if _, ok := r.states[string(key)]; ok {
		r.states[string(key)] = st
	}
}

// Validate makes sure what was read is one state: it reads the key items
// again when the reads took more than one request or key, and returns
// ErrConflict if any changed.
func (r *Reads) Validate(s Scope) error {
	if !r.Multi && len(r.keys) <= 1 {
		return nil
	}
	ks := make([]dynastore.Key, len(r.keys))
	for i, k := range r.keys {
		ks[i] = ItemKey(s.DB(), k)
	}
	items, err := s.Data().BatchGet(s, ks)
	if err != nil {
		return err
	}
	for i, k := range r.keys {
		if !SameVer(r.states[string(k)].Raw, items[i]) || items[i].Has(AttrPending) {
			return ErrConflict
		}
	}
	return nil
}

// StoreList replaces dst (read by Load) with the list vals (deletes it
// when vals is empty) in one request or transaction that also checks that
// every other key read is still as read.
func (r *Reads) StoreList(s Scope, dst []byte, vals [][]byte) (err error) {
	// The result replaces the key whole: whatever it held, and no expiry
	// survives (setKey).
	cl, err := FromItem(s, dst, TypeList, r.states[string(dst)].Raw)
	if err != nil {
		return err
	}
	cl.Replace = true
	big := newBigElems(s)
	defer func() { big.settle(s, err) }()
	for i, v := range vals {
		m := PosMember(int64(i))
		sv, err := big.value(cl, m, v)
		if err != nil {
			return err
		}
		cl.Put(m, sv)
	}
	actions, err := cl.Plan()
	if err != nil {
		return err
	}
	if len(actions) == 0 {
		// Nothing to write (no result, no key to delete): the result
		// still rests on the reads agreeing.
		return r.Validate(s)
	}
	for _, k := range r.keys {
		if bytes.Equal(k, dst) {
			continue
		}
		actions = append(actions, dynastore.TxAction{Op: dynastore.TxCheck, Key: ItemKey(s.DB(), k), Cond: r.states[string(k)].Guard()})
	}
	if err := CommitActions(s, actions); err != nil {
		if errors.Is(err, ErrConflict) {
			Items(s).Drop(s.DB(), dst)
		}
		return err
	}
	cl.NoteCommitted()
	reportCommitted(s, cl)
	NoteGen(s, dst, TypeSet, nil) // whatever dst was, it is no large set, hash or sorted set now
	return nil
}
