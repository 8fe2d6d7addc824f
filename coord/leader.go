package coord

import (
	"sync/atomic"
	"time"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/model"
)

// Elections are named leases whose holder is the leader and whose counter
// is the term: one more at every change of leadership (the same
// candidate winning again after a lapse or a resignation included), so a
// term names one reign.

// LeaderKey is the item of election name.
func LeaderKey(name []byte) (dynastore.Key, error) { return leaseKey(model.NsLeader, name) }

// Elect makes candidate the leader of election name for ttl if the seat is
// vacant (or lapsed), waiting up to wait for it. The sitting leader
// electing again keeps its term and has its lease reset. val (nil: none)
// is the leader's value: a new term starts with it (or none), a sitting
// leader's is replaced only when val is given. It returns the election
// as it is and whether candidate leads.
func (s *Service) Elect(c model.Scope, name, candidate, val []byte, ttl, wait time.Duration, now func() Clock) (Lease, bool, error) {
	k, err := LeaderKey(name)
	if err != nil {
		return Lease{}, false, err
	}
	onNew, onRenew := value{clear: true}, value{}
	if val != nil {
		onNew = value{set: true, v: val}
		onRenew = onNew
	}
	var r grantResult
	done, waited, err := s.poll(c, string(k.PK), wait, true, func() (bool, time.Time, error) {
		var err error
		r, err = grant(c, k, candidate, ttl.Milliseconds(), now(), onNew, onRenew)
		return r.Granted, retryAt(r.Lease, now()), err
	})
	s.Leaders.count(done, waited, r, err)
	if done && !r.Renewed {
		s.changed(k)
	}
	return r.Lease, done, err
}

// watchKey is what LEADER.WATCH's waiters on the election at k wait on:
// apart from its candidates, who take turns.
func watchKey(k dynastore.Key) string { return "w" + string(k.PK) }

// changed wakes this process's waiters on the election at k: every
// watcher, and the first candidate.
func (s *Service) changed(k dynastore.Key) {
	s.wake.notify(watchKey(k))
	s.wake.notify(string(k.PK))
}

// Heartbeat extends candidate's reign of election name to ttl from now; it
// reports false when candidate no longer leads (lapsed, resigned or
// replaced).
func (s *Service) Heartbeat(c model.Scope, name, candidate []byte, ttl time.Duration, clk Clock) (bool, error) {
	k, err := LeaderKey(name)
	if err != nil {
		return false, err
	}
	_, ok, err := renew(c, k, candidate, 0, ttl.Milliseconds(), clk, value{})
	return s.Leaders.ended(ok, err, &s.Leaders.Extended)
}

// Resign vacates election name if candidate leads it; it reports whether
// it did.
func (s *Service) Resign(c model.Scope, name, candidate []byte, clk Clock) (bool, error) {
	k, err := LeaderKey(name)
	if err != nil {
		return false, err
	}
	_, ok, err := release(c, k, candidate, 0, clk)
	ok, err = s.Leaders.ended(ok, err, &s.Leaders.Released)
	if ok {
		s.changed(k)
	}
	return ok, err
}

// ended counts the outcome of a heartbeat or resignation: done (counted
// in n) or not, since candidate does not lead (lapsed, resigned or
// replaced: no misuse, a candidate learns so this way).
func (st *Stats) ended(ok bool, err error, n *atomic.Int64) (bool, error) {
	switch {
	case err != nil:
		return false, err
	case ok:
		n.Add(1)
	default:
		st.Lapsed.Add(1)
	}
	return ok, nil
}

// Leadership reads election name: its lease and whether it is led at clk.
func (s *Service) Leadership(c model.Scope, name []byte, clk Clock) (Lease, bool, error) {
	k, err := LeaderKey(name)
	if err != nil {
		return Lease{}, false, err
	}
	l, err := readLease(c, k)
	return l, l.Held(clk), err
}

// Watch waits up to wait (0: without limit; negative: look once) for
// election name to be other than led with term: a new term, or vacant.
// Term 0 waits for any leader. It returns the election as it then is and whether it changed
// before the wait ended.
func (s *Service) Watch(c model.Scope, name []byte, term int64, wait time.Duration, now func() Clock) (Lease, bool, error) {
	k, err := LeaderKey(name)
	if err != nil {
		return Lease{}, false, err
	}
	if wait == 0 {
		wait = time.Duration(1<<63 - 1)
	}
	var l Lease
	done, _, err := s.poll(c, watchKey(k), wait, false, func() (bool, time.Time, error) {
		clk := now()
		var err error
		if l, err = readLease(c, k); err != nil {
			return false, time.Time{}, err
		}
		led := l.Held(clk)
		if term == 0 {
			return led, time.Time{}, nil
		}
		if !led || l.Token != term {
			return true, time.Time{}, nil
		}
		// Led with term: it changes at the latest when the lease ends.
		return false, retryAt(l, clk), nil
	})
	return l, done, err
}

// LeaderFence is the fence of writes by term on election name
// (LEADER.GUARD).
func LeaderFence(name []byte, term int64) (Fence, error) {
	return newFence(model.NsLeader, name, term)
}
