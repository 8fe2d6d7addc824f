package coord

import (
	"sync/atomic"
	"time"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

// DefaultTTL is a lock's and a leader's lease when the client names none.
const DefaultTTL = 30 * time.Second

// Locks are named leases with an owner and a fencing token: the token of
// every grant from a free or expired state is larger than every token
// given before for that name, so a resource that remembers the largest
// token it has seen can refuse a holder that lost the lock without
// knowing it (a pause longer than the lease).

// LockKey is the item of lock name.
func LockKey(name []byte) (dynastore.Key, error) { return leaseKey(model.NsLock, name) }

// Acquire takes lock name for owner for ttl, waiting up to wait for it
// (0: one try). It returns the lock as granted and true, or as held by
// another owner and false. An owner that holds the lock already keeps its
// token and has its lease reset.
func (s *Service) Acquire(c model.Scope, name, owner []byte, ttl, wait time.Duration, now func() Clock) (Lease, bool, error) {
	k, err := LockKey(name)
	if err != nil {
		return Lease{}, false, err
	}
	var r grantResult
	done, waited, err := s.poll(c, string(k.PK), wait, true, func() (bool, time.Time, error) {
		var err error
		r, err = grant(c, k, owner, ttl.Milliseconds(), now(), value{}, value{})
		return r.Granted, retryAt(r.Lease, now()), err
	})
	s.Locks.count(done, waited, r, err)
	return r.Lease, done, err
}

// retryAt is when a lease held by another may be taken over: a margin
// after it ends.
func retryAt(l Lease, clk Clock) time.Time {
	if l.Holder == nil {
		return time.Time{}
	}
	return time.Now().Add(time.Duration(l.ExpiryMS+clk.MarginMS+1-clk.NowMS) * time.Millisecond)
}

// count records the outcome of an acquisition or election.
func (st *Stats) count(done, waited bool, r grantResult, err error) {
	if waited {
		st.Waited.Add(1)
	}
	switch {
	case err != nil:
	case !done:
		st.Refused.Add(1)
	case r.Renewed:
		st.Renewed.Add(1)
	default:
		st.Granted.Add(1)
		if r.TookOver {
			st.Expired.Add(1)
		}
	}
}

// Release frees lock name if owner holds it (with token, unless 0). It
// reports false when nobody holds the lock (free, or expired: a lease
// that ended is not released again) and ErrNotOwner when another owner
// holds it, or owner with another token.
func (s *Service) Release(c model.Scope, name, owner []byte, token int64, clk Clock) (bool, error) {
	k, err := LockKey(name)
	if err != nil {
		return false, err
	}
	l, ok, err := release(c, k, owner, token, clk)
	ok, err = s.Locks.settled(l, ok, err, owner, token, clk, &s.Locks.Released)
	if ok {
		s.wake.notify(string(k.PK))
	}
	return ok, err
}

// Extend resets owner's lease of lock name to ttl from now. It reports
// false when nobody holds the lock any more (an ended lease never comes
// back, even if nobody took it since) and ErrNotOwner when another owner
// holds it, or owner with another token.
func (s *Service) Extend(c model.Scope, name, owner []byte, token int64, ttl time.Duration, clk Clock) (bool, error) {
	k, err := LockKey(name)
	if err != nil {
		return false, err
	}
	l, ok, err := renew(c, k, owner, token, ttl.Milliseconds(), clk, value{})
	return s.Locks.settled(l, ok, err, owner, token, clk, &s.Locks.Extended)
}

// settled counts and explains the outcome of a release or extension: done
// (counted in n), refused because the lease ended (false), or refused
// because someone else holds it (ErrNotOwner).
func (st *Stats) settled(l Lease, done bool, err error, holder []byte, token int64, clk Clock, n *atomic.Int64) (bool, error) {
	switch {
	case err != nil:
		return false, err
	case done:
		n.Add(1)
		return true, nil
	}
	if err := refusal(l, holder, token, clk); err != nil {
		if err == ErrNotOwner {
			st.NotOwner.Add(1)
		}
		return false, err
	}
	st.Lapsed.Add(1)
	return false, nil
}

// Check reads lock name: its lease and whether it is held at clk.
func (s *Service) Check(c model.Scope, name []byte, clk Clock) (Lease, bool, error) {
	k, err := LockKey(name)
	if err != nil {
		return Lease{}, false, err
	}
	l, err := readLease(c, k)
	return l, l.Held(clk), err
}

// LockFence is the fence of writes by token on lock name (LOCK.GUARD).
func LockFence(name []byte, token int64) (Fence, error) { return newFence(model.NsLock, name, token) }
