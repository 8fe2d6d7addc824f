package coord

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redamo/redamo/model"
	"github.com/redamo/redamo/wait"
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
	// throttles coalesces CL.THROTTLE calls on a hot key (throttle_batch.go).
	throttles model.Coalescer[throttleOp, gcraResult]
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

// poll runs try until it reports done, the wait ends (limit <= 0: try
// once) or ctx ends (the client went away): a wait.Registry wait on key,
// which a change through this process wakes at once. try returns the time
// at which trying again is worth it (zero: none known): a wait also
// retries at the moment the lease it waits for runs out. With turns, this
// process's waiters on one key take turns, in arrival order: only the
// first polls, and the others wait for their turn (a lock, a queue: one
// poll per key per interval, and what a release or a push frees goes to
// the longest waiter); without, every waiter polls (a watch, whose
// condition is its own). It reports whether try succeeded and whether it
// had to wait at all.
func (s *Service) poll(ctx context.Context, key string, limit time.Duration, turns bool, try func() (done bool, retryAt time.Time, err error)) (done, waited bool, err error) {
	return s.wake.r.Wait(ctx, wait.Waiter[struct{}]{Keys: []string{key}, Turns: turns}, limit, func(bool) (bool, time.Time, error) { return try() })
}

// wakeups are this process's coordination waiters. Each try is a waiter's
// poll, so the registry has no Prober and polls at its default pace.
type wakeups struct{ r wait.Registry[struct{}] }

// notify wakes the first waiter taking turns on key (what changed serves
// one) and every watcher of it. A change every watcher wants to see (a
// change of leadership) is notified on the watchers' own key.
func (w *wakeups) notify(key string) { w.r.Notify(key) }

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
