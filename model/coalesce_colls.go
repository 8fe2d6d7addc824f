package model

import (
	"bytes"
	"slices"
	"strconv"
)

// Coalescing of the collection writes on a hot key (see Coalescer). A
// batch is the commands of one key run one after another, in batch order,
// on one view of the collection, and committed as one write: each command
// is answered what it would have been answered running alone in that
// order, and is told its own share of the key's lifecycle (the "new" of a
// push onto an absent list, the "del" of the pop that emptied it). A batch
// of one is the command's own path, unchanged.
//
// The view is the item cache's when it holds the key, as the lone
// commands' is (every commit is guarded by the key item's ver, or by the
// members it writes, so a stale entry costs a retry); a batch that would
// write nothing from a cached view reads the key again first, since no
// guarded write checks it.

// hotColls are the Coalescers of the collection commands: the pushes and
// pops of a list share one lane (a work queue's LPUSH and RPOP batch
// together), SADD/SREM and HSET/HDEL one lane per type, and ZADD, ZINCRBY
// and ZREM another (coalesce_zset.go).
type hotColls struct {
	lists   Coalescer[listOp, listRes]
	members Coalescer[memberOp, int64]
	zsets   Coalescer[zsetOp, zsetRes]
}

// collBatchMax caps a collection batch: its commit is one transaction
// while its member changes fit in one (larger ones still commit, in the
// engine's way for big changes).
const collBatchMax = MaxTxMembers

// laneKey names key of db (and the lane's type) in a Coalescer.
func laneKey(db int, typ string, key []byte) string {
	return typ + ":" + strconv.Itoa(db) + ":" + string(key)
}

// doColl runs op on key's collection of type typ through the process's
// lane co, or on its own (alone) where nothing may be coalesced. A batch
// of more than one runs through batch, detached from the client of the
// command that sends it. locked: the run holds key's lock (KeyLocker)
// while it runs, as the type's other writers do.
func doColl[Op, Res any](c Scope, co *Coalescer[Op, Res], typ string, key []byte, op Op, locked bool,
	alone func() (Res, error), batch func(c Scope, ops []Op) ([]Res, []error)) (Res, error) {
	if !Coalescable(c) || !KeyFits(key) {
		return alone()
	}
	return co.Do(c, laneKey(c.DB(), typ, key), op, func(ops []Op) ([]Res, []error) {
		if kl, ok := c.(KeyLocker); ok && locked {
			defer kl.LockKeys(key)()
		}
		if len(ops) == 1 {
			r, err := alone()
			return []Res{r}, []error{err}
		}
		return batch(Detached(c), ops)
	})
}

// inBatch is a command of a batch: its own scope, which is told what the
// command did to its key's existence.
type inBatch interface{ scope() Scope }

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
// or sorted set key (the commands' key locks): a batch holds the lock while
// it runs, its waiting members do not (they would keep the batch from
// forming).
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
}

func (op listOp) scope() Scope { return op.s }

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
	if slices.ContainsFunc(op.vals, isBigElem) {
		// A big element's push stages its chunks first, and retries
		// without staging them again: on its own.
		return alone()
	}
	op.s = c
	return doColl(c, &c.Process().hotColls.lists, TypeList, key, op, true, alone, func(c Scope, ops []listOp) ([]listRes, []error) {
		return runListBatch(c, key, ops)
	})
}

// runListBatch runs the pushes and pops of ops on key in order on one view
// of the list and commits them as one write.
func runListBatch(c Scope, key []byte, ops []listOp) ([]listRes, []error) {
	res := make([]listRes, len(ops))
	lcs := make([]lifecycle, len(ops))
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
			lcs[i] = lifecycleOf(before, l.length())
		}
		if !l.changed {
			return l.settle(nil)
		}
		return commitLists(c, []*ListView{l}, nil)
	})
	return batchAnswers(key, ops, res, nil, lcs, err)
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
// else each command's result, or its own error (own, when not nil), its
// lifecycle (lcs) reported to its own scope.
func batchAnswers[Op inBatch, Res any](key []byte, ops []Op, res []Res, own []error, lcs []lifecycle, err error) ([]Res, []error) {
	errs := make([]error, len(ops))
	for i, op := range ops {
		switch {
		case err != nil:
			errs[i] = err
		case own != nil && own[i] != nil:
			errs[i] = own[i]
		default:
			lcs[i].report(op.scope(), key)
		}
	}
	if err != nil {
		var zero Res
		for i := range res {
			res[i] = zero
		}
	}
	return res, errs
}

// collRun is a collection as the commands of a batch, or one command,
// leave it one after another: its entry count, and whether Redis would
// hold it in its big encoding (AttrBigEncoding). A command that empties it
// deletes the key, so that what follows makes a new one.
type collRun struct {
	*Collection
	n       int64
	big     bool
	emptied bool
}

// startRun is the run of commands on cl as read.
func startRun(cl *Collection) *collRun {
	r := &collRun{Collection: cl, big: cl.KeyAttr(AttrBigEncoding) != nil}
	if cl.Exists() {
		r.n = cl.Len()
	}
	return r
}

// step ends a command that found before entries and returns its
// lifecycle.
func (r *collRun) step(before int64) lifecycle {
	if before > 0 && r.n == 0 {
		r.emptied, r.big = true, false
	}
	return lifecycleOf(before, r.n)
}

// finish stages what the commands did besides their entries: a key they
// emptied and filled again is a new key (no expiry, no attribute of the
// old one; every entry it holds is a staged put), and one they made big
// is marked so.
func (r *collRun) finish() {
	if r.emptied && r.n > 0 {
		r.Replace = true
	}
	if r.big && r.KeyAttr(AttrBigEncoding) == nil {
		r.SetKeyAttr(AttrBigEncoding, NInt(1))
	}
}

// named is a inBatch command with the members it names.
type named interface {
	inBatch
	names() [][]byte
}

// runCollBatch runs the commands ops on key's collection of type typ in
// order, on one view of it, and commits them as one write (collWrite).
// Every member they name is fetched first, so apply, which runs one
// command on the view, makes no request: an error it returns is that
// command's own answer (a ZINCRBY's NaN), which left the view as it was.
func runCollBatch[Op named, Res any](c Scope, key []byte, typ string, ops []Op, apply func(r *collRun, op Op) (Res, error)) ([]Res, []error) {
	var members [][]byte
	seen := map[string]bool{}
	for _, op := range ops {
		for _, m := range op.names() {
			if !seen[string(m)] {
				seen[string(m)] = true
				members = append(members, m)
			}
		}
	}
	res := make([]Res, len(ops))
	own := make([]error, len(ops))
	lcs := make([]lifecycle, len(ops))
	err := collWrite(c, key, typ, MemberStart{}, func(cl *Collection) error {
		if err := cl.Fetch(members); err != nil {
			return err
		}
		r := startRun(cl)
		for i, op := range ops {
			before := r.n
			res[i], own[i] = apply(r, op)
			lcs[i] = r.step(before)
		}
		r.finish()
		return nil
	})
	return batchAnswers(key, ops, res, own, lcs, err)
}

// removeFrom removes members from r and returns how many were there.
func removeFrom(r *collRun, members [][]byte) (removed int64) {
	for _, m := range members {
		if _, ok := r.current(m); ok {
			r.Del(m)
			r.n--
			removed++
		}
	}
	return removed
}

// ---- sets and hashes ---------------------------------------------------------------

// memberOp is one SADD/SREM or HSET/HDEL of a batch: members to add (with
// vals for a hash) or to remove.
type memberOp struct {
	s             Scope
	rem           bool
	members, vals [][]byte
}

func (op memberOp) scope() Scope    { return op.s }
func (op memberOp) names() [][]byte { return op.members }

// memberCoalesced reports whether a member write of typ on key may share
// requests with others.
func memberCoalesced(c Scope, key []byte, typ string) bool {
	return (typ == TypeSet || typ == TypeHash) && Coalescable(c) && KeyFits(key)
}

// doMembers runs op on key's collection of type typ through the process's
// lane for it; alone is the command's own path.
func doMembers(c Scope, key []byte, typ string, op memberOp, alone func() (int64, error)) (int64, error) {
	op.s = c
	return doColl(c, &c.Process().hotColls.members, typ, key, op, false, alone, func(c Scope, ops []memberOp) ([]int64, []error) {
		return runCollBatch(c, key, typ, ops, func(r *collRun, op memberOp) (int64, error) {
			if op.rem {
				return removeFrom(r, op.members), nil
			}
			return addTo(r, op.members, op.vals), nil
		})
	})
}

// addTo puts members into r, with vals for a hash (nil for a set, whose
// present members are left alone), and returns how many were new.
func addTo(r *collRun, members, vals [][]byte) (added int64) {
	for j, m := range members {
		_, present := r.current(m)
		switch {
		case vals != nil:
			r.Put(m, HashValue(vals[j]))
		case !present:
			r.Put(m, nil)
		}
		if !present {
			r.n++
			added++
		}
	}
	return added
}
