package model

// The unit-of-work runner: how EXEC, a script and a coordination recipe
// run several reads and writes as one, with one retry policy (Retry), one
// commit (Txn.Commit) and one reading of a refused commit (Refused).

import (
	"bytes"
	"context"

	"github.com/redamo/redamo/dynastore"
)

// MaxUnitKeys is the most keys a Unit reads ahead (one BatchGetItem).
const MaxUnitKeys = dynastore.MaxBatchGet

// Unit is one unit of work: commands that run in a Txn and commit at once,
// all of their writes or none, conditioned on everything they read being
// unchanged. A commit that loses a race to another writer runs the unit
// again, from the start, as long as the retry policy allows (Retry): as
// Redis's single thread would have run it after that writer.
type Unit struct {
	// DB and Keys are the database and the Redis keys the unit is about
	// to read: the first read of the Txn reads all their key items in
	// one request (Txn.Hint). Keys that cannot exist are left out, and
	// keys past MaxUnitKeys.
	DB   int
	Keys [][]byte
	// ReadOnly says the unit only reads: Keys' items are read at once,
	// as one snapshot where the store reads snapshots (Txn.LoadSnapshot),
	// and an attempt that found one of them changed reads it last on the
	// next (Txn.LoadAround).
	ReadOnly bool
	// Watched are the keys the commit is conditioned on as WATCH saw
	// them: a change to one of them refuses the commit with ErrWatched.
	Watched []Watched
	// Begin, when set, prepares each attempt's Txn before it reads
	// anything (a lease a guard requires); its error ends the unit.
	Begin func(t *Txn) error
	// Work runs the unit's commands against t. An error that Retryable
	// accepts runs the unit again; any other ends it, uncommitted.
	Work func(t *Txn) error
	// Lost, when set, is called when an attempt lost a race, before the
	// next one: it forgets what the attempt left outside its Txn.
	Lost func()
}

// Run runs u in c until an attempt commits, and returns the committed
// Txn. Otherwise it returns ErrWatched (a watched key changed: nothing is
// written), Begin's or Work's error, the store's, or the retry policy's
// when the unit kept losing races (ErrGaveUp, or c's end).
func (u Unit) Run(c Scope) (*Txn, error) {
	keys := u.itemKeys()
	// hot is the one item a read-only attempt found changed.
	var hot *dynastore.Key
	var done *Txn
	err := RetryConflicts(c, func(int) error {
		t := NewTxn(c.Data(), CoveredByKeyItem)
		for _, w := range u.Watched {
			w.watch(t, c.NowMS())
		}
		if u.Begin != nil {
			if err := u.Begin(t); err != nil {
				return err
			}
		}
		err := u.attempt(c, t, keys, hot)
		if err == nil {
			done = t
			return nil
		}
		if !Retryable(err) {
			return err
		}
		if changed := t.Changed(); u.ReadOnly && len(changed) == 1 {
			hot = &changed[0]
		}
		if u.Lost != nil {
			u.Lost()
		}
		return ErrConflict
	})
	return done, err
}

// attempt is one run of u's work in t, and its commit.
func (u Unit) attempt(c Scope, t *Txn, keys []dynastore.Key, hot *dynastore.Key) error {
	switch {
	case u.ReadOnly && hot != nil:
		if err := t.LoadAround(c, keys, *hot); err != nil {
			return err
		}
	case u.ReadOnly:
		if err := t.LoadSnapshot(c, keys); err != nil {
			return err
		}
	default:
		t.Hint(keys)
	}
	if err := u.Work(t); err != nil {
		return err
	}
	if err := t.Err(); err != nil {
		return err
	}
	return t.Commit(c)
}

// itemKeys are the key items of u's keys, distinct, at most MaxUnitKeys.
func (u Unit) itemKeys() []dynastore.Key {
	var out []dynastore.Key
	seen := map[string]bool{}
	for _, k := range u.Keys {
		if !KeyFits(k) || seen[string(k)] {
			continue
		}
		if len(out) == MaxUnitKeys {
			break
		}
		seen[string(k)] = true
		out = append(out, ItemKey(u.DB, k))
	}
	return out
}

// CoveredByKeyItem reports the items a Txn need not check when it only
// read them: a large collection's members, reached only through their
// key item, whose version every change of a member changes too.
func CoveredByKeyItem(k dynastore.Key) bool {
	return len(k.PK) > 0 && k.PK[0] == NsMembers
}

// WrittenKeys calls f with the database and Redis key of every key item
// the Txn writes, in the order it first touched them.
func (t *Txn) WrittenKeys(f func(db int, key []byte)) {
	for _, k := range t.Wrote() {
		if db, key, ok := RedisKeyOf(k.PK); ok && bytes.Equal(k.SK, KeyItemSK) {
			f(db, key)
		}
	}
}

// Refused reads why a write was refused, the one place that reads
// DynamoDB's cancellation reasons for what they mean to a unit of work.
// A failed condition of a single write, or a transaction canceled by a
// failed condition or a conflict with another transaction, is a lost race:
// ErrWatched when the condition was a watched one (watched(i) for action
// i; a single write is action 0), ErrConflict otherwise. Anything else is
// returned as it is: throttling (never a lost race: the store's retries
// have waited for it already), and a write whose outcome is unknown
// (running the unit again could apply it twice). nil stays nil.
func Refused(err error, watched func(i int) bool) error {
	if err == nil {
		return nil
	}
	if r, failed := ConditionsFailed(err); failed {
		for i := range r.Actions() {
			if _, f := r.Failed(i); f && watched != nil && watched(i) {
				return ErrWatched
			}
		}
		return ErrConflict
	}
	if Retryable(err) {
		return ErrConflict
	}
	return err
}

// WriteActions is the one commit of a unit of work's actions, in c:
// nothing for none, one single-item write when there is only one (a
// transaction would bill its units twice), else one transaction. Its
// error is the store's: Refused or ConditionsFailed reads it.
func WriteActions(c Scope, actions []dynastore.TxAction) error {
	return writeActions(c, c.Data(), actions)
}

func writeActions(ctx context.Context, st dynastore.Store, actions []dynastore.TxAction) error {
	switch len(actions) {
	case 0:
		return nil
	case 1:
	default:
		return st.Transact(ctx, actions)
	}
	a := actions[0]
	o := dynastore.WriteOptions{Cond: a.Cond, OldOnFailure: a.OldOnFailure}
	var err error
	switch a.Op {
	case dynastore.TxPut:
		_, err = st.Put(ctx, a.Item, o)
	case dynastore.TxUpdate:
		_, err = st.Update(ctx, a.Key, *a.Update, o)
	case dynastore.TxDelete:
		_, err = st.Delete(ctx, a.Key, o)
	default:
		err = st.Transact(ctx, actions)
	}
	return err
}

// Refusal is a write refused because conditions did not hold: a single
// write's, or a transaction's none of whose actions conflicted with
// another transaction (which makes it a lost race to run again instead).
type Refusal struct {
	// reasons are the transaction's, one per action; nil for a single
	// write, whose old is the item it found.
	reasons []dynastore.TxReason
	old     dynastore.Item
}

// ConditionsFailed returns the refusal err is; ok is false for anything
// else (nil, a conflict, throttling, an unknown outcome: none of them says
// that a condition was false).
func ConditionsFailed(err error) (r Refusal, ok bool) {
	if tc, ok := dynastore.ConditionFailedIn(err); ok {
		return Refusal{reasons: tc.Reasons}, true
	}
	old, ok := CondFailed(err)
	return Refusal{old: old}, ok
}

// Actions is how many actions the refused write had: 1 for a single write.
func (r Refusal) Actions() int {
	if r.reasons == nil {
		return 1
	}
	return len(r.reasons)
}

// Failed reports whether action i's condition failed, with the item it
// found when the action asked for it (OldOnFailure).
func (r Refusal) Failed(i int) (dynastore.Item, bool) {
	if r.reasons == nil {
		return r.old, i == 0
	}
	if i < 0 || i >= len(r.reasons) || r.reasons[i].Code != dynastore.ReasonConditionalFailed {
		return nil, false
	}
	return r.reasons[i].Old, true
}

// Only reports whether nothing but conditions refused the write: every
// other action of the transaction was fine (reason None), none refused for
// another reason (a validation error, an item collection too large).
func (r Refusal) Only() bool {
	for _, x := range r.reasons {
		switch x.Code {
		case dynastore.ReasonConditionalFailed, dynastore.ReasonNone, "":
		default:
			return false
		}
	}
	return true
}

// UnitTxn returns the Txn of the unit of work c runs in (EXEC's, a
// script's), nil when c runs in none.
func UnitTxn(c Scope) *Txn {
	t, _ := c.Data().(*Txn)
	return t
}
