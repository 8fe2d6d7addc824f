package coord

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Service is one process's share of coordination: its counters and the
// wakeups of its waiting clients. Nothing correctness depends on lives
// here (that is all in the store): a wakeup only shortens a wait that
// polling would end anyway.
type Service struct {
	Locks, Leaders Stats
	Queues         Queues
	wake           wakeups
	// tats are the TATs of CL.THROTTLE's keys this process saw last.
	tats tatCache
}

// Stats counts one family's outcomes in this process.
type Stats struct {
	// Granted counts grants with a new token (term); Renewed those that
	// found the holder already holding (ACQUIRE/ELECT again).
	Granted, Renewed atomic.Int64
	// Refused counts acquisitions and elections that ended without the
	// lease (after their wait); Waited those that had to wait at all.
	Refused, Waited atomic.Int64
	// Expired counts grants that took over a lease that had ended
	// without being released.
	Expired atomic.Int64
	// Released counts releases (resignations); Extended extensions
	// (heartbeats); Lapsed the extensions and releases that found the
	// lease already ended or released.
	Released, Extended, Lapsed atomic.Int64
	// NotOwner counts misuse: a release, extension or guard by someone
	// who does not hold the lease.
	NotOwner atomic.Int64
}

// Blocking waits poll with a backoff that starts at minPoll and doubles up
// to maxPoll, jittered; a wait also retries at the moment the lease it
// waits for runs out, and at once when this process sees it change.
const (
	minPoll = 10 * time.Millisecond
	maxPoll = 500 * time.Millisecond
)

// Parker is implemented by a context whose owner wants to know when a
// blocking call is about to wait (commands.Ctx: its connection then sends
// the replies it holds and watches the client while it waits). A call
// that succeeds at once, or does not wait, never parks.
type Parker interface{ Park() }

// park tells ctx, if it is a Parker, that a wait begins.
func park(ctx context.Context) {
	if p, ok := ctx.(Parker); ok {
		p.Park()
	}
}

// poll runs try until it reports done, the wait ends (wait <= 0: try
// once) or ctx ends (the client went away). try returns the time at
// which trying again is worth it (zero: none known). key names what
// wakes the waiter. With turns, this process's waiters on one key take
// turns, in arrival order: only the first polls, and the others wait for
// their turn (a lock, a queue: one poll per key per interval, and what a
// release or a push frees goes to the longest waiter); without, every
// waiter polls (a watch, whose condition is its own). It reports whether
// try succeeded and whether it had to wait at all.
func (s *Service) poll(ctx context.Context, key string, wait time.Duration, turns bool, try func() (done bool, retryAt time.Time, err error)) (done, waited bool, err error) {
	done, retryAt, err := try()
	if err != nil || done || wait <= 0 {
		return done, false, err
	}
	deadline := time.Now().Add(wait)
	// Parked before it joins: sending the client's replies may wait for
	// the client, and must not hold up the turns meanwhile.
	park(ctx)
	x := s.wake.join(key)
	defer s.wake.leave(key, x)
	backoff := minPoll
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false, true, nil
		}
		pause := left
		if !turns || s.wake.first(key, x) {
			pause = min(backoff/2+rand.N(backoff/2+1), left)
			if !retryAt.IsZero() {
				pause = max(min(pause, time.Until(retryAt)), time.Millisecond)
			}
			backoff = min(2*backoff, maxPoll)
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-x.ch:
			t.Stop()
		case <-ctx.Done():
			t.Stop()
			return false, true, ctx.Err()
		}
		if done, retryAt, err = try(); err != nil || done {
			return done, true, err
		}
	}
}

// wakeups are this process's waiters, per key in arrival order, so that
// a change made through this process wakes them at once.
type wakeups struct {
	mu sync.Mutex
	m  map[string][]*waiter
}

// waiter is one blocked client; ch (capacity 1) is signalled when it
// should try again.
type waiter struct{ ch chan struct{} }

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (w *wakeups) join(key string) *waiter {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string][]*waiter{}
	}
	x := &waiter{ch: make(chan struct{}, 1)}
	w.m[key] = append(w.m[key], x)
	return x
}

// leave removes x; a first waiter that leaves hands the turn on, and the
// next one tries at once (x may have been woken for something it did not
// take).
func (w *wakeups) leave(key string, x *waiter) {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.m[key]
	for i, y := range q {
		if y != x {
			continue
		}
		q = append(q[:i], q[i+1:]...)
		if i == 0 && len(q) > 0 {
			signal(q[0].ch)
		}
		break
	}
	if len(q) == 0 {
		delete(w.m, key)
	} else {
		w.m[key] = q
	}
}

// first reports whether x is the longest waiter on key.
func (w *wakeups) first(key string, x *waiter) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.m[key]
	return len(q) > 0 && q[0] == x
}

// notify wakes the first waiter on key: what changed serves one.
func (w *wakeups) notify(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if q := w.m[key]; len(q) > 0 {
		signal(q[0].ch)
	}
}

// notifyAll wakes every waiter on key (a change of leadership, which
// every watcher wants to see).
func (w *wakeups) notifyAll(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, x := range w.m[key] {
		signal(x.ch)
	}
}

// Each calls f with every counter: family "lock" or "leader" and the
// outcome (granted, renewed, refused, waited, expired, released,
// extended, lapsed, notowner), then family "queue" and the operation
// (pushed, delivered, redelivered, acked, nacked, deadlettered,
// deduplicated; all queues of this process).
func (s *Service) Each(f func(family, outcome string, n int64)) {
	for _, fam := range []struct {
		name string
		st   *Stats
	}{{"lock", &s.Locks}, {"leader", &s.Leaders}} {
		st := fam.st
		for _, c := range []struct {
			outcome string
			n       *atomic.Int64
		}{
			{"granted", &st.Granted}, {"renewed", &st.Renewed}, {"refused", &st.Refused},
			{"waited", &st.Waited}, {"expired", &st.Expired}, {"released", &st.Released},
			{"extended", &st.Extended}, {"lapsed", &st.Lapsed}, {"notowner", &st.NotOwner},
		} {
			f(fam.name, c.outcome, c.n.Load())
		}
	}
	totals := map[string]int64{}
	s.Queues.EachQueue(func(_ string, st *QueueStats) {
		st.Each(func(op string, n int64) { totals[op] += n })
	})
	(&QueueStats{}).Each(func(op string, _ int64) { f("queue", op, totals[op]) })
}
