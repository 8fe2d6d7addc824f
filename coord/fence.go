package coord

import (
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

// Fence is what LOCK.GUARD and LEADER.GUARD fence a unit of work's writes
// with: a lease that must be held with a token (a term) when the unit
// commits. Another grant changes the token, so a unit fenced by a lost
// lease never commits.
type Fence struct {
	k     dynastore.Key
	token int64
}

func newFence(ns byte, name []byte, token int64) (Fence, error) {
	k, err := leaseKey(ns, name)
	return Fence{k: k, token: token}, err
}

// Require makes t's commit conditional on the lease being held with the
// fence's token at clk, as it is before the commit (EXEC's guards, set
// before the unit began): a commit it refuses fails with model.ErrWatched.
func (f Fence) Require(t *model.Txn, clk Clock) {
	t.Require(f.k, guardCond(f.token, clk), true)
}

// Guard fences the unit of work c runs in (a script's, EXEC's) with f: it
// returns ErrNotOwner at once unless the lease is held with f's token at
// clk as the unit sees it (a LOCK.ACQUIRE earlier in the same unit
// included), and makes the unit's commit require it still. The commit
// depends on the requirement alone, not on the lease being unchanged (its
// holder extending it meanwhile is no conflict); a unit whose lease is
// lost before it commits runs again, and learns so here. It reports false,
// doing nothing, when c runs in no unit of work: the caller keeps f for
// the next EXEC.
func (s *Service) Guard(c model.Scope, f Fence, clk Clock) (bool, error) {
	t := model.UnitTxn(c)
	if t == nil {
		return false, nil
	}
	it, err := t.Peek(c, f.k)
	if err != nil {
		return true, err
	}
	l, err := decodeLease(it)
	if err != nil {
		return true, err
	}
	if !l.Held(clk) || l.Token != f.token {
		if f.k.PK[0] == model.NsLeader {
			s.Leaders.NotOwner.Add(1)
		} else {
			s.Locks.NotOwner.Add(1)
		}
		return true, ErrNotOwner
	}
	t.Require(f.k, guardCond(f.token, clk), false)
	return true, nil
}
