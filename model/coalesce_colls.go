package model

import (
	"bytes"
	"slices"
	"strconv"

	"github.com/redamo/redamo/dynastore"
)

// Coalescing of the collection writes on a hot key (see Coalescer). A
// batch is the commands of one key run one after another, in batch order,
// on one view of the collection, and committed as one write: each command
// is answered what it would have been answered running alone in that
// order, and is told its own share of the key's lifecycle (the "new" of a
// push onto an absent list, the "del" of the pop that emptied it). A batch
// of one is the command's own path, unchanged.
//
// The view is the item cache's when it holds the key live, as the lone
// commands' is (every commit is guarded by the key item's ver, so a stale
// entry costs a retry); a batch that would write nothing from a cached
// view reads the key again first, since no guarded write checks it.

// hotColls are the Coalescers of the collection commands: the pushes and
// pops of a list share one lane (a work queue's LPUSH and RPOP batch
// together), SADD/SREM and HSET/HDEL one lane per type.
type hotColls struct {
	lists   Coalescer[listOp, listRes]
	members Coalescer[memberOp, int64]
}

// collBatchMax caps a collection batch: its commit is one transaction
// while its member changes fit in one (larger ones still commit, in the
// engine's way for big changes).
const collBatchMax = MaxTxMembers

// laneKey names key of db (and the lane's type) in a Coalescer.
func laneKey(db int, typ string, key []byte) string {
	return typ + ":" + strconv.Itoa(db) + ":" + string(key)
}

// lifecycle is what one command of a batch did to its key's existence.
type lifecycle struct{ created, emptied bool }

// report tells s's reporter what the command did to key.
func (lc lifecycle) report(s Scope, key []byte) {
	r, ok := s.(KeyReporter)
	switch {
	case !ok:
	case lc.created:
		r.KeyCreated(key)
	case lc.emptied:
		r.KeyEmptied(key)
	}
}

// lifecycleOf is the lifecycle of a command that found n entries and
// left after.
func lifecycleOf(before, after int64) lifecycle {
	return lifecycle{created: before == 0 && after > 0, emptied: before > 0 && after == 0}
}

// ---- lists -------------------------------------------------------------------------

// KeyLocker is a Scope whose process serializes its own writers of a list
// key (the commands' key locks): a batch holds the lock while it runs, its
// waiting members do not (they would keep the batch from forming).
type KeyLocker interface {
	LockKeys(keys ...[]byte) func()
}

// listOp is one LPUSH/RPUSH(X) or LPOP/RPOP of a batch.
type listOp struct {
	s         Scope
	pop, left bool
	vals      [][]byte // a push's elements
	mustExist bool     // LPUSHX/RPUSHX
	count     int64    // a pop's count
	lc        lifecycle
}

// listRes is a list command's answer: a push's length, a pop's elements
// and whether it found the key.
type listRes struct {
	n      int64
	popped [][]byte
	exists bool
}

// doList runs op on key through the process's list lane, or on its own
// where nothing may be coalesced.
func doList(c Scope, key []byte, op listOp) (listRes, error) {
	alone := func() (listRes, error) {
		if op.pop {
			popped, exists, err := listPop(c, key, op.left, op.count)
			return listRes{popped: popped, exists: exists}, err
		}
		n, err := listPush(c, key, op.vals, op.left, op.mustExist)
		return listRes{n: n}, err
	}
	if !Coalescable(c) || !KeyFits(key) || slices.ContainsFunc(op.vals, isBigElem) {
		// A big element's push stages its chunks first, and retries
		// without staging them again: on its own.
		return alone()
	}
	op.s = c
	hc := &c.Process().hotColls
	return hc.lists.Do(c, laneKey(c.DB(), TypeList, key), op, func(ops []listOp) ([]listRes, []error) {
		if kl, ok := c.(KeyLocker); ok {
			defer kl.LockKeys(key)()
		}
		if len(ops) == 1 {
			r, err := alone()
			return []listRes{r}, []error{err}
		}
		return runListBatch(Detached(c), key, ops)
	})
}

// runListBatch runs the pushes and pops of ops on key in order on one view
// of the list and commits them as one write.
func runListBatch(c Scope, key []byte, ops []listOp) ([]listRes, []error) {
	res := make([]listRes, len(ops))
	err := RetryConflicts(c, func(try int) error {
		l, err := openListForWrite(c, key, try)
		if err != nil {
			return err
		}
		if err := l.Check(); err != nil {
			return err
		}
		for i := range ops {
			op := &ops[i]
			before := l.length()
			res[i] = listRes{}
			switch {
			case op.pop:
				res[i].exists = before > 0
				if before > 0 && op.count > 0 {
					if res[i].popped, err = l.pop(op.left, op.count); err != nil {
						return err
					}
				}
			case op.mustExist && before == 0:
			case op.left:
				l.pushLeft(cloneAll(op.vals))
				res[i].n = l.length()
			default:
				l.pushRight(cloneAll(op.vals))
				res[i].n = l.length()
			}
			op.lc = lifecycleOf(before, l.length())
		}
		if !l.changed {
			return l.settle(nil)
		}
		return commitLists(c, []*ListView{l}, nil)
	})
	return batchAnswers(key, ops, res, err, func(op listOp) (Scope, lifecycle) { return op.s, op.lc })
}

// cloneAll copies a push's elements: a later pop of the batch answers
// another client with them, which must not alias the pusher's request.
func cloneAll(vals [][]byte) [][]byte {
	out := make([][]byte, len(vals))
	for i, v := range vals {
		out[i] = bytes.Clone(v)
	}
	return out
}

// batchAnswers is a batch's answers: err for every command if the batch
// failed (a WRONGTYPE concerns them all; an unknown outcome is each one's),
// else each command's result, its lifecycle reported to its own scope.
func batchAnswers[Op, Res any](key []byte, ops []Op, res []Res, err error, lc func(Op) (Scope, lifecycle)) ([]Res, []error) {
	errs := make([]error, len(ops))
	for i, op := range ops {
		if err != nil {
			errs[i] = err
			continue
		}
		s, l := lc(op)
		l.report(s, key)
	}
	if err != nil {
		var zero Res
		for i := range res {
			res[i] = zero
		}
	}
	return res, errs
}

// ---- sets and hashes ---------------------------------------------------------------

// memberOp is one SADD/SREM or HSET/HDEL of a batch: members to add (with
// vals for a hash) or to remove.
type memberOp struct {
	s             Scope
	rem           bool
	members, vals [][]byte
	lc            lifecycle
}

// memberCoalesced reports whether a member write of typ on key may share
// requests with others.
func memberCoalesced(c Scope, key []byte, typ string) bool {
	return (typ == TypeSet || typ == TypeHash) && Coalescable(c) && KeyFits(key)
}

// doMembers runs op on key's collection of type typ through the process's
// lane for it; alone is the command's own path.
func doMembers(c Scope, key []byte, typ string, op memberOp, alone func() (int64, error)) (int64, error) {
	op.s = c
	hc := &c.Process().hotColls
	return hc.members.Do(c, laneKey(c.DB(), typ, key), op, func(ops []memberOp) ([]int64, []error) {
		if len(ops) == 1 {
			n, err := alone()
			return []int64{n}, []error{err}
		}
		return runMemberBatch(Detached(c), key, typ, ops)
	})
}

// runMemberBatch runs the adds and removes of ops on key in order, from
// one lookup of every member they name, and commits the outcome as one
// write.
func runMemberBatch(c Scope, key []byte, typ string, ops []memberOp) ([]int64, []error) {
	var members [][]byte
	seen := map[string]bool{}
	for _, op := range ops {
		for _, m := range op.members {
			if !seen[string(m)] {
				seen[string(m)] = true
				members = append(members, m)
			}
		}
	}
	res := make([]int64, len(ops))
	err := RetryConflicts(c, func(try int) error {
		var seed dynastore.Item
		cached := false
		if try == 0 {
			if e, ok := Items(c).Get(c.DB(), key); ok {
				if ks, err := DecodeKey(e.Item, c.NowMS()); err == nil && ks.Live && ks.Type == typ {
					seed, cached = e.Item, true
				}
			}
		}
		cl, err := OpenSeeded(c, key, typ, seed, cached)
		if err != nil {
			return err
		}
		_, present, err := cl.Lookup(members)
		if err != nil {
			return err
		}
		had := make(map[string]bool, len(members))
		in := make(map[string]bool, len(members))
		for i, m := range members {
			had[string(m)], in[string(m)] = present[i], present[i]
		}
		vals := map[string][]byte{}
		n := cl.Len()
		for i := range ops {
			op := &ops[i]
			before := n
			res[i] = 0
			for j, m := range op.members {
				switch {
				case op.rem && in[string(m)]:
					in[string(m)] = false
					res[i]++
					n--
				case !op.rem && !in[string(m)]:
					in[string(m)] = true
					res[i]++
					n++
				}
				if !op.rem && op.vals != nil {
					vals[string(m)] = op.vals[j]
				}
				if op.rem {
					delete(vals, string(m))
				}
			}
			op.lc = lifecycleOf(before, n)
		}
		changed := false
		for _, m := range members {
			v, set := vals[string(m)]
			switch {
			case in[string(m)] && set:
				cl.Put(m, HashValue(v))
				changed = true
			case in[string(m)] && !had[string(m)]:
				cl.Put(m, nil)
				changed = true
			case !in[string(m)] && had[string(m)]:
				cl.Del(m)
				changed = true
			}
		}
		if !changed && cached {
			// Nothing to write: the answers must rest on a fresh read.
			return ErrConflict
		}
		return cl.Commit()
	})
	return batchAnswers(key, ops, res, err, func(op memberOp) (Scope, lifecycle) { return op.s, op.lc })
}
